"""Reading a Hugging Face config.json: the families it can be and one normalised shape.

Pure Python and json: nothing here imports transformers. `read_config(path)` gives the raw mapping;
`normalise(raw)` gives an `Arch` (the numbers every derived figure needs) or a one-line error.
Both transformers layouts are read: v4 (`rope_theta`, `rope_scaling` with `rope_type` or the legacy
`type`) and v5 (`rope_parameters`, flat or nested per layer type). Mixture-of-experts layers (`Moe`),
latent attention (`Mla`), NoPE layers, chunked attention and attention sinks are read for the families
whose code builds them; a field of a feature the family's arithmetic does not model is listed in
`Arch.unmodelled` with the figures it changes, and those figures are then left out, never guessed.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, DataError
from .fields import CHANGES, COUNTS, FIELDS, LAYER_TYPES, SUSPICIOUS

# ------------------------------------------------------------------------------------------ families

# Per family: how its code builds the model (what config.json never says) and the defaults of fields
# a config.json may leave out (transformers' class defaults; checked against transformers 5.24).
FAMILIES: dict[str, dict[str, Any]] = {
    "gpt2": dict(norm="layernorm", placement="pre", pos="learned", gated=False, qk_norm_kind="none",
                 biases="all", post_norms=False, tied_default=True, defaults={}),
    "llama": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="flag",
                  post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "mistral": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="none",
                    post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "qwen2": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="qkv",
                  post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "qwen3": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="per_head", biases="flag",
                  post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "gemma2": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="flag",
                   post_norms=True, tied_default=True, pattern=2, defaults={"rope_theta": 10000.0}),
    "gemma3_text": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="per_head",
                        biases="flag", post_norms=True, tied_default=True, pattern=6,
                        defaults={"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4,
                                  "head_dim": 256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
                                  "rope_theta": 1_000_000.0, "rope_local_base_freq": 10_000.0,
                                  "query_pre_attn_scalar": 256, "sliding_window": 4096,
                                  "hidden_activation": "gelu_pytorch_tanh"}),
    "olmo2": dict(norm="rmsnorm", placement="post_sublayer", pos="rope", gated=True, qk_norm_kind="across_heads",
                  biases="flag", post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "phi3": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="none",
                 post_norms=False, tied_default=False, defaults={"rope_theta": 10000.0}),
    "smollm3": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="flag",
                    post_norms=False, tied_default=True, defaults={}, models=("nope",)),
    # mixture of experts (`moe` names the way the family lays its experts out: see moe_settings)
    "mixtral": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="none",
                    post_norms=False, tied_default=False, defaults={}, models=("experts",), moe="mixtral"),
    "qwen3_moe": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="per_head", biases="flag",
                      post_norms=False, tied_default=False, defaults={}, models=("experts",), moe="qwen"),
    "deepseek_v3": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="flag",
                        post_norms=False, tied_default=False, defaults={}, models=("experts", "latent"),
                        moe="deepseek"),
    "gpt_oss": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="flag",
                    post_norms=False, tied_default=False, defaults={}, models=("experts",), moe="gpt_oss",
                    sinks=True),
    "llama4_text": dict(norm="rmsnorm", placement="pre", pos="rope", gated=True, qk_norm_kind="none", biases="flag",
                        post_norms=False, tied_default=False, defaults={}, models=("experts", "chunks", "nope"),
                        moe="llama4"),
}
MULTIMODAL = {"gemma3": "gemma3_text", "llama4": "llama4_text"}   # model_type → the model_type of its text_config
NOT_CAUSAL = ("bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2", "xlm-roberta",
              "t5", "bart", "vit", "clip", "siglip", "siglip_vision_model", "dinov2", "whisper", "wav2vec2",
              "mpnet", "sentence-transformers")
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


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


@dataclass
class Moe:
    """A mixture-of-experts MLP: `experts` routed MLPs of width `width`, `top_k` run per token, `shared` always."""
    experts: int
    top_k: int
    width: int                    # each routed expert's hidden width
    shared: int                   # shared experts every token runs
    shared_width: int             # the shared experts' total hidden width (0 when none)
    layers: list[bool]            # per layer: MoE (True) or a dense MLP (False)
    dense_width: int              # the dense layers' MLP width
    router_bias: bool
    expert_bias: bool
    router: str                   # how the router picks, in words
    fields: str                   # which fields said which layers are MoE, in words
    experts_key: str              # the file's name for the routed experts


@dataclass
class Mla:
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values rebuilt from a cached latent per token."""
    q_rank: int | None            # None: one plain query projection
    kv_rank: int
    nope: int                     # per-head q/k dims without RoPE
    rope: int                     # per-head q/k dims with RoPE (the key's shared by every head)
    v: int                        # per-head value width


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


