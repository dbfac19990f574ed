"""One normalised shape of any causal LM's config.json: `Arch`, and `normalise(raw)` that reads it.

`normalise` gives the numbers every derived figure needs, whichever names the file used, or a one-line
ConfigError. Both transformers layouts are read: v4 (`rope_theta`, `rope_scaling` with `rope_type` or the legacy
`type`) and v5 (`rope_parameters`, flat or nested per layer type). The dense shape is read here; the family's
entry comes from model_types.py, the per-layer patterns (windows, chunks, NoPE) from layers.py, and the experts and
latent attention from moe_mla.py, each only for the families whose code builds them. A field of a feature the
family's arithmetic does not model is listed in `Arch.unmodelled` with the figures it changes, and those figures
are then left out, never guessed. Pure Python: nothing here imports transformers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError
from .config_json import bool_field, int_field
from .model_types import family_of
from .fields import CHANGES, COUNTS, FIELDS, LAYER_TYPES, SUSPICIOUS
from .layers import layer_chunks, layer_windows, rope_layers
from .moe_mla import Mla, Moe, mla_settings, moe_settings


@dataclass
class Arch:
    """The numbers every derived figure needs, whichever names the file used."""
    family: str
    n_layer: int
    n_embd: int                   # the residual width (hidden_size)
    n_head: int
    n_kv_head: int
    head_dim: int
    head_dim_read: bool           # True: head_dim is in the file; False: n_embd / heads
    hidden: int                   # the dense MLP's width (intermediate_size), as ModelConfig.hidden
    vocab_size: int
    max_positions: int
    tied: bool
    gated: bool
    activation: str
    norm: str                     # layernorm | rmsnorm
    norm_eps: float
    placement: str                # pre | post_sublayer (OLMo2: x + norm(f(x)))
    post_norms: bool              # Gemma 2/3: extra norms after each sublayer (4 per layer)
    pos: str                      # learned | rope
    rope_base: float | None
    rope_local_base: float | None
    rope_scaling: dict | None
    biases: str                   # which layers have biases: all (GPT-2) | qkv (Qwen2) | attn_mlp | attn | mlp | none
    qk_norm_kind: str             # none | per_head | across_heads | l2 (ModelConfig.qk_norm: per_head or not)
    windows: list[int | None]     # per layer: the sliding window, or None for full attention
    attn_softcap: float | None
    final_softcap: float | None
    query_pre_attn_scalar: float | None
    prefix: str                   # 'text_config.' when the numbers came from a nested text config
    defaults_used: list[str] = field(default_factory=list)
    known: bool = True            # False: a family this does not know, read the Llama way
    moe: Moe | None = None
    mla: Mla | None = None
    rope_layers: list[bool] = field(default_factory=list)   # per layer: True = RoPE, False = NoPE
    window_kind: str = "sliding window"                     # or "chunk" (Llama 4's chunked attention)
    sinks: bool = False           # gpt-oss: one learned attention sink per head
    quant: dict | None = None     # quantization_config as in the file
    unmodelled: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)   # (what, figures it changes)

    def left_out(self, figure: str) -> list[str]:
        """Why a figure ('parameters', 'kv', 'kv_seq') is left out: the fields that change it unmodelled; [] = vouched."""
        covers = {"parameters": {"parameters"}, "kv": {"kv"}, "kv_seq": {"kv", "kv_seq"}}[figure]
        return [what for what, figs in self.unmodelled if covers & set(figs)]


def rope_settings(cfg: dict, fam: dict) -> tuple[float | None, float | None, dict | None]:
    """(global base, sliding-layer base, scaling) from either layout."""
    d = fam["defaults"]
    rp = cfg.get("rope_parameters")
    if isinstance(rp, dict) and rp:
        if isinstance(rp.get("full_attention"), dict) or isinstance(rp.get("sliding_attention"), dict):
            full = rp.get("full_attention") or {}
            slide = rp.get("sliding_attention") or {}
            base = full.get("rope_theta", d.get("rope_theta"))
            local = slide.get("rope_theta")
            scaling = full if full.get("rope_type", full.get("type", "default")) != "default" else None
            return base, local, scaling
        scaling = rp if rp.get("rope_type", rp.get("type", "default")) != "default" else None
        return rp.get("rope_theta", d.get("rope_theta")), None, scaling
    base = cfg.get("rope_theta", d.get("rope_theta"))
    local = cfg.get("rope_local_base_freq", d.get("rope_local_base_freq"))
    rs = cfg.get("rope_scaling")
    scaling = rs if isinstance(rs, dict) and rs.get("rope_type", rs.get("type", "default")) != "default" else None
    return base, local, scaling


def _set(v: Any) -> bool:
    return v not in (None, False, 0, [], {}, "")


def unmodelled(cfg: dict, where: str, fam: dict) -> list[tuple[str, tuple[str, ...]]]:
    """The fields that change the counts in ways this family's arithmetic does not model, with the figures."""
    out = []
    models = fam.get("models", ())
    for feature, names in COUNTS.items():
        hits = sorted(n for n in names if _set(cfg.get(n)))
        if hits and feature not in models and CHANGES[feature]:
            out.append((f"{', '.join(where + n for n in hits)} ({feature.replace('_', ' ')}, not modelled for this"
                        f" family)", CHANGES[feature]))
    for key in cfg:
        if key in FIELDS or not _set(cfg[key]):
            continue
        figs = sorted({f for sub, fs in SUSPICIOUS.items() if sub in key.lower() for f in fs})
        if figs:
            out.append((f"{where}{key} (a field this tool does not know)", tuple(figs)))
    types = cfg.get("layer_types")
    if isinstance(types, list):
        odd = sorted({str(t) for t in types} - set(LAYER_TYPES))
        if odd:
            out.append((f"{where}layer_types {', '.join(odd)} (layers that are not attention as modelled here)",
                        ("parameters", "kv")))
    return out


