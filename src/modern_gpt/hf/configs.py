"""Reading a Hugging Face config.json: the families it can be, one normalised shape, and what each field means.

Pure Python and json: nothing here imports transformers. `read_config(path)` gives the raw mapping;
`normalise(raw)` gives an `Arch` (the numbers every derived figure needs) or a one-line error.
Both transformers layouts are read: v4 (`rope_theta`, `rope_scaling` with `rope_type` or the legacy
`type`) and v5 (`rope_parameters`, flat or nested per layer type).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, DataError

NM = "not modelled here"

# field → (what it means, the `model:` flag of ours it corresponds to, or NM)
FIELDS: dict[str, tuple[str, str]] = {
    # identity
    "architectures": ("the class transformers builds from this file", NM),
    "model_type": ("the family: picks the code (and the defaults of fields left out)", NM),
    "_name_or_path": ("where the file was loaded from when it was saved", NM),
    "auto_map": ("custom code classes to load instead of transformers' own", NM),
    "transformers_version": ("the transformers version that wrote the file", NM),
    "torch_dtype": ("the dtype the weights are stored in (v4 name)", NM),
    "dtype": ("the dtype the weights are stored in (v5 name)", NM),
    # shape
    "vocab_size": ("number of distinct tokens: rows of the embedding table", "vocab_size"),
    "hidden_size": ("residual width: the size of every token's vector", "n_embd"),
    "n_embd": ("residual width (GPT-2 name)", "n_embd"),
    "num_hidden_layers": ("transformer blocks", "n_layer"),
    "n_layer": ("transformer blocks (GPT-2 name)", "n_layer"),
    "num_attention_heads": ("query heads per layer", "n_head"),
    "n_head": ("attention heads per layer (GPT-2 name)", "n_head"),
    "num_key_value_heads": ("key/value heads per layer; fewer than query heads = grouped-query attention",
                            "n_kv_head"),
    "head_dim": ("per-head width, when it is not hidden_size / num_attention_heads", "head_dim"),
    "intermediate_size": ("the MLP's hidden width", "mlp_hidden"),
    "n_inner": ("the MLP's hidden width (GPT-2 name; null = 4 × n_embd)", "mlp_hidden"),
    "max_position_embeddings": ("longest context the model was built or extended for", "block_size"),
    "n_positions": ("rows of the learned position table = longest context (GPT-2 name)", "block_size"),
    "n_ctx": ("context length (old GPT-2 name, same as n_positions)", "block_size"),
    # activation and MLP
    "hidden_act": ("the MLP's activation; 'silu' with gate/up/down matrices = SwiGLU", "mlp"),
    "hidden_activation": ("the MLP's activation (Gemma name); gelu_pytorch_tanh gated = GeGLU", "mlp"),
    "activation_function": ("the MLP's activation (GPT-2 name)", "mlp"),
    "mlp_bias": ("biases on the MLP's matrices", "bias"),
    # norms
    "rms_norm_eps": ("epsilon of RMSNorm (the model normalises with RMSNorm)", "norm_eps"),
    "layer_norm_epsilon": ("epsilon of LayerNorm (the model normalises with LayerNorm)", "norm_eps"),
    "layer_norm_eps": ("epsilon of LayerNorm", "norm_eps"),
    # attention
    "attention_bias": ("biases on the attention projections", "bias"),
    "attention_dropout": ("dropout on attention weights while training", "dropout"),
    "attn_pdrop": ("dropout on attention weights (GPT-2 name)", "dropout"),
    "resid_pdrop": ("dropout on residual branches", "dropout"),
    "embd_pdrop": ("dropout on the embeddings", "dropout"),
    "sliding_window": ("tokens a sliding-window layer attends to (and keeps in its KV cache)", NM),
    "sliding_window_size": ("the sliding window (older Gemma 2 name)", NM),
    "use_sliding_window": ("whether sliding_window is used at all (Qwen2/3)", NM),
    "max_window_layers": ("Qwen: layers from this index on use the sliding window, if enabled", NM),
    "layer_types": ("per layer: full_attention or sliding_attention", NM),
    "sliding_window_pattern": ("every Nth layer is full attention, the others slide (Gemma 3)", NM),
    "_sliding_window_pattern": ("every Nth layer is full attention (Gemma 3, as saved by newer versions)", NM),
    "query_pre_attn_scalar": ("queries are scaled by 1/sqrt(this) instead of 1/sqrt(head_dim)", NM),
    "attn_logit_softcapping": ("attention scores squashed by cap·tanh(score/cap)", NM),
    "final_logit_softcapping": ("output logits squashed by cap·tanh(logit/cap)", NM),
    "cache_implementation": ("which KV-cache class generation uses by default", NM),
    "use_cache": ("keep past keys and values while generating", NM),
    "scale_attn_weights": ("divide attention scores by sqrt(head_dim) (GPT-2)", NM),
    "scale_attn_by_inverse_layer_idx": ("GPT-2 option: scale attention by 1/layer index", NM),
    "reorder_and_upcast_attn": ("GPT-2 option: compute attention in fp32", NM),
    "use_bidirectional_attention": ("attend both ways (embedding variants), not causal", NM),
    # positions
    "rope_theta": ("RoPE's base: larger = slower rotations, longer wavelengths", "rope_base"),
    "rope_local_base_freq": ("RoPE base of the sliding-window layers (Gemma 3; rope_theta is the global one)",
                             NM),
    "rope_scaling": ("how RoPE is stretched past the training length (v4 name)", NM),
    "rope_parameters": ("RoPE's base and scaling, per layer type when nested (v5 name)", "rope_base"),
    "partial_rotary_factor": ("fraction of each head's dimensions RoPE rotates", NM),
    "original_max_position_embeddings": ("the context length before RoPE scaling extended it", NM),
    # embeddings and output
    "tie_word_embeddings": ("the output head reuses the embedding table (no separate lm_head)", NM),
    "initializer_range": ("std of the random initial weights", NM),
    "pretraining_tp": ("tensor-parallel degree used in pretraining (Llama; 1 = exact)", NM),
    # tokens
    "bos_token_id": ("id of the beginning-of-sequence token", NM),
    "eos_token_id": ("id(s) of the end-of-sequence token", NM),
    "pad_token_id": ("id of the padding token", NM),
    # GPT-2's classification head
    "summary_type": ("GPT-2's sequence-summary head (classification), unused for generation", NM),
    "summary_use_proj": ("GPT-2's sequence-summary head: project the summary", NM),
    "summary_activation": ("GPT-2's sequence-summary head: activation", NM),
    "summary_proj_to_labels": ("GPT-2's sequence-summary head: project to the labels", NM),
    "summary_first_dropout": ("GPT-2's sequence-summary head: dropout", NM),
    "task_specific_params": ("generation defaults per task", NM),
    # multimodal
    "text_config": ("the language model's own config (fields below, prefixed)", NM),
    "vision_config": ("the image encoder's config (a vision transformer)", NM),
    "mm_tokens_per_image": ("tokens each image becomes in the text sequence", NM),
    "image_token_index": ("id of the image placeholder token", NM),
    "boi_token_index": ("id of the begin-of-image token", NM),
    "eoi_token_index": ("id of the end-of-image token", NM),
}

# ------------------------------------------------------------------------------------------ families

# Per family: how its code builds the model (what config.json never says) and the defaults of fields
# a config.json may leave out (transformers' class defaults; checked against transformers 5.24).
FAMILIES: dict[str, dict[str, Any]] = {
    "gpt2": dict(norm="layernorm", placement="pre", pos="learned", gated=False, qk_norm="none",
                 bias="all", post_norms=False, tied_default=True, defaults={}),
    "llama": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm="none", bias="flag",
                  post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "mistral": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm="none", bias="none",
                    post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "qwen2": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm="none", bias="qkv",
                  post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "qwen3": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm="per_head", bias="flag",
                  post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "gemma2": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm="none", bias="flag",
                   post_norms=True, tied_default=True, pattern=2, defaults={"rope_theta": 10000.0}),
    "gemma3_text": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm="per_head",
                        bias="flag", post_norms=True, tied_default=True, pattern=6,
                        defaults={"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4,
                                  "head_dim": 256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
                                  "rope_theta": 1_000_000.0, "rope_local_base_freq": 10_000.0,
                                  "query_pre_attn_scalar": 256, "sliding_window": 4096,
                                  "hidden_activation": "gelu_pytorch_tanh"}),
    "olmo2": dict(norm="rmsnorm", placement="post_sublayer", pos="rope", gated=True, qk_norm="across_heads",
                  bias="flag", post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "phi3": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm="none", bias="none",
                 post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
}
MULTIMODAL = {"gemma3": "gemma3_text"}          # model_type → the model_type of its text_config
NOT_CAUSAL = ("bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2", "xlm-roberta",
              "t5", "bart", "vit", "clip", "siglip", "siglip_vision_model", "dinov2", "whisper", "wav2vec2",
              "mpnet", "sentence-transformers")
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


@dataclass
class Arch:
    """The numbers every derived figure needs, whichever names the file used."""
    family: str
    n_layer: int
    hidden: int
    n_head: int
    n_kv_head: int
    head_dim: int
    head_dim_read: bool           # True: head_dim is in the file; False: hidden / heads
    intermediate: int
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
    bias: str                     # all (GPT-2) | qkv (Qwen2) | attn_mlp | attn | mlp | none
    qk_norm: str                  # none | per_head | across_heads
    windows: list[int | None]     # per layer: the sliding window, or None for full attention
    attn_softcap: float | None
    final_softcap: float | None
    query_pre_attn_scalar: float | None
    prefix: str                   # 'text_config.' when the numbers came from a nested text config
    defaults_used: list[str] = field(default_factory=list)


def read_config(path: str | Path) -> dict[str, Any]:
    """A config.json as a mapping, or a one-line DataError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot be read as UTF-8 text ({type(e).__name__})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: a config.json is a JSON object, got {type(raw).__name__}")
    return raw


