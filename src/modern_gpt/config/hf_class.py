"""Which Hugging Face class computes exactly what a config computes: the rule `modern-gpt export` follows and the
report's provenance line quotes (the plan records it per row). A rule about a ModelConfig, torch-free, beside it:
the plan (pipeline/) and the bridge (hf/) both import it from here, so the plan stage needs nothing of the bridge.
"""

from __future__ import annotations

import dataclasses

from .. import changes
from .model import ModelConfig
from ..core.errors import ConfigError

GPT2, LLAMA, MISTRAL, QWEN3 = "GPT2LMHeadModel", "LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"
HF_CLASSES = (GPT2, LLAMA, MISTRAL, QWEN3)


# The allow-list: the ModelConfig fields these rules and the bridge (hf/config_map.py, hf/weights.py) know. A field
# not listed (a new one) is refused unless at its default; a change of a new kind switched on is refused by name.
KNOWN = ("vocab_size", "block_size", "n_layer", "n_head", "n_kv_head", "n_embd", "head_dim", "dropout", "norm",
         "norm_eps", "norm_placement", "pos", "rope_base", "mlp", "mlp_multiple", "mlp_hidden", "bias", "qk_norm",
         "tie_embeddings", "logit_softcap", "attn_window", "global_every")


def hf_class(cfg: ModelConfig) -> str:
    """The name of the HF class that computes exactly what `cfg` computes, or a one-line ConfigError."""
    _refuse_what_no_rule_knows(cfg)
    _refuse_what_no_class_computes(cfg)
    return _learned_positions_class(cfg) if cfg.pos == "learned" else _rope_class(cfg)


def _refuse_what_no_rule_knows(cfg: ModelConfig) -> None:
    """A change of a new kind switched on, or a field these rules do not list away from its default."""
    for name, value in cfg.changes:
        change = changes.plugged(name)
        raise ConfigError(f"{name}={str(value).lower() if isinstance(value, bool) else value}: no Hugging Face class "
                          f"here computes it ({change.source} declares hf=None)")
    for f in dataclasses.fields(cfg):
        if f.name not in KNOWN and f.name != "changes" and getattr(cfg, f.name) != f.default:
            raise ConfigError(f"{f.name}={getattr(cfg, f.name)!r}: no Hugging Face class here is known to compute it "
                              f"(a field of {type(cfg).__module__.replace('.', '/')}.py that config/hf_class.py's "
                              "KNOWN does not list)")


def _refuse_what_no_class_computes(cfg: ModelConfig) -> None:
    """Post-norm, NoPE, a ReLU² MLP and soft-capped logits: none of the four classes has them."""
    if cfg.norm_placement != "pre":
        raise ConfigError(f"norm_placement={cfg.norm_placement!r}: no Hugging Face class here is post-norm "
                          "(GPT-2, Llama and Qwen3 are all pre-norm)")
    if cfg.pos == "none":
        raise ConfigError("pos='none' (NoPE): no Hugging Face class here runs without a position signal "
                          "(GPT-2 learns positions, Llama and Qwen3 use RoPE)")
    if cfg.mlp == "relu2":
        raise ConfigError("mlp='relu2': no Hugging Face class here has a ReLU² MLP (GPT-2 uses GELU, "
                          "Llama and Qwen3 SwiGLU)")
    if cfg.logit_softcap > 0:                   # the classes would load and run, with other logits: refuse
        raise ConfigError(f"logit_softcap={cfg.logit_softcap:g}: no Hugging Face class here soft-caps its logits "
                          "(Llama, Qwen3 and GPT-2 do not; Gemma 2's final_logit_softcapping does, but Gemma 2 also "
                          "has a GeGLU MLP, a second norm after each sublayer, embeddings scaled by sqrt(n_embd), "
                          "soft-capped attention scores and sliding-window layers)")


def _learned_positions_class(cfg: ModelConfig) -> str:
    """GPT-2, or a one-line ConfigError naming the flag GPT-2 does not have."""
    if cfg.norm != "layernorm":
        raise ConfigError(f"pos='learned' with norm={cfg.norm!r}: no Hugging Face class here has RMSNorm "
                          "with learned positions")
    if cfg.mlp != "gelu":
        raise ConfigError(f"pos='learned' with mlp={cfg.mlp!r}: no Hugging Face class here has SwiGLU "
                          "with learned positions")
    if not cfg.bias:
        raise ConfigError("pos='learned' with bias=False: GPT-2, the class with learned positions, "
                          "always has biases")
    if cfg.n_kv_head != cfg.n_head:
        raise ConfigError(f"n_kv_head={cfg.n_kv_head} with pos='learned': GPT-2, the class with learned "
                          f"positions, has one K/V head per query head (n_head={cfg.n_head})")
    if cfg.qk_norm:
        raise ConfigError("qk_norm=True with pos='learned': GPT-2, the class with learned positions, "
                          "has no QK-norm")
    if cfg.head_dim * cfg.n_head != cfg.n_embd:
        raise ConfigError(f"head_dim={cfg.head_dim} with pos='learned': GPT-2's heads are n_embd / n_head "
                          f"= {cfg.n_embd // cfg.n_head} wide")
    if cfg.attn_window:
        raise ConfigError(f"attn_window={cfg.attn_window} with pos='learned': GPT-2, the class with learned "
                          "positions, attends over the whole context; sliding windows export with RoPE, "
                          "RMSNorm and SwiGLU (Mistral, or Qwen3 with qk_norm), else use attn_window=0")
    return GPT2


def _rope_class(cfg: ModelConfig) -> str:
    """Llama, Mistral (a window in every layer) or Qwen3 (QK-norm), or a one-line ConfigError naming the flag."""
    if cfg.norm != "rmsnorm":
        raise ConfigError(f"pos='rope' with norm={cfg.norm!r}: no Hugging Face class here has LayerNorm with RoPE "
                          "(Llama and Qwen3 use RMSNorm)")
    if cfg.mlp != "swiglu":
        raise ConfigError(f"pos='rope' with mlp={cfg.mlp!r}: no Hugging Face class here has a GELU MLP with RoPE "
                          "(Llama and Qwen3 use SwiGLU)")
    if cfg.qk_norm:
        if cfg.bias:
            raise ConfigError("bias=True with qk_norm=True: Qwen3, the class with QK-norm, has no MLP biases")
        return QWEN3                 # any window pattern: layer_types
    if cfg.attn_window:              # Llama-like with a window: Mistral, whose every layer slides, or nothing
        if cfg.global_every:
            raise ConfigError(f"global_every={cfg.global_every} with attn_window={cfg.attn_window} and qk_norm=False:"
                              " Mistral, the sliding-window class without QK-norm, slides in every layer; use "
                              "global_every=0 (every layer local), or qk_norm=True (Qwen3's layer_types mix full "
                              "and sliding layers)")
        if cfg.bias:
            raise ConfigError(f"attn_window={cfg.attn_window} with bias=True: Mistral, the sliding-window class "
                              "without QK-norm, has no biases; use bias=False or attn_window=0")
        return MISTRAL
    return LLAMA                     # bias=True maps to attention_bias=mlp_bias=True (RMSNorm has no bias)


def hf_name(cfg: ModelConfig) -> str | None:
    """hf_class(cfg), or None where no class computes it (the plan's per-row record)."""
    try:
        return hf_class(cfg)
    except ConfigError:
        return None