def _given(cfg: dict, where: str, defaults: dict, used: list[str], *names: str) -> int:
    """The first of `names` the file sets, else the family's default (its name added to `used`), else an error."""
    v = int_field(cfg, where, *names)
    if v is None:
        key = next((n for n in names if n in defaults), None)
        if key is None:
            raise ConfigError(f"{where}{names[0]}: missing")
        used.append(key)
        v = defaults[key]
    return v


def _heads(cfg: dict, where: str, defaults: dict, used: list[str], hidden: int, n_head: int) -> tuple[int, int, bool]:
    """(K/V heads, head_dim, whether head_dim is the file's or the family's): the heads must split evenly, and
    without a head_dim the width must split among the heads."""
    kv = int_field(cfg, where, "num_key_value_heads")
    if kv is None:
        kv = defaults.get("num_key_value_heads", n_head)
        if "num_key_value_heads" in defaults:
            used.append("num_key_value_heads")
    if n_head % kv:
        raise ConfigError(f"{where}num_attention_heads={n_head}, num_key_value_heads={kv}: "
                          "the query heads must split evenly among the key/value heads")
    hd = int_field(cfg, where, "head_dim")
    if hd is not None:
        return kv, hd, True
    if "head_dim" in defaults:
        used.append("head_dim")
        return kv, defaults["head_dim"], True
    if hidden % n_head:
        raise ConfigError(f"{where}hidden_size={hidden}, num_attention_heads={n_head}: "
                          "hidden_size must be divisible by the heads (or head_dim must be given)")
    return kv, hidden // n_head, False


def _norm_eps(cfg: dict, where: str, defaults: dict) -> float:
    key = next((k for k in ("rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps") if k in cfg), None)
    eps = cfg[key] if key else defaults.get("rms_norm_eps", 1e-5)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps <= 0:
        raise ConfigError(f"{where}{key}={eps!r}: must be a positive number")
    return float(eps)


def _biases(cfg: dict, fam: dict) -> str:
    """Which layers have biases: the family's rule, or (for families with the two flags) what they say."""
    if fam["biases"] != "flag":
        return fam["biases"]
    attn_b, mlp_b = bool(cfg.get("attention_bias", False)), bool(cfg.get("mlp_bias", False))
    return {(True, True): "attn_mlp", (True, False): "attn", (False, True): "mlp"}.get((attn_b, mlp_b), "none")


def _rope(cfg: dict, where: str, fam: dict, used: list[str]) -> tuple[float | None, float | None, dict | None]:
    """(RoPE's base, the sliding layers' base, the scaling), checked; the defaults taken added to `used`."""
    base, local, scaling = rope_settings(cfg, fam)
    if scaling is not None and "original_max_position_embeddings" not in scaling \
            and "original_max_position_embeddings" in cfg:       # Phi-3 keeps it beside, not inside, rope_scaling
        scaling = {**scaling, "original_max_position_embeddings": cfg["original_max_position_embeddings"]}
    if fam["pos"] == "rope":
        if not isinstance(base, (int, float)) or isinstance(base, bool) or base <= 1:
            raise ConfigError(f"{where}rope_theta={base!r}: must be a number > 1")
        if "rope_theta" not in cfg and "rope_parameters" not in cfg:
            used.append("rope_theta")
    if local is not None and "rope_local_base_freq" not in cfg and "rope_parameters" not in cfg:
        used.append("rope_local_base_freq")
    return (float(base) if fam["pos"] == "rope" else None), (float(local) if local is not None else None), scaling


