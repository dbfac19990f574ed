"""Changes to the design, each declared once: its switch, the values it takes, its default (the design without it),
its label, what the Hugging Face bridge does with it, and its model code.

Two kinds, one declaration (`Change`):
- built-in switches (builtin.py, which also finds any change by name: `declared`, `every`): fields of ModelConfig or TrainConfig, their code inline in nn/model.py and
  training/, so that the model still reads top to bottom;
- a change of a new kind: one file here, `changes/<name>.py`, holding `CHANGE = Change(name="<name>", ...)`. Its
  switch is not a ModelConfig field: a config lists it only where it is on (configs/<row>.json names what a row
  switches on), and its `install(gpt, value)` plugs its code into the model at nn/model.py's named points.

Torch-free: reading params needs no torch. A run imports only the change files its own config switches on
(`plugged`), never the others, so a new file here retrains no existing run (docs/own-change.md).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import ConfigError

HERE = Path(__file__).resolve().parent
RESERVED = ("builtin",)          # this folder's files that are not a change of a new kind


@dataclass(frozen=True)
class Change:
    name: str                                  # the switch, as params.yaml and configs/<row>.json spell it
    values: tuple                              # the values it takes (a built-in's numeric field: examples of them)
    default: Any                               # the design without it
    labels: Mapping[Any, str]                  # value → its name in a row's label: '+ parallel block'
    hf: Mapping[str, Any] | None = None        # None: no Hugging Face class computes it (export refused while on);
                                               # built-ins: {'rule': 'config/hf_class.py'}, whose allow-list maps them
    install: Callable[[Any, Any], None] | None = None   # model code: install(gpt, value), blocks built, before init
    check: Callable[[Any], None] | None = None  # refuses the configs it cannot run with (a one-line ConfigError)
    section: str = "model"                     # params.yaml's section of the switch: model, or train (optimizer)
    source: str = field(default="", compare=False)     # the file that declares it, relative to src/

    @property
    def tried(self) -> tuple:
        """The values that switch it on: every value but the default."""
        return tuple(v for v in self.values if v != self.default)

    def label(self, value: Any) -> str:
        return self.labels.get(value, f"{self.name}={value}")

    def check_value(self, value: Any) -> None:
        """One of `values`; a bool is not 1, 1 is not true."""
        if not any(value == v and type(value) is type(v) for v in self.values):
            allowed = ", ".join(_yaml(v) for v in self.values)
            raise ConfigError(f"{self.name}={_yaml(value)}: allowed values are {allowed} ({self.source})")


def _yaml(v: Any) -> str:
    return {True: "true", False: "false", None: "null"}.get(v, repr(v)) if isinstance(v, (bool, type(None))) else repr(v)


def _source(path: str | None) -> str:
    return str(Path(path).resolve().relative_to(HERE.parents[1])) if path else ""


@functools.cache
def plugged(name: str) -> Change | None:
    """The change of a new kind called `name` (changes/<name>.py's CHANGE), or None: no such file. Imports that file
    alone."""
    if not name.isidentifier() or name in RESERVED or importlib.util.find_spec(f"{__name__}.{name}") is None:
        return None
    module = importlib.import_module(f"{__name__}.{name}")
    change = getattr(module, "CHANGE", None)
    if not isinstance(change, Change) or change.name != name:
        raise TypeError(f"{_source(module.__file__)}: must define CHANGE = Change(name={name!r}, ...)")
    if change.install is None:
        raise TypeError(f"{_source(module.__file__)}: a change of a new kind needs its model code (install=...)")
    if change.hf is not None:
        raise TypeError(f"{_source(module.__file__)}: hf={change.hf!r}: a change of a new kind maps to no Hugging Face "
                        "class here (hf=None: export refuses it); a mapping is an entry of config/hf_class.py's KNOWN")
    if change.default not in change.values or not change.tried:
        raise TypeError(f"{_source(module.__file__)}: default={change.default!r} must be one of values={change.values}, "
                        "and another value must switch it on")
    object.__setattr__(change, "source", _source(module.__file__))
    return change


def plugged_names() -> tuple[str, ...]:
    """Every change of a new kind this folder holds, by file name, sorted."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name not in RESERVED))


def change_md5(change: Change) -> str:
    return hashlib.md5((HERE.parents[1] / change.source).read_bytes()).hexdigest()
