"""The corpus sections of params.yaml (generate, data, tokenizer), checked strictly, one line per mistake."""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigError
from ..config.validate import check_choice, check_keys, check_number
from .tokenizers import TOKENIZERS


def _mapping(name: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{name}: must be a mapping, got {value!r}")
    return value


def generate_settings(section: Any) -> dict:
    """generate: chars (>= 1) and seed (>= 0) of the bundled corpus."""
    g = _mapping("generate", section)
    check_keys(g, "generate", ["chars", "seed"], ("chars", "seed"))
    for key, low in (("chars", 1), ("seed", 0)):
        v = g[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ConfigError(f"generate.{key}={v!r}: must be an integer >= {low}")
    return dict(g)


def data_settings(section: Any) -> dict:
    """data: corpus (a path) and val_fraction (strictly between 0 and 1)."""
    d = _mapping("data", section)
    check_keys(d, "data", ["corpus", "val_fraction"], ("corpus", "val_fraction"))
    if not isinstance(d["corpus"], str) or not d["corpus"]:
        raise ConfigError(f"data.corpus={d['corpus']!r}: must be a path to a text file or folder")
    vf = d["val_fraction"]
    if isinstance(vf, bool) or not isinstance(vf, (int, float)) or not 0 < vf < 1:
        raise ConfigError(f"data.val_fraction={vf!r}: must be a number between 0 and 1 (exclusive)")
    return {"corpus": d["corpus"], "val_fraction": float(vf)}


def tokenizer_settings(section: Any) -> dict:
    """tokenizer: kind (a key of TOKENIZERS), and vocab_size (>= 257) for bpe."""
    t = _mapping("tokenizer", section)
    check_keys(t, "tokenizer", ["kind", "vocab_size"], ("kind",))
    check_choice("tokenizer.kind", t["kind"], TOKENIZERS)
    if t["kind"] == "bpe":
        check_number("tokenizer.vocab_size", t.get("vocab_size"), 257, 1 << 20, integer=True)
    return dict(t)
