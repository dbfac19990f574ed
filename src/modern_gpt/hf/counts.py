"""The figures that follow from an `Arch`: parameters by part, active parameters, the weights' bytes, the KV cache.

Everything is computed from the shapes (the weights are never read), the way each family's transformers code
builds its modules: biases where the family puts them, the shared and routed experts and the router of a
mixture-of-experts layer, the low-rank projections of latent attention, one sink per head in gpt-oss.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..serving.kv_cache import DTYPE_BYTES, KVCacheSize, kv_cache
from .arch import Arch


def _attention(a: Arch) -> tuple[int, int]:
    """(parameters of one layer's attention, of its norms inside attention: QK-norm, the latent norms)."""
    if a.mla is not None:
        m, qk = a.mla, a.mla.nope + a.mla.rope
        q = a.n_embd * a.n_head * qk if m.q_rank is None else a.n_embd * m.q_rank + m.q_rank * a.n_head * qk
        kv = a.n_embd * (m.kv_rank + m.rope) + m.kv_rank * a.n_head * (m.nope + m.v)
        weights = q + kv + a.n_head * m.v * a.n_embd
        if a.biases in ("attn", "attn_mlp"):                  # q_a, kv_a and o projections (q_b, kv_b never)
            weights += (m.q_rank or 0) + m.kv_rank + m.rope + a.n_embd
        return weights, (m.q_rank or 0) + m.kv_rank
    q, kv = a.n_head * a.head_dim, a.n_kv_head * a.head_dim
    attn = a.n_embd * q + 2 * a.n_embd * kv + q * a.n_embd
    if a.biases in ("all", "attn", "attn_mlp"):
        attn += q + 2 * kv + a.n_embd
    elif a.biases == "qkv":
        attn += q + 2 * kv
    if a.sinks:
        attn += a.n_head
    qk_norm = {"none": 0, "l2": 0, "per_head": 2 * a.head_dim, "across_heads": q + kv}[a.qk_norm_kind]
    return attn, qk_norm


def _mlp(a: Arch, width: int, bias: bool) -> int:
    """One MLP of this hidden width: gated (3 matrices) or plain (2), with biases when `bias`."""
    weights = (3 if a.gated else 2) * a.n_embd * width
    return weights + ((2 if a.gated else 1) * width + a.n_embd if bias else 0)


def param_counts(a: Arch) -> dict[str, int]:
    """Parameters by part: embedding, attention, mlp (dense layers), experts (routed), shared_experts, router,
    norms, lm_head, and their total."""
    attn, attn_norms = _attention(a)
    mlp_bias = a.biases in ("all", "mlp", "attn_mlp")
    one_norm = a.n_embd * (2 if a.norm == "layernorm" else 1)
    out = {"embedding": a.vocab_size * a.n_embd + (a.max_positions * a.n_embd if a.pos == "learned" else 0),
           "attention": a.n_layer * attn, "mlp": 0, "experts": 0, "shared_experts": 0, "router": 0,
           "norms": a.n_layer * ((4 if a.post_norms else 2) * one_norm + attn_norms) + one_norm,
           "lm_head": 0 if a.tied else a.vocab_size * a.n_embd}
    m = a.moe
    for is_moe in (m.layers if m else [False] * a.n_layer):
        if not is_moe:
            width = m.dense_width if m else a.hidden
            out["mlp"] += _mlp(a, width, mlp_bias)
            continue
        out["experts"] += m.experts * _mlp(a, m.width, m.expert_bias)
        out["shared_experts"] += _mlp(a, m.shared_width, False) if m.shared_width else 0
        out["router"] += m.experts * a.n_embd + (m.experts if m.router_bias else 0)
    out["total"] = sum(out.values())
    return out


def active_params(a: Arch, counts: dict[str, int]) -> int:
    """Parameters one token runs through: the total less the routed experts the router leaves idle."""
    if a.moe is None:
        return counts["total"]
    return counts["total"] - counts["experts"] * (a.moe.experts - a.moe.top_k) // a.moe.experts


@dataclass(frozen=True)
class WeightBytes:
    nbytes: int | None            # None: left out (`how` says why)
    how: str


def weight_bytes(a: Arch, counts: dict[str, int], dtype: str) -> WeightBytes:
    """The weights' bytes: every parameter at `dtype`, or as quantization_config stores them."""
    if a.quant is None:
        return WeightBytes(counts["total"] * DTYPE_BYTES[dtype], f"every parameter at {dtype}")
    method = a.quant.get("quant_method")
    if method == "mxfp4" and a.moe is not None:
        keep = a.quant.get("modules_to_not_convert") or []
        if any("expert" in str(k) for k in keep):
            return WeightBytes(None, f"mxfp4 with modules_to_not_convert {keep} naming experts: not sized here")
        routed = counts["experts"] - (sum(a.moe.layers) * a.moe.experts * (2 * a.moe.width + a.n_embd)
                                      if a.moe.expert_bias else 0)          # the matrices, not their biases
        rest = counts["total"] - routed
        # MXFP4: 32 four-bit numbers share one 8-bit power-of-two scale: (32 x 4 + 8) / 32 = 4.25 bits each
        return WeightBytes(routed * 17 // 32 + rest * DTYPE_BYTES[dtype],
                           f"the routed experts' {routed:,} matrix weights in MXFP4 (4.25 bits each), the other "
                           f"{rest:,} parameters at {dtype}")
    if method == "fp8":
        return WeightBytes(None, "fp8 weights with a scale per block, but the file does not say which matrices "
                                 "stay at higher precision, so their bytes are not computed")
    return WeightBytes(None, f"quant_method {method!r} is not one this tool can size")


def kv_numbers(a: Arch) -> tuple[int, int]:
    """Numbers each layer caches per token: (as the model is built, with plain multi-head attention)."""
    if a.mla is not None:
        m = a.mla
        return m.kv_rank + m.rope, a.n_head * (m.nope + m.rope + m.v)
    return 2 * a.n_kv_head * a.head_dim, 2 * a.n_head * a.head_dim


def kv_caches(a: Arch, dtype: str, context: int, batch: int) -> tuple[KVCacheSize, KVCacheSize]:
    """(the cache as the model is built, the cache the same heads would need as plain multi-head attention)."""
    if a.mla is None:
        return (kv_cache(a.n_layer, a.n_kv_head, a.head_dim, dtype, context, batch, a.windows),
                kv_cache(a.n_layer, a.n_head, a.head_dim, dtype, context, batch, a.windows))
    caches = []
    for numbers in kv_numbers(a):                           # latent attention keeps every token: no windows
        per_token = a.n_layer * numbers * DTYPE_BYTES[dtype]
        caches.append(KVCacheSize(per_token, per_token * context, per_token * context * batch, context, batch))
    return caches[0], caches[1]
