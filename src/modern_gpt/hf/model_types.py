"""The families a config.json can be: how each one's transformers code builds the model, and which part of a file
is the language model.

`MODEL_TYPES` holds, per model_type, what config.json never says (norm, placement, positions, biases, QK-norm, the
features the family's arithmetic models) and the defaults of fields a file may leave out. `text_part` finds the
causal language model in a file (a multimodal one's text_config) or refuses an encoder, a vision model or another
task; `family_of` adds the family's entry, reading an unknown decoder the Llama way. Pure Python.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigError

# Per family: how its code builds the model (what config.json never says) and the defaults of fields
# a config.json may leave out (transformers' class defaults; checked against transformers 5.24).
MODEL_TYPES: dict[str, dict[str, Any]] = {
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
    # mixture of experts (`moe` names the way the family lays its experts out: see moe_mla.moe_settings)
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


def text_part(raw: dict) -> tuple[dict, str, str]:
    """(the language model's config, its prefix, its model_type), checking it is a causal LM."""
    mt = raw.get("model_type")
    archs = raw.get("architectures") or []
    if not isinstance(archs, list):
        archs = [archs]
    if mt in NOT_CAUSAL or (archs and not any(str(a).endswith(CAUSAL_SUFFIXES) for a in archs)):
        raise ConfigError(f"model_type={mt!r}, architectures={archs}: not a causal (decoder-only) language model; "
                          f"this explains text generators ({', '.join(MODEL_TYPES)})")
    if mt in MULTIMODAL or "text_config" in raw:
        tc = raw.get("text_config")
        if not isinstance(tc, dict):
            raise ConfigError(f"model_type={mt!r}: a multimodal config needs a text_config mapping")
        return tc, "text_config.", tc.get("model_type") or MULTIMODAL.get(mt, mt)
    if mt is None and "vision_config" in raw:
        raise ConfigError("vision-only config (vision_config, no text model): not a causal language model")
    return raw, "", mt


def family_of(raw: dict) -> tuple[dict, str, str, dict, bool]:
    """(the language model's config, its prefix, its family, how the family builds, whether this tool knows it)."""
    cfg, prefix, family = text_part(raw)
    if family in MODEL_TYPES:
        return cfg, prefix, family, MODEL_TYPES[family], True
    archs = raw.get("architectures") or []
    if not (any(str(a).endswith("ForCausalLM") for a in archs) and "hidden_size" in cfg):
        raise ConfigError(f"model_type={family!r}: not a family this reads ({', '.join(MODEL_TYPES)})")
    return cfg, prefix, family, dict(MODEL_TYPES["llama"], defaults={}), False   # an unknown Llama-like decoder