def _int(cfg: dict, where: str, *names: str, default: Any = None) -> int | None:
    for n in names:
        if n in cfg and cfg[n] is not None:
            v = cfg[n]
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"{where}{n}={v!r}: must be an integer")
            if v < 1:
                raise ConfigError(f"{where}{n}={v}: must be a positive integer")
            return v
    return default


def text_part(raw: dict) -> tuple[dict, str, str]:
    """(the language model's config, its prefix, its model_type), checking it is a causal LM."""
    mt = raw.get("model_type")
    archs = raw.get("architectures") or []
    if not isinstance(archs, list):
        archs = [archs]
    if mt in NOT_CAUSAL or (archs and not any(str(a).endswith(CAUSAL_SUFFIXES) for a in archs)):
        raise ConfigError(f"model_type={mt!r}, architectures={archs}: not a causal (decoder-only) language model; "
                          f"this explains text generators ({', '.join(FAMILIES)})")
    if mt in MULTIMODAL or "text_config" in raw:
        tc = raw.get("text_config")
        if not isinstance(tc, dict):
            raise ConfigError(f"model_type={mt!r}: a multimodal config needs a text_config mapping")
        return tc, "text_config.", tc.get("model_type") or MULTIMODAL.get(mt, mt)
    if mt is None and "vision_config" in raw:
        raise ConfigError("vision-only config (vision_config, no text model): not a causal language model")
    return raw, "", mt


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