# families whose code gives every layer the one sliding_window (a layer_types in their file is not read)
EVERY_LAYER_SLIDES = ("mistral", "mixtral", "phi3", "qwen3_moe")


def layer_windows(cfg: dict, family: str, fam: dict, n_layer: int, rope: list[bool] | None = None) -> list[int | None]:
    """Per layer, the sliding window or None (full attention), as each family's transformers code decides: the
    file's layer_types where the family reads it; else Qwen2/3's `i >= max_window_layers` (default 28), SmolLM3's
    NoPE layers, Gemma's every pattern-th layer full, and every layer for Mistral, Mixtral, Phi-3 and Qwen3-MoE."""
    window = cfg.get("sliding_window", fam["defaults"].get("sliding_window"))
    if family in ("qwen2", "qwen3", "qwen3_moe", "smollm3") and not cfg.get("use_sliding_window", False):
        window = None
    if not window:
        return [None] * n_layer
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"sliding_window={window!r}: must be a positive integer or null")
    if family in EVERY_LAYER_SLIDES:
        return [window] * n_layer
    types = cfg.get("layer_types")
    if isinstance(types, list):
        if len(types) != n_layer:
            raise ConfigError(f"layer_types: {len(types)} entries for num_hidden_layers={n_layer}")
        return [window if t == "sliding_attention" else None for t in types]
    if family in ("qwen2", "qwen3"):               # transformers: sliding where i >= max_window_layers
        first = cfg.get("max_window_layers", 28)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise ConfigError(f"max_window_layers={first!r}: must be a layer index (0 or more)")
        return [window if i >= first else None for i in range(n_layer)]
    if family == "smollm3" and rope is not None:   # transformers: the NoPE layers slide
        return [None if r else window for r in rope]
    pattern = cfg.get("sliding_window_pattern", cfg.get("_sliding_window_pattern", fam.get("pattern")))
    if pattern:   # Gemma: every pattern-th layer (1-based) is full attention
        return [window if (i + 1) % pattern else None for i in range(n_layer)]
    return [window] * n_layer      # an unknown Llama-like family: every layer slides


def layer_list(layers: list[int], most: int = 8) -> str:
    """1-based layer numbers in words: 'layer 3', 'layers 1-28', 'layers 6, 12, 18', cut after `most` pieces."""
    runs: list[list[int]] = []
    for i in layers:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    parts = [str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs]
    return ("layers " if len(layers) > 1 else "layer ") + ", ".join(parts[:most]) + (", ..." if len(parts) > most else "")


def window_flags(windows: list[int | None], context: int | None = None) -> tuple[int, int] | str:
    """Per-layer windows as our (attn_window, global_every), or one sentence naming the flag that cannot say them.

    Ours: every local layer has the one window attn_window, and layer i (1-based) is full attention when
    global_every divides i (0: none is). So all-sliding is (W, 0), Gemma 3's 5 local + 1 full is (W, 6), gpt-oss's
    alternation (W, 2); first-N-full (Qwen's max_window_layers) or two window sizes are not expressible. A window
    of `context` tokens or more (the file's max_position_embeddings) hides nothing within the context: (0, 0)."""
    sizes = sorted({w for w in windows if w is not None})
    if not sizes or (context is not None and sizes[0] >= context):
        return 0, 0
    if len(sizes) > 1:
        return (f"windows of {', '.join(f'{w:,}' for w in sizes)} tokens in different layers: attn_window is one "
                "window for every local layer")
    full = [i for i, w in enumerate(windows, 1) if w is None]
    if not full:
        return sizes[0], 0
    k = full[0]
    if full == list(range(k, len(windows) + 1, k)):
        return sizes[0], k
    return (f"full attention in {layer_list(full)} of {len(windows)} (1-based), the others a {sizes[0]:,}-token "
            "window: global_every can only make every k-th layer full (layers k, 2k, ...), or none")


