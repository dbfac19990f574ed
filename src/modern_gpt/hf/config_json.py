"""A config.json read as JSON, and its values checked one at a time.

`read_config(path)` is the one way a file becomes a mapping (explain, import-config and the weight import all go
through it), so a missing, unreadable or non-JSON file is the same one-line DataError everywhere. `int_field` and
`bool_field` read one value with its name in the error (`where` is the prefix, 'text_config.' for a nested text
model); the readers of the dense shape (arch.py), the layers (layers.py) and the experts (moe_mla.py) share them.
Pure Python and json: nothing here imports torch or transformers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, DataError


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


def int_field(cfg: dict, where: str, *names: str, default: Any = None) -> int | None:
    """The first of `names` the file sets (not null) as a positive integer, else `default`; a bool, a float or a
    number below 1 is a one-line ConfigError naming the field."""
    for n in names:
        if n in cfg and cfg[n] is not None:
            v = cfg[n]
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"{where}{n}={v!r}: must be an integer")
            if v < 1:
                raise ConfigError(f"{where}{n}={v}: must be a positive integer")
            return v
    return default


def bool_field(cfg: dict, where: str, name: str, default: bool) -> bool:
    """A true/false field, `default` when absent or null; anything but a JSON boolean is a one-line ConfigError."""
    v = cfg.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ConfigError(f"{where}{name}={v!r}: must be true or false")
    return v