def layer_windows(cfg: dict, family: str, fam: dict, n_layer: int) -> list[int | None]:
    window = cfg.get("sliding_window", fam["defaults"].get("sliding_window"))
    if family in ("qwen2", "qwen3") and not cfg.get("use_sliding_window", False):
        window = None
    if not window:
        return [None] * n_layer
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"sliding_window={window!r}: must be a positive integer or null")
    types = cfg.get("layer_types")
    if isinstance(types, list):
        if len(types) != n_layer:
            raise ConfigError(f"layer_types: {len(types)} entries for num_hidden_layers={n_layer}")
        return [window if t == "sliding_attention" else None for t in types]
    pattern = cfg.get("sliding_window_pattern", cfg.get("_sliding_window_pattern", fam.get("pattern")))
    if pattern:   # Gemma: every pattern-th layer (1-based) is full attention
        return [window if (i + 1) % pattern else None for i in range(n_layer)]
    return [window] * n_layer      # Mistral, Phi-3: every layer slides


def normalise(raw: dict) -> Arch:
    """The architecture of a causal LM config, or a one-line ConfigError."""
    cfg, prefix, family = text_part(raw)
    if family not in FAMILIES:
        archs = raw.get("architectures") or []
        if not (any(str(a).endswith("ForCausalLM") for a in archs) and "hidden_size" in cfg):
            raise ConfigError(f"model_type={family!r}: not a family this reads ({', '.join(FAMILIES)})")
        fam = dict(FAMILIES["llama"], defaults={})      # an unknown Llama-like decoder: read it the Llama way
    else:
        fam = FAMILIES[family]
    d, used = fam["defaults"], []

    def get(*names: str) -> int:
        v = _int(cfg, prefix, *names)
        if v is None:
            key = next((n for n in names if n in d), None)
            if key is None:
                raise ConfigError(f"{prefix}{names[0]}: missing")
            used.append(key)
            v = d[key]
        return v

    n_layer = get("num_hidden_layers", "n_layer")
    hidden = get("hidden_size", "n_embd")
    n_head = get("num_attention_heads", "n_head")
    kv = _int(cfg, prefix, "num_key_value_heads")
    if kv is None:
        kv = d.get("num_key_value_heads", n_head)
        if "num_key_value_heads" in d:
            used.append("num_key_value_heads")
    if n_head % kv:
        raise ConfigError(f"{prefix}num_attention_heads={n_head}, num_key_value_heads={kv}: "
                          "the query heads must split evenly among the key/value heads")
    hd = _int(cfg, prefix, "head_dim")
    head_dim_read = hd is not None
    if hd is None and "head_dim" in d:
        hd, head_dim_read = d["head_dim"], True
        used.append("head_dim")
    if hd is None:
        if hidden % n_head:
            raise ConfigError(f"{prefix}hidden_size={hidden}, num_attention_heads={n_head}: "
                              "hidden_size must be divisible by the heads (or head_dim must be given)")
        hd = hidden // n_head
    inter = _int(cfg, prefix, "intermediate_size", "n_inner") or 4 * hidden
    vocab = get("vocab_size")
    max_pos = get("max_position_embeddings", "n_positions", "n_ctx")
    eps_key = next((k for k in ("rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps") if k in cfg), None)
    eps = cfg[eps_key] if eps_key else d.get("rms_norm_eps", 1e-5)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps <= 0:
        raise ConfigError(f"{prefix}{eps_key}={eps!r}: must be a positive number")
    act = cfg.get("hidden_activation") or cfg.get("hidden_act") or cfg.get("activation_function") \
        or d.get("hidden_activation") or "silu"
    tied = cfg.get("tie_word_embeddings", raw.get("tie_word_embeddings", fam["tied_default"]))
    if fam["bias"] == "flag":
        attn_b, mlp_b = bool(cfg.get("attention_bias", False)), bool(cfg.get("mlp_bias", False))
        bias = {(True, True): "attn_mlp", (True, False): "attn", (False, True): "mlp"}.get((attn_b, mlp_b), "none")
    else:
        bias = fam["bias"]
    base, local, scaling = rope_settings(cfg, fam)
    if fam["pos"] == "rope":
        if not isinstance(base, (int, float)) or isinstance(base, bool) or base <= 1:
            raise ConfigError(f"{prefix}rope_theta={base!r}: must be a number > 1")
        if "rope_theta" not in cfg and "rope_parameters" not in cfg:
            used.append("rope_theta")
    if local is not None and "rope_local_base_freq" not in cfg and "rope_parameters" not in cfg:
        used.append("rope_local_base_freq")
    windows = layer_windows(cfg, family, fam, n_layer)
    if any(windows) and "sliding_window" not in cfg:
        used.append("sliding_window")
    qpas = cfg.get("query_pre_attn_scalar", d.get("query_pre_attn_scalar"))
    return Arch(
        family=family, n_layer=n_layer, hidden=hidden, n_head=n_head, n_kv_head=kv, head_dim=hd,
        head_dim_read=head_dim_read, intermediate=inter, vocab_size=vocab, max_positions=max_pos, tied=bool(tied),
        gated=fam["gated"], activation=str(act), norm=fam["norm"], norm_eps=float(eps), placement=fam["placement"],
        post_norms=fam["post_norms"], pos=fam["pos"], rope_base=float(base) if fam["pos"] == "rope" else None,
        rope_local_base=float(local) if local is not None else None, rope_scaling=scaling, bias=bias,
        qk_norm=fam["qk_norm"], windows=windows, attn_softcap=cfg.get("attn_logit_softcapping"),
        final_softcap=cfg.get("final_logit_softcapping"), query_pre_attn_scalar=qpas, prefix=prefix,
        defaults_used=used,
    )