def _flag(cfg: dict, where: str, name: str, default: bool) -> bool:
    v = cfg.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ConfigError(f"{where}{name}={v!r}: must be true or false")
    return v


def _layer_list(cfg: dict, where: str, name: str) -> list[int]:
    v = cfg.get(name) or []
    if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise ConfigError(f"{where}{name}={v!r}: must be a list of layer indices")
    return v


def _mixtral_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int,
                 biases: bool = False) -> dict[str, Any]:
    """Mixtral (and gpt-oss, whose router and experts have biases): num_local_experts MLPs in every layer."""
    experts = _required(cfg, where, "num_local_experts")
    scorer = f"a linear layer with bias ({hidden} -> {experts})" if biases else \
        f"a linear layer ({hidden} -> {experts}, no bias)"
    return dict(experts=experts, width=inter, layers=[True] * n_layer, fields="every layer", router_bias=biases,
                expert_bias=biases, router=f"{scorer} scores the experts; the top {top_k} run, weighted by a softmax "
                "over their scores" + ("; the experts' matrices have biases too" if biases else ""))


def _qwen_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int) -> dict[str, Any]:
    """Qwen MoE: every decoder_sparse_step-th layer but those in mlp_only_layers."""
    experts, width = _required(cfg, where, "num_experts"), _required(cfg, where, "moe_intermediate_size")
    step = _int(cfg, where, "decoder_sparse_step", default=1)
    dense = set(_layer_list(cfg, where, "mlp_only_layers"))
    norm = _flag(cfg, where, "norm_topk_prob", False)
    fields = _every(step, "decoder_sparse_step") + (f" but {sorted(dense)} (mlp_only_layers)" if dense else "")
    return dict(experts=experts, width=width, layers=[i not in dense and (i + 1) % step == 0 for i in range(n_layer)],
                fields=fields, experts_key="num_experts",
                router=(f"a linear layer ({hidden} -> {experts}, no bias) scores the experts; softmax over all, the top"
                        f" {top_k} run" + (", their weights renormalised to sum to 1" if norm else "")))


def _deepseek_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int) -> dict[str, Any]:
    """DeepSeek: routed and shared experts from layer first_k_dense_replace on (every moe_layer_freq-th)."""
    experts, width = _required(cfg, where, "n_routed_experts"), _required(cfg, where, "moe_intermediate_size")
    shared = _int(cfg, where, "n_shared_experts", default=0)
    first = _int(cfg, where, "first_k_dense_replace", default=0)
    freq = _int(cfg, where, "moe_layer_freq", default=1)
    groups, top_groups = cfg.get("n_group"), cfg.get("topk_group")
    router = (f"a linear layer ({hidden} -> {experts}, no bias) scores the experts with a "
              f"{cfg.get('scoring_func', 'softmax')}; " + (
                  f"the experts are in {groups} groups and a token picks from its best {top_groups}; "
                  if groups and groups > 1 else "") + f"the top {top_k} run" + (
                  "; a per-expert bias, used only to choose, keeps the load even without an auxiliary loss"
                  if cfg.get("topk_method") == "noaux_tc" else "") + (
                  f"; their weights renormalised and scaled by {cfg['routed_scaling_factor']:g}"
                  if _flag(cfg, where, "norm_topk_prob", False) and cfg.get("routed_scaling_factor") else ""))
    return dict(experts=experts, width=width, shared=shared, shared_width=shared * width,
                layers=[i >= first and i % freq == 0 for i in range(n_layer)],
                fields=f"from layer {first} on (first_k_dense_replace = {first})" + (
                    f", {_every(freq, 'moe_layer_freq')}" if freq > 1 else ""),
                router=router, experts_key="n_routed_experts")