def _windows(cfg: dict, where: str, family: str, fam: dict, n_layer: int, rope: list[bool],
             used: list[str]) -> tuple[list[int | None], str]:
    """(per layer, the tokens it attends to or None for all; whether those are a sliding window or a chunk)."""
    windows = layer_windows(cfg, family, fam, n_layer, rope)
    if any(windows) and "sliding_window" not in cfg:
        used.append("sliding_window")
    if "chunks" not in fam.get("models", ()):
        return windows, "sliding window"
    if any(windows):
        raise ConfigError(f"{where}sliding_window and attention_chunk_size: both set, one is modelled at a time")
    return layer_chunks(cfg, where, rope, n_layer), "chunk"


def _storage(raw: dict, cfg: dict, where: str) -> tuple[dict | None, float | None]:
    """(quantization_config, final_logit_softcapping), checked."""
    quant = raw.get("quantization_config", cfg.get("quantization_config"))
    if quant is not None and not isinstance(quant, dict):
        raise ConfigError(f"quantization_config={quant!r}: must be a mapping")
    final_cap = cfg.get("final_logit_softcapping")      # import-config carries it as logit_softcap
    if final_cap is not None and (isinstance(final_cap, bool) or not isinstance(final_cap, (int, float))
                                  or not 0 < final_cap < float("inf")):
        raise ConfigError(f"{where}final_logit_softcapping={final_cap!r}: must be a positive number, or null (off)")
    return quant, final_cap


def normalise(raw: dict) -> Arch:
    """The architecture of a causal LM config, or a one-line ConfigError."""
    cfg, prefix, family, fam, known = family_of(raw)
    d, used = fam["defaults"], []
    get = lambda *names: _given(cfg, prefix, d, used, *names)           # noqa: E731
    n_layer = get("num_hidden_layers", "n_layer")
    hidden = get("hidden_size", "n_embd")
    n_head = get("num_attention_heads", "n_head")
    kv, hd, head_dim_read = _heads(cfg, prefix, d, used, hidden, n_head)
    inter = int_field(cfg, prefix, "intermediate_size", "n_inner") or 4 * hidden
    vocab = get("vocab_size")
    max_pos = get("max_position_embeddings", "n_positions", "n_ctx")
    eps = _norm_eps(cfg, prefix, d)
    act = cfg.get("hidden_activation") or cfg.get("hidden_act") or cfg.get("activation_function") \
        or d.get("hidden_activation") or "silu"
    tied = cfg.get("tie_word_embeddings", raw.get("tie_word_embeddings", fam["tied_default"]))
    base, local, scaling = _rope(cfg, prefix, fam, used)
    rope = rope_layers(cfg, prefix, family, fam, n_layer)
    windows, window_kind = _windows(cfg, prefix, family, fam, n_layer, rope, used)
    qk_norm = fam["qk_norm_kind"]
    if family == "llama4_text" and bool_field(cfg, prefix, "use_qk_norm", True):
        qk_norm = "l2"                              # L2 norm without weights, on the RoPE layers
    mla = mla_settings(cfg, prefix, fam)
    if mla is not None:
        hd, head_dim_read = mla.nope + mla.rope, True
    quant, final_cap = _storage(raw, cfg, prefix)
    return Arch(
        family=family, n_layer=n_layer, n_embd=hidden, n_head=n_head, n_kv_head=kv, head_dim=hd,
        head_dim_read=head_dim_read, hidden=inter, vocab_size=vocab, max_positions=max_pos, tied=bool(tied),
        gated=fam["gated"], activation=str(act), norm=fam["norm"], norm_eps=eps, placement=fam["placement"],
        post_norms=fam["post_norms"], pos=fam["pos"], rope_base=base, rope_local_base=local, rope_scaling=scaling,
        biases=_biases(cfg, fam), qk_norm_kind=qk_norm, windows=windows, attn_softcap=cfg.get("attn_logit_softcapping"),
        final_softcap=final_cap, query_pre_attn_scalar=cfg.get("query_pre_attn_scalar", d.get("query_pre_attn_scalar")),
        prefix=prefix, defaults_used=used, known=known, moe=moe_settings(cfg, prefix, fam, n_layer, inter, hidden),
        mla=mla, rope_layers=rope, window_kind=window_kind, sinks=fam.get("sinks", False), quant=quant,
        unmodelled=unmodelled(cfg, prefix, fam),
    )
