"""Our ModelConfig to a Hugging Face config and back: GPT-2, Llama, Mistral and Qwen3.

Four HF classes cover the ladder's end points: the Step 1 baseline is GPT-2 (exact GELU), the modern design is
Llama (pre-norm RMSNorm, RoPE, SwiGLU, any number of K/V heads), and the modern design with QK-norm is Qwen3.
`hf_class(cfg)` (config/hf_class.py, the plan's rule too) names the class a config maps to, or raises a one-line
`ConfigError` naming the flag no class here represents. The head goes either way in all of them: tie_embeddings is
tie_word_embeddings. The way back reads the file with arch.normalise, the one reader of a config.json, and refuses
here what our model cannot compute exactly, by the file's own flags.

Sliding windows (attn_window, global_every): Qwen3 takes any of our patterns as `layer_types` (each layer
"sliding_attention" or "full_attention") with `sliding_window` and `use_sliding_window: true`; Mistral is
Llama with one `sliding_window` in every layer (its weights are Llama's, no biases), so a windowed row without
QK-norm is Mistral when every layer is local (global_every=0) and is refused otherwise. The window means the
same on both sides: transformers' mask keeps key j for query i when `kv_idx > q_idx - sliding_window`
(masking_utils.sliding_window_overlay), i.e. 0 <= i - j < sliding_window, the query's own token included, as
ours; its generation cache keeps the last sliding_window - 1 tokens beside the new one. So sliding_window =
attn_window, no shift.

`transformers` is imported only when a function needs it (`require_transformers`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..config import ModelConfig
from ..core.errors import ConfigError
from ..config.hf_class import GPT2, HF_CLASSES, LLAMA, MISTRAL, QWEN3, hf_class
from .arch import Arch, normalise
from .layers import layer_list, window_flags

# model_type → the HF class a config.json without `architectures` is read as (how each builds: MODEL_TYPES)
CLASS_OF_MODEL_TYPE = {"gpt2": GPT2, "llama": LLAMA, "mistral": MISTRAL, "qwen3": QWEN3}


def require_transformers():
    """The transformers module, or a one-line error saying how to get it."""
    try:
        import transformers
    except ImportError:
        raise ConfigError("the Hugging Face bridge needs transformers and safetensors: "
                          "pip install transformers safetensors") from None
    return transformers


def hf_config(cfg: ModelConfig, attn_implementation: str | None = None):
    """The HF config object for `cfg` (the head tied or not as cfg.tie_embeddings says, no special tokens)."""
    transformers = require_transformers()
    name = hf_class(cfg)
    extra = {"attn_implementation": attn_implementation} if attn_implementation else {}
    common = dict(vocab_size=cfg.vocab_size, tie_word_embeddings=cfg.tie_embeddings, bos_token_id=None,
                  eos_token_id=None, pad_token_id=None, architectures=[name], **extra)
    if name == GPT2:
        return transformers.GPT2Config(
            n_positions=cfg.block_size, n_embd=cfg.n_embd, n_layer=cfg.n_layer, n_head=cfg.n_head,
            n_inner=cfg.hidden, activation_function="gelu", layer_norm_epsilon=cfg.norm_eps,
            resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout, **common)
    kw = dict(hidden_size=cfg.n_embd, intermediate_size=cfg.hidden, num_hidden_layers=cfg.n_layer,
              num_attention_heads=cfg.n_head, num_key_value_heads=cfg.n_kv_head, head_dim=cfg.head_dim,
              hidden_act="silu", max_position_embeddings=cfg.block_size, rms_norm_eps=cfg.norm_eps,
              rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_base},
              attention_bias=cfg.bias, attention_dropout=cfg.dropout, **common)
    if name == LLAMA:
        return transformers.LlamaConfig(mlp_bias=cfg.bias, **kw)
    if name == MISTRAL:                                  # no bias fields: Mistral has none (hf_class checked)
        kw.pop("attention_bias")
        return transformers.MistralConfig(sliding_window=cfg.attn_window, **kw)
    if not cfg.attn_window:
        return transformers.Qwen3Config(use_sliding_window=False, **kw)
    # layer_types is what transformers 5 reads; max_window_layers=0 (sliding from layer 0 on) is what older
    # versions without layer_types would read, right for global_every=0 (layer 1 is always local here)
    return transformers.Qwen3Config(
        use_sliding_window=True, sliding_window=cfg.attn_window, max_window_layers=0,
        layer_types=["full_attention" if w is None else "sliding_attention" for w in cfg.windows], **kw)


def arch_of(conf: dict) -> str:
    """The HF class a config.json (or a config object's to_dict()) names, or a one-line ConfigError."""
    archs = conf.get("architectures") or []
    for a in archs:
        if a in HF_CLASSES:
            return a
    model_type = conf.get("model_type")
    if not archs and model_type in CLASS_OF_MODEL_TYPE:
        return CLASS_OF_MODEL_TYPE[model_type]
    raise ConfigError(f"architectures={archs} (model_type={model_type!r}): import knows "
                      f"{', '.join(HF_CLASSES)} only")


def config_from_hf(conf: Any, approximate_gelu: bool = False) -> ModelConfig:
    """Our ModelConfig for an HF config (object or config.json dict); refuses what we cannot compute.

    approximate_gelu: accept GPT-2's tanh GELU ('gelu_new', the real GPT-2 checkpoints) and run it as
    exact GELU; logits then differ slightly from HF's. tie_word_embeddings (left out: GPT-2 ties, Llama and
    Qwen3 do not) becomes tie_embeddings.
    """
    conf = conf if isinstance(conf, dict) else conf.to_dict()     # a transformers config object: its dict
    arch = arch_of(conf)                                # the class first: normalise reads any family
    a = normalise(conf)
    return dataclasses.replace(_config_from_hf(conf, arch, a, approximate_gelu), tie_embeddings=a.tied)


def _config_from_hf(conf: dict, arch: str, a: Arch, approximate_gelu: bool) -> ModelConfig:
    """The numbers come from hf.arch.normalise, the one reader of a config.json (explain's too); what is
    checked here is what our model cannot compute exactly, by the file's own flags."""
    g = conf.get
    if arch == GPT2:
        act = a.activation
        if act != "gelu" and not (approximate_gelu and act in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")):
            raise ConfigError(f"activation_function={act!r}: this model's MLP is exact GELU ('gelu'); "
                              "pass approximate_gelu / --approximate-gelu to accept the tanh approximation")
        if not g("scale_attn_weights", True) or g("scale_attn_by_inverse_layer_idx", False):
            raise ConfigError("scale_attn_weights / scale_attn_by_inverse_layer_idx: this model scales "
                              "attention by 1/sqrt(head_dim) only")
        if g("add_cross_attention", False):
            raise ConfigError("add_cross_attention=True: this model is decoder-only")
        return ModelConfig(
            vocab_size=a.vocab_size, block_size=a.max_positions, n_layer=a.n_layer, n_head=a.n_head,
            n_kv_head=a.n_head, n_embd=a.n_embd, dropout=float(g("attn_pdrop", 0.0)), norm="layernorm",
            norm_eps=a.norm_eps, norm_placement="pre", pos="learned", mlp="gelu",
            mlp_hidden=0 if a.hidden == 4 * a.n_embd else a.hidden, bias=True, qk_norm=False)
    # Llama / Qwen3
    if a.activation != "silu":
        raise ConfigError(f"hidden_act={a.activation!r}: this model's SwiGLU gates with 'silu'")
    if a.rope_scaling is not None:
        rope_type = a.rope_scaling.get("rope_type", a.rope_scaling.get("type"))
        raise ConfigError(f"rope_parameters.rope_type={rope_type!r}: this model has plain RoPE ('default') only")
    if arch == LLAMA and a.biases in ("attn", "mlp"):
        raise ConfigError(f"attention_bias={a.biases == 'attn'}, mlp_bias={a.biases == 'mlp'}: this model's bias "
                          "flag is all or nothing")
    if arch == QWEN3 and a.biases != "none":
        raise ConfigError("attention_bias=True: Qwen3's MLP has no biases and this model's bias flag "
                          "is all or nothing")
    window, every = _window_flags(conf, arch, a)
    base = ModelConfig(
        vocab_size=a.vocab_size, block_size=a.max_positions, n_layer=a.n_layer, n_head=a.n_head,
        n_kv_head=a.n_kv_head, n_embd=a.n_embd, head_dim=a.head_dim,
        dropout=float(g("attention_dropout", 0.0) or 0.0), norm="rmsnorm", norm_eps=a.norm_eps,
        norm_placement="pre", pos="rope", rope_base=a.rope_base, mlp="swiglu", bias=a.biases == "attn_mlp",
        qk_norm=arch == QWEN3, attn_window=window, global_every=every)
    return dataclasses.replace(base, mlp_hidden=0 if a.hidden == base.hidden else a.hidden)


def _window_flags(conf: dict, arch: str, a: Arch) -> tuple[int, int]:
    """(attn_window, global_every) for the windows the HF class builds (a.windows: the file read as that class's
    code reads it), or a one-line ConfigError naming the field whose pattern our two flags cannot say."""
    types = conf.get("layer_types")
    types = types if isinstance(types, list) else []
    if arch == LLAMA:                                    # LlamaForCausalLM has no window, whatever the file says
        for t in types:
            if t != "full_attention":
                raise ConfigError(f"layer_types contains {t!r}: LlamaForCausalLM attends over the whole context "
                                  "(sliding windows import from Mistral or Qwen3)")
        return 0, 0
    for t in types:
        if t not in ("full_attention", "sliding_attention"):
            raise ConfigError(f"layer_types contains {t!r}: this model has full and sliding-window attention only")
    sliding = [i for i, t in enumerate(types, 1) if t == "sliding_attention"]
    if arch == QWEN3 and sliding and not any(a.windows):
        raise ConfigError(f"layer_types: {layer_list(sliding)} sliding_attention but use_sliding_window="
                          f"{conf.get('use_sliding_window', False)}, sliding_window={conf.get('sliding_window')}: "
                          "Qwen3 then has no window for them; set use_sliding_window true and sliding_window")
    if arch == MISTRAL and any(a.windows) and types and len(sliding) != len(types):
        full = [i for i, t in enumerate(types, 1) if t != "sliding_attention"]
        raise ConfigError(f"layer_types: full_attention in {layer_list(full)}, but MistralForCausalLM gives "
                          "every layer sliding_window and does not read layer_types; this imports Mistral with every "
                          "layer sliding (global_every=0) only")
    flags = window_flags(a.windows, a.max_positions)
    if isinstance(flags, str):
        field = "layer_types" if types or arch != QWEN3 else \
            f"max_window_layers={conf.get('max_window_layers', 28)} (no layer_types)"
        raise ConfigError(f"{field}: {flags}")
    return flags