def _llama4_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int) -> dict[str, Any]:
    """Llama 4: routed experts and one shared expert in the layers moe_layers lists, else every
    interleave_moe_layer_step-th; the other layers' MLP is intermediate_size_mlp wide."""
    experts = _required(cfg, where, "num_local_experts")
    dense_width = _int(cfg, where, "intermediate_size_mlp", default=16384)
    if cfg.get("moe_layers") is not None:
        moe = set(_layer_list(cfg, where, "moe_layers"))
        fields = "the layers moe_layers lists"
    else:
        step = _int(cfg, where, "interleave_moe_layer_step", default=1)
        moe = set(range(step - 1, n_layer, step))
        fields = _every(step, "interleave_moe_layer_step")
    return dict(experts=experts, width=inter, shared=1, shared_width=inter, dense_width=dense_width,
                layers=[i in moe for i in range(n_layer)], fields=fields,
                router=(f"a linear layer ({hidden} -> {experts}, no bias) scores the experts; the top {top_k} run,"
                        " the sigmoid of its score scaling the token it is given; the shared expert always runs"))


# a family's `moe` → how its experts are laid out: the Moe fields but top_k (the others default as in MOE_DEFAULTS)
MOE_STYLES = {"mixtral": _mixtral_moe, "gpt_oss": functools.partial(_mixtral_moe, biases=True), "qwen": _qwen_moe,
              "deepseek": _deepseek_moe, "llama4": _llama4_moe}
MOE_DEFAULTS = dict(shared=0, shared_width=0, router_bias=False, expert_bias=False, experts_key="num_local_experts")


def moe_settings(cfg: dict, where: str, fam: dict, n_layer: int, inter: int, hidden: int) -> Moe | None:
    """The experts of a family whose code builds mixture-of-experts layers (None for a dense family).

    Which layers are MoE follows each family's transformers code: Qwen MoE `(i + 1) % decoder_sparse_step == 0`
    and i not in mlp_only_layers; DeepSeek `i >= first_k_dense_replace` (and `i % moe_layer_freq == 0`, as
    DeepSeek's own code has it; transformers reads only the first); Llama 4 `moe_layers`, else every
    `interleave_moe_layer_step`-th layer; Mixtral and gpt-oss every layer.
    """
    style = fam.get("moe")
    if style is None:
        return None
    top_k = _int(cfg, where, "num_experts_per_tok", "experts_per_token")
    if top_k is None:
        raise ConfigError(f"{where}num_experts_per_tok: missing")
    moe = Moe(top_k=top_k, **{**MOE_DEFAULTS, "dense_width": inter,
                                **MOE_STYLES[style](cfg, where, n_layer, inter, hidden, top_k)})
    if top_k > moe.experts:
        raise ConfigError(f"{where}num_experts_per_tok={top_k}: more than the {moe.experts} experts")
    return moe


def _every(step: int, name: str) -> str:
    return ("every layer" if step == 1 else f"every {step}th layer") + f" ({name} = {step})"


def _required(cfg: dict, where: str, *names: str) -> int:
    v = _int(cfg, where, *names)
    if v is None:
        raise ConfigError(f"{where}{names[0]}: missing")
    return v


def mla_settings(cfg: dict, where: str, fam: dict) -> Mla | None:
    """DeepSeek's multi-head latent attention, for the families whose code builds it."""
    if "latent" not in fam.get("models", ()):
        return None
    return Mla(q_rank=_int(cfg, where, "q_lora_rank"), kv_rank=_required(cfg, where, "kv_lora_rank"),
               nope=_required(cfg, where, "qk_nope_head_dim"), rope=_required(cfg, where, "qk_rope_head_dim"),
               v=_required(cfg, where, "v_head_dim"))


