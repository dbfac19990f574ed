"""A whole model either way, in memory: `to_hf(model)` builds the HF class computing what our GPT computes, and
`from_hf(hf_model)` builds our GPT from one. Each is the class's config (config_map.py) filled with the converted
state dict (weights.py); transformers is imported only when called.
"""

from __future__ import annotations

from ..nn import GPT
from ..nn.checkpoint import load_into
from ..config.hf_class import hf_class
from .config_map import config_from_hf, hf_config, require_transformers
from .weights import IGNORED_SUFFIXES, from_hf_state, to_hf_state


def to_hf(model: GPT, attn_implementation: str | None = None):
    """An HF model (GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM or Qwen3ForCausalLM) computing what
    `model` computes."""
    transformers = require_transformers()
    cfg = model.cfg
    name = hf_class(cfg)
    conf = hf_config(cfg, attn_implementation)
    dtype = next(model.parameters()).dtype
    hf = getattr(transformers, name)(conf).to(dtype)
    state = to_hf_state(cfg, {k: v.detach() for k, v in model.state_dict().items()})
    missing, unexpected = hf.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith(IGNORED_SUFFIXES)]
    if missing or unexpected:                           # a layout bug, not a user error
        raise RuntimeError(f"{name}: missing {missing[:3]}, unexpected {unexpected[:3]}")
    hf.tie_weights()
    return hf.eval()


def from_hf(hf_model, approximate_gelu: bool = False) -> GPT:
    """Our GPT computing what an HF GPT-2, Llama, Mistral or Qwen3 model computes (in its dtype)."""
    cfg = config_from_hf(hf_model.config, approximate_gelu)
    sd = {k: v.detach() for k, v in hf_model.state_dict().items()}
    dtype = hf_model.get_input_embeddings().weight.dtype
    return load_into(cfg, from_hf_state(cfg, sd), dtype)