def param_counts(a: Arch) -> dict[str, int]:
    """Parameters by part, computed from the shapes (the weights are never read)."""
    q, kv = a.n_head * a.head_dim, a.n_kv_head * a.head_dim
    attn = a.hidden * q + 2 * a.hidden * kv + q * a.hidden
    if a.bias in ("all", "attn", "attn_mlp"):
        attn += q + 2 * kv + a.hidden
    elif a.bias == "qkv":
        attn += q + 2 * kv
    mlp = (3 if a.gated else 2) * a.hidden * a.intermediate
    if a.bias == "all":
        mlp += a.intermediate + a.hidden
    elif a.bias in ("mlp", "attn_mlp"):
        mlp += (2 if a.gated else 1) * a.intermediate + a.hidden
    one_norm = a.hidden * (2 if a.norm == "layernorm" else 1)
    norms = (4 if a.post_norms else 2) * one_norm
    qk = {"none": 0, "per_head": 2 * a.head_dim, "across_heads": q + kv}[a.qk_norm]
    emb = a.vocab_size * a.hidden + (a.max_positions * a.hidden if a.pos == "learned" else 0)
    out = {
        "embedding": emb,
        "attention": a.n_layer * attn,
        "mlp": a.n_layer * mlp,
        "norms": a.n_layer * (norms + qk) + one_norm,
        "lm_head": 0 if a.tied else a.vocab_size * a.hidden,
    }
    out["total"] = sum(out.values())
    return out