def rope_layers(cfg: dict, where: str, family: str, fam: dict, n_layer: int) -> list[bool]:
    """Per layer, whether it rotates with RoPE. transformers (Llama 4, SmolLM3): `use_rope = no_rope_layers[i]`,
    so 1 marks a RoPE layer and 0 a NoPE one; without the list, every `no_rope_layer_interval`-th layer is NoPE."""
    if fam["pos"] != "rope":
        return [False] * n_layer
    if "nope" not in fam.get("models", ()):
        return [True] * n_layer
    flags = cfg.get("no_rope_layers")
    if flags:
        if not isinstance(flags, list) or len(flags) < n_layer or any(f not in (0, 1) for f in flags):
            raise ConfigError(f"{where}no_rope_layers: must list 0 or 1 for each of the {n_layer} layers")
        return [bool(f) for f in flags[:n_layer]]
    interval = _int(cfg, where, "no_rope_layer_interval", default=4 if family == "llama4_text" else None)
    if interval is None:
        raise ConfigError(f"{where}no_rope_layers: missing (and no no_rope_layer_interval)")
    return [(i + 1) % interval != 0 for i in range(n_layer)]


def layer_chunks(cfg: dict, where: str, rope: list[bool], n_layer: int) -> list[int | None]:
    """Llama 4: the chunked-attention layers (layer_types, else the RoPE layers) keep at most one chunk."""
    chunk = _int(cfg, where, "attention_chunk_size")
    if chunk is None:
        return [None] * n_layer
    types = cfg.get("layer_types")
    if isinstance(types, list):
        if len(types) != n_layer:
            raise ConfigError(f"{where}layer_types: {len(types)} entries for num_hidden_layers={n_layer}")
        return [chunk if t == "chunked_attention" else None for t in types]
    return [chunk if r else None for r in rope]


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


def _family(raw: dict) -> tuple[dict, str, str, dict, bool]:
    """(the language model's config, its prefix, its family, how the family builds, whether this tool knows it)."""
    cfg, prefix, family = text_part(raw)
    if family in FAMILIES:
        return cfg, prefix, family, FAMILIES[family], True
    archs = raw.get("architectures") or []
    if not (any(str(a).endswith("ForCausalLM") for a in archs) and "hidden_size" in cfg):
        raise ConfigError(f"model_type={family!r}: not a family this reads ({', '.join(FAMILIES)})")
    return cfg, prefix, family, dict(FAMILIES["llama"], defaults={}), False   # an unknown Llama-like decoder


def _given(cfg: dict, where: str, defaults: dict, used: list[str], *names: str) -> int:
    """The first of `names` the file sets, else the family's default (its name added to `used`), else an error."""
    v = _int(cfg, where, *names)
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
    kv = _int(cfg, where, "num_key_value_heads")
    if kv is None:
        kv = defaults.get("num_key_value_heads", n_head)
        if "num_key_value_heads" in defaults:
            used.append("num_key_value_heads")
    if n_head % kv:
        raise ConfigError(f"{where}num_attention_heads={n_head}, num_key_value_heads={kv}: "
                          "the query heads must split evenly among the key/value heads")
    hd = _int(cfg, where, "head_dim")
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
    cfg, prefix, family, fam, known = _family(raw)
    d, used = fam["defaults"], []
    get = lambda *names: _given(cfg, prefix, d, used, *names)           # noqa: E731
    n_layer = get("num_hidden_layers", "n_layer")
    hidden = get("hidden_size", "n_embd")
    n_head = get("num_attention_heads", "n_head")
    kv, hd, head_dim_read = _heads(cfg, prefix, d, used, hidden, n_head)
    inter = _int(cfg, prefix, "intermediate_size", "n_inner") or 4 * hidden
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
    if family == "llama4_text" and _flag(cfg, prefix, "use_qk_norm", True):
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
