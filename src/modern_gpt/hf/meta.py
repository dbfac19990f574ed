"""Parameters counted by transformers: the model it builds from a config.json on the meta device (shapes, no weights).

The tests check explain's arithmetic (counts.py) against these counts for every family it models; for a family it
does not model, explain prints these counts instead, labelled as transformers'. Each parameter goes to one of
explain's parts by its module names (`part`), so the two split a model alike. torch and transformers are imported
only when a model is built: importing this module imports neither.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

# part -> its name in explain's lines: explain's parts (counts.param_counts), then the two only a built model has
PARTS = {"embedding": "embedding", "attention": "attention", "mlp": "MLP", "experts": "experts",
         "shared_experts": "shared experts", "router": "router", "norms": "norms", "lm_head": "lm_head",
         "vision": "vision tower and projector", "other": "other"}
EMBEDDINGS = ("embed_tokens", "embed_in", "wte", "wpe", "word_embeddings", "embeddings", "embed_positions",
              "position_embeddings")
HEADS = ("lm_head", "embed_out")


def part(name: str) -> str:
    """The part a parameter belongs to, by its dotted name: a norm's gain is in norms wherever it sits (q_norm inside
    attention too), a router is a module named gate or router, an expert's weights sit under experts."""
    pieces = name.split(".")
    if any("vision" in p or "multi_modal" in p for p in pieces):
        return "vision"                     # a multimodal model's vision tower and its projector
    if pieces[0] in HEADS:
        return "lm_head"
    if any(p in EMBEDDINGS for p in pieces):
        return "embedding"
    if any("norm" in p or p.startswith("ln_") for p in pieces):
        return "norms"
    if any(p.startswith("shared_expert") for p in pieces):
        return "shared_experts"
    if "experts" in pieces:
        return "experts"
    if "gate" in pieces or "router" in pieces:
        return "router"
    if any("attn" in p or "attention" in p for p in pieces):
        return "attention"
    if any(p in ("mlp", "feed_forward", "ffn") for p in pieces):
        return "mlp"
    return "other"


@dataclass(frozen=True)
class MetaCount:
    """What transformers built: its class, the parameters by part (each counted once: a tied head is the embedding)."""
    model: str
    parts: dict[str, int]                   # by PARTS (0 where the model has none)
    other: tuple[str, ...]                  # the module names of the parameters in no named part
    tied: bool

    @property
    def total(self) -> int:
        return sum(self.parts.values())


def meta_model(config: dict[str, Any]):
    """The model transformers builds from a config.json on the meta device (no memory, no weights), or None where it
    builds none: transformers not installed, a model_type it does not know, a config its code refuses."""
    try:
        import torch
        import transformers
        from transformers.utils import logging
    except ImportError:
        return None
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()           # its notes on the file's token ids and the like are not ours to print
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            conf = transformers.CONFIG_MAPPING[config.get("model_type")].from_dict(config)
            with torch.device("meta"):
                return transformers.AutoModelForCausalLM.from_config(conf)
    except Exception:                       # its config and model code refuse in many ways: each means no model
        return None
    finally:
        logging.set_verbosity(verbosity)


def _module(name: str) -> str:
    """The module a parameter belongs to, in words: the one inside a numbered layer (a Mamba layer's 'mixer'), else
    its dotted path."""
    pieces = name.split(".")[:-1]
    numbered = [i for i, q in enumerate(pieces) if q.isdigit()]
    return pieces[numbered[-1] + 1] if numbered and numbered[-1] + 1 < len(pieces) else ".".join(pieces) or name


def meta_count(config: dict[str, Any]) -> MetaCount | None:
    """The parameters of the model transformers builds from `config`, by part; None where it builds none."""
    model = meta_model(config)
    return None if model is None else parts_of(model)


def parts_of(model) -> MetaCount:
    """A built model's parameters by part."""
    parts = dict.fromkeys(PARTS, 0)
    other = set()
    for name, p in model.named_parameters():        # each shared tensor once, under its first name
        where = part(name)
        parts[where] += p.numel()
        if where == "other":
            other.add(_module(name))
    out, emb = model.get_output_embeddings(), model.get_input_embeddings()
    tied = out is not None and emb is not None and out.weight is emb.weight
    return MetaCount(type(model).__name__, parts, tuple(sorted(other)), tied)
