"""Strict validation of settings: types by table, choices by table, one-line errors naming the field.

DVC reads params.yaml as YAML 1.2 and PyYAML as 1.1, so nothing here guesses: a bool is not an int,
'yes' is not a bool, and a field annotated `int | None` takes an integer or null, nothing else.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Callable, Mapping

from ..core.errors import ConfigError, DataError


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# annotation → (accepts the value?, what to say is allowed, how to store it)
TYPES: dict[type, tuple[Callable[[Any], bool], str, Callable[[Any], Any]]] = {
    bool: (lambda v: isinstance(v, bool), "true or false", bool),
    int: (_is_int, "an integer", int),
    float: (_is_number, "a number", float),
    str: (lambda v: isinstance(v, str), "a string", str),
}


def field_rule(cls: type, name: str, annotation: Any) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any], bool]:
    """(check, allowed, convert, optional) for one annotated field: `T` or `T | None` with T in TYPES."""
    args = typing.get_args(annotation)
    optional = typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args
    base = next(a for a in args if a is not type(None)) if optional and len(args) == 2 else annotation
    if base not in TYPES:
        raise TypeError(f"{cls.__name__}.{name}: annotation {annotation!r} is not one of "
                        f"{', '.join(t.__name__ for t in TYPES)} (or one of them | None)")
    check, allowed, convert = TYPES[base]
    return check, allowed + (" or null" if optional else ""), convert, optional


def check_types(cfg: Any) -> None:
    """Check every field of a dataclass instance against its annotation; store floats as float."""
    hints = typing.get_type_hints(type(cfg))
    for f in dataclasses.fields(cfg):
        if f.metadata.get("untyped"):          # checked by the class itself (ModelConfig.changes)
            continue
        check, allowed, convert, optional = field_rule(type(cfg), f.name, hints[f.name])
        value = getattr(cfg, f.name)
        if value is None and optional:
            continue
        if not check(value):
            raise ConfigError(f"{f.name}={value!r}: must be {allowed}")
        object.__setattr__(cfg, f.name, convert(value))


def check_choice(name: str, value: Any, allowed: Mapping[str, Any] | tuple[str, ...]) -> None:
    """value must be a key of the table (or one of the names): the same table that builds the thing."""
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{name}={value!r}: allowed values are {', '.join(allowed)}")


def check_positive(cfg: Any, *names: str) -> None:
    for name in names:
        if getattr(cfg, name) < 1:
            raise ConfigError(f"{name}={getattr(cfg, name)}: must be a positive integer")


def from_dict(cls, d: Any, where: str):
    """cls(**d) with unknown keys refused and every error prefixed by the section: 'model.norm=...'."""
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where}: must be a mapping of settings, got {type(d).__name__}")
    check_keys(d, where, [f.name for f in dataclasses.fields(cls)])
    try:
        return cls(**d)
    except ConfigError as e:
        raise ConfigError(f"{where}.{e}") from None


def check_keys(section: Mapping, where: str, allowed: list[str], required: tuple[str, ...] = ()) -> None:
    for key in section:
        if key not in allowed:
            raise ConfigError(f"{where}.{key}: unknown key; allowed keys are {', '.join(allowed)}")
    for key in required:
        if key not in section:
            raise ConfigError(f"{where}.{key}: missing")


def check_number(where: str, value: Any, low: float, high: float, *, integer: bool = False,
                 closed_high: bool = False) -> None:
    """low <= value < high (or <= high), an integer when asked; the message says the allowed range."""
    ok = (_is_int if integer else _is_number)(value) and low <= value and (
        value <= high if closed_high else value < high)
    if not ok:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{where}={value!r}: must be {kind} in [{low}, {high}{']' if closed_high else ')'}")


def seed_list(where: str, seeds: Any) -> list[int]:
    if not isinstance(seeds, list):
        raise ConfigError(f"{where}: must be a list of seeds, got {seeds!r}")
    for s in seeds:
        if not _is_int(s) or s < 0:
            raise ConfigError(f"{where}: {s!r} is not a non-negative integer")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{where}: {seeds} lists a seed twice")
    return seeds


def check_split_sizes(train: int | None = None, val: int | None = None, *, block_size: int) -> None:
    """Each split needs one window of block_size tokens plus its next-token target."""
    for name, n in (("train", train), ("val", val)):
        if n is not None and n < block_size + 1:
            raise DataError(
                f"corpus: the {name} split has {n:,} tokens; block_size={block_size} needs at least "
                f"{block_size + 1:,} (use a longer corpus, a smaller block_size or another val_fraction)"
            )
