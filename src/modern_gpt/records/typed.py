"""The one strict way a file between stages becomes its type: `build(cls, d, where)` takes a dict holding exactly
cls's fields and builds cls, its nested records (and tuples of them) alike, an enum from its value, and a config
(config/: ModelConfig, TrainConfig, ServeConfig) by its own checks. A file of another version (a key missing or
unknown, a value out of range) is a one-line DataError that says to rerun the stage that wrote it."""

from __future__ import annotations

import dataclasses
from enum import Enum
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from ..core.errors import ConfigError, DataError

T = TypeVar("T")


def build(cls: type[T], d: Any, where: str) -> T:
    """cls from `d`, every field checked (see the module's docstring); `where` names the file in every error, and
    the field within it: 'serve record.settings: batch=0: must be ...'."""
    names = [f.name for f in dataclasses.fields(cls)]
    if not isinstance(d, dict) or set(d) != set(names):
        got = sorted(d) if isinstance(d, dict) else type(d).__name__
        raise DataError(f"{where}: not a {cls.__name__} of this version (keys {got}); rerun it: dvc repro")
    hints = get_type_hints(cls)
    values = {name: _value(hints[name], d[name], f"{where}.{name}") for name in names}
    try:
        return cls(**values)
    except ConfigError as e:                        # a config's value out of range: another version's file
        raise DataError(f"{where}: {e}; rerun it: dvc repro") from None


def _value(hint: Any, value: Any, where: str) -> Any:
    if isinstance(hint, type) and hasattr(hint, "from_record"):     # a class with keys of its own (ModelConfig's
        return hint.from_record(value, where)                       # changes switched on)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return build(hint, value, where)
    if isinstance(hint, type) and issubclass(hint, Enum):
        if value not in {m.value for m in hint}:
            raise DataError(f"{where}={value!r}: not one of {', '.join(m.value for m in hint)}; rerun it: dvc repro")
        return hint(value)
    if get_origin(hint) in (Union, UnionType) and value is None and type(None) in get_args(hint):
        return None
    if get_origin(hint) in (Union, UnionType):
        hint = next(a for a in get_args(hint) if a is not type(None))     # X | None: only such unions are used
        return _value(hint, value, where)
    if get_origin(hint) is tuple:
        if not isinstance(value, (list, tuple)):
            raise DataError(f"{where}={value!r}: not a list; rerun it: dvc repro")
        item = get_args(hint)[0]
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if get_origin(hint) is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise DataError(f"{where}={value!r}: not a mapping of names; rerun it: dvc repro")
        item = get_args(hint)[1]
        return {k: _value(item, v, f"{where}.{k}") for k, v in value.items()}
    if hint in _PLAIN and not _PLAIN[hint][0](value):
        raise DataError(f"{where}={value!r}: not {_PLAIN[hint][1]}; rerun it: dvc repro")
    return value


_PLAIN = {                                          # JSON's values: a float field may hold a whole number
    bool: (lambda v: isinstance(v, bool), "true or false"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    float: (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    str: (lambda v: isinstance(v, str), "a string"),
}
