"""`model_section(config)`: a params.yaml `model:` section with a real model's architecture at a toy size.

The flags (norm, pos, mlp, bias, qk_norm, norm_placement, the query:K/V head ratio, tie_embeddings from
tie_word_embeddings, logit_softcap from final_logit_softcapping, attn_window and global_every from sliding_window
and layer_types where the toy's block_size and n_layer hold them) come from the config; the size defaults to
the shape of this checkout's params.yaml `model:` (n_layer, n_embd, n_head, block_size: the pipeline's toy). What
the model does that our flags cannot say comes back as a list of sentences.
"""

from __future__ import annotations

from typing import Any

from ..config import ModelConfig
from ..config.params import project_params, sections
from .arch import Arch, normalise
from .layers import window_flags

TOY = ("n_layer", "n_embd", "n_head", "block_size")        # the size a section takes, by default params.yaml's


def toy() -> dict[str, int]:
    """The default toy size: the project's params.yaml `model:` shape."""
    model = ModelConfig.from_dict({**sections(project_params(), ("model",))["model"], "vocab_size": 1}, "model")
    return {k: getattr(model, k) for k in TOY}


def _kv_heads(n_head: int, group: int) -> int:
    """The toy K/V heads keeping the model's query:K/V ratio where the toy head count allows."""
    want = max(1, n_head // group)
    return max(k for k in range(1, want + 1) if n_head % k == 0)


def _features_left_out(a: Arch) -> list[str]:
    """What the model has that our flags cannot say at all: an unknown family, unmodelled fields, experts, latent
    attention, NoPE layers, sinks, an L2 QK-norm, quantised weights, a gated MLP with another activation."""
    missing: list[str] = []
    if not a.known:
        missing.append(f"model_type {a.family!r}: not a family this tool knows, read the Llama way")
    missing += [f"{what}: not read" for what, _ in a.unmodelled]
    if a.moe is not None:
        m = a.moe
        missing.append(f"mixture of experts ({m.experts} routed experts, {m.top_k} per token"
                       + (f", {m.shared} shared" if m.shared else "")
                       + (", router and experts with biases" if m.router_bias or m.expert_bias else "")
                       + f", in {sum(m.layers)} of {a.n_layer} layers)"
                       f": modelled as one dense MLP as wide as the experts a token runs ({m.top_k} x {m.width}"
                       + (f" + {m.shared_width}" if m.shared_width else "") + ")")
    if a.mla is not None:
        missing.append(f"multi-head latent attention (kv_lora_rank {a.mla.kv_rank}, q_lora_rank {a.mla.q_rank}, "
                       f"split q/k heads {a.mla.nope} + {a.mla.rope} RoPE, values {a.mla.v}): plain attention used")
    nope = a.rope_layers.count(False) if a.pos == "rope" else 0
    if nope:
        missing.append(f"NoPE layers ({nope} of {a.n_layer} rotate nothing): every toy layer uses RoPE")
    if a.sinks:
        missing.append("attention sinks (one learned logit per head)")
    if a.qk_norm_kind == "l2":
        missing.append("QK-norm as an L2 norm without weights, on the RoPE layers only: ours (RMSNorm per head) used")
    if a.quant is not None:
        missing.append(f"weights stored quantised ({a.quant.get('quant_method')}): the toy trains in float")
    if a.gated and not a.activation.startswith("silu"):
        missing.append(f"gated MLP with {a.activation} (GeGLU) modelled as SwiGLU")
    return missing


def _layout_left_out(a: Arch) -> list[str]:
    """Where the model puts its heads, biases and norms other than our flags can: said, our nearest used."""
    missing: list[str] = []
    if a.head_dim * a.n_head != a.n_embd and a.mla is None:
        missing.append(f"head_dim {a.head_dim} wider/narrower than hidden/heads ({a.n_embd}/{a.n_head}); "
                       "the toy uses n_embd / n_head")
    if a.biases == "qkv":
        missing.append("biases on the q, k, v projections only (our bias flag is all or nothing: off)")
    elif a.biases in ("attn", "mlp", "attn_mlp"):
        missing.append(f"biases on some projections only ({a.biases}); our bias flag also adds norm biases: off")
    if a.placement == "post_sublayer":
        missing.append("norms after each sublayer inside the residual branch, x + norm(f(x)) "
                       "(neither our pre nor 2017's post): pre used")
    if a.post_norms:
        missing.append("extra norms after the attention and MLP outputs (pre and post: 4 per layer)")
    if a.qk_norm_kind == "across_heads":
        missing.append("QK-norm across all heads at once (one norm over n_head x head_dim), not per head")
    return missing


def _toy_windows(a: Arch, size: dict[str, int]) -> tuple[tuple[int, int] | None, list[str]]:
    """(attn_window, global_every) when the model's windows fit the toy, else None and why not."""
    if not any(a.windows):
        return None, []
    n, w = sum(w is not None for w in a.windows), next(w for w in a.windows if w)
    flags = window_flags(a.windows, a.max_positions)
    if a.window_kind == "chunk":
        return None, [f"chunked attention ({n} of {a.n_layer} layers see {w} tokens): a chunk starts afresh "
                      "every attention_chunk_size tokens, attn_window slides"]
    if isinstance(flags, str):
        return None, [f"sliding-window attention ({n} of {a.n_layer} layers see {w} tokens): {flags}"]
    if flags[0] >= size["block_size"]:
        return None, [f"sliding-window attention (attn_window={flags[0]}, global_every={flags[1]}): a window not "
                      f"below the toy's block_size={size['block_size']} (--block-size above {flags[0]} keeps it): "
                      "full attention used"]
    if flags[1] > size["n_layer"]:
        return None, [f"sliding-window attention (attn_window={flags[0]}, global_every={flags[1]}): more than the "
                      f"toy's n_layer={size['n_layer']} (--n-layer {flags[1]} or more keeps it): full attention used"]
    return flags, []


def _attention_left_out(a: Arch) -> list[str]:
    """RoPE scaling, a second RoPE base, soft-capped scores, another query scale, Gemma's scaled embeddings."""
    missing: list[str] = []
    if a.rope_scaling:
        kind = a.rope_scaling.get("rope_type", a.rope_scaling.get("type"))
        missing.append(f"RoPE scaling ({kind}, factor {a.rope_scaling.get('factor')})")
    if a.rope_local_base:
        missing.append(f"a second RoPE base {a.rope_local_base:g} for the sliding-window layers")
    if a.attn_softcap:
        missing.append(f"attention logit soft-capping at {a.attn_softcap:g}")
    if a.query_pre_attn_scalar and a.query_pre_attn_scalar != a.head_dim:
        missing.append(f"query_pre_attn_scalar {a.query_pre_attn_scalar:g} (queries scaled by 1/sqrt of it, "
                       f"not of head_dim {a.head_dim})")
    if a.family.startswith("gemma"):
        missing.append("embeddings scaled by sqrt(hidden_size); RMSNorm weights stored as 1 + w")
    return missing


def model_section(config: dict, n_layer: int | None = None, n_embd: int | None = None, n_head: int | None = None,
                  block_size: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """A `model:` section with the config's flags at the toy size (or the one given), and what it leaves out."""
    a = normalise(config)
    given = dict(n_layer=n_layer, n_embd=n_embd, n_head=n_head, block_size=block_size)
    size = {**toy(), **{k: v for k, v in given.items() if v is not None}}
    group = a.n_head // a.n_kv_head
    kv = _kv_heads(size["n_head"], group)
    missing = [] if size["n_head"] // kv == group else [
        f"query:K/V ratio {group}:1 ({a.n_head}:{a.n_kv_head}) kept as {size['n_head'] // kv}:1 at {size['n_head']} "
        "heads"]
    missing += _features_left_out(a)
    width = a.hidden if a.moe is None else a.moe.top_k * a.moe.width + a.moe.shared_width
    section = dict(
        n_layer=size["n_layer"], n_head=size["n_head"], n_kv_head=kv, n_embd=size["n_embd"], head_dim=None,
        block_size=size["block_size"], dropout=0.0, norm=a.norm, norm_eps=a.norm_eps,
        norm_placement="pre", pos=a.pos, rope_base=a.rope_base if a.rope_base else 10000.0,
        mlp="swiglu" if a.gated else "gelu", mlp_multiple=64,
        mlp_hidden=max(1, round(width / a.n_embd * size["n_embd"])), bias=a.biases == "all",
        qk_norm=a.qk_norm_kind != "none", tie_embeddings=a.tied, logit_softcap=float(a.final_softcap or 0.0),
        attn_window=0, global_every=0,
    )
    missing += _layout_left_out(a)
    flags, why = _toy_windows(a, size)
    if flags is not None:
        section["attn_window"], section["global_every"] = flags
    missing += why + _attention_left_out(a)
    ModelConfig.from_dict({**section, "vocab_size": 48})      # the section must build a model
    return section, missing
