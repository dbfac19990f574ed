"""Changes to the design, each declared once: its switch, the values it takes, its default (the design without it),
its label, what the Hugging Face bridge does with it, and its model code.

Two kinds, one declaration (`Change`):
- built-in switches (builtin.py, which also finds any change by name: `declared`, `every`): fields of ModelConfig or TrainConfig, their code inline in nn/model.py and
  training/, so that the model still reads top to bottom;
- a change of a new kind: one file here, `changes/<name>.py`, holding `CHANGE = Change(name="<name>", ...)`. Its
  switch is not a ModelConfig field: a config lists it only where it is on (configs/<row>.json names what a row
  switches on), and its `plugs(cfg, value)` returns its modules by plug point (nn/model.py's docstring lists them),
  which GPT puts in their slots.

Torch-free: reading params needs no torch, and the plan and `modern-gpt review` read these files. A change file
splits in two: its top level is the declaration (this module's types, strings and numbers; no torch), and its model
code is the body of its `plugs` function, which imports torch and the model's helpers when a model is built, and
only then. A run imports only the change files its own config switches on (`plugged`), never the others, so a new
file here retrains no existing run (docs/own-change.md).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import ConfigError

HERE = Path(__file__).resolve().parent
RESERVED = ("builtin",)          # this folder's files that are not a change of a new kind


@dataclass(frozen=True)
class DecodeState:
    """What a change keeps per sequence while decoding with the KV cache, besides keys and values: a (keep, width)
    tensor per sequence at its point, one per layer where the point names '{layer}'. The cache allocates it from
    the config (zeros before the first token) and the point reads it as ctx.held(point)."""
    point: str                                 # 'inputs', or 'blocks.{layer}.attn.mix_values': one per layer
    width: str                                 # its last dimension: a ModelConfig field ('n_embd', 'head_dim')
    keep: int = 1                              # past positions it keeps

    def points(self, n_layer: int) -> list[str]:
        return [self.point.format(layer=i) for i in range(n_layer)] if "{layer}" in self.point else [self.point]


EFFECTS = ("lower", "higher", "none", "speed", "memory", "long context", "stability")


@dataclass(frozen=True)
class Claim:
    """What the change's paper claims, typed: so the catalogue can set its verdict beside it."""
    paper: str                                 # 'Ye et al. 2024, Differential Transformer (arXiv:2410.05258)'
    effect: str                                # validation loss at fixed steps: 'lower', 'higher' or 'none' (no
                                               # change); or a claim not about loss: 'speed', 'memory', 'long
                                               # context', 'stability'
    scale: str                                 # where it was shown: '830M-13B params, 40B-300B tokens'

    @property
    def about_loss(self) -> bool:
        return self.effect in ("lower", "higher", "none")


@dataclass(frozen=True)
class Change:
    name: str                                  # the switch, as params.yaml and configs/<row>.json spell it
    values: tuple                              # the values it takes (a built-in's numeric field: examples of them)
    default: Any                               # the design without it
    labels: Mapping[Any, str]                  # value → its name in a row's label: '+ parallel block'
    hf: Mapping[str, Any] | None = None        # None: no Hugging Face class computes it (export refused while on);
                                               # built-ins: {'rule': 'config/hf_class.py'}, whose allow-list maps them
    plugs: Callable[[Any, Any], Mapping[str, Any]] | None = None   # model code: plugs(cfg, value) -> {point's
                                               # path: module}, called as a model is built (nn/model.py's points)
    check: Callable[[Any], None] | None = None  # refuses the configs it cannot run with (a one-line ConfigError)
    section: str = "model"                     # params.yaml's section of the switch: model, or train (optimizer)
    source: str = field(default="", compare=False)     # the file that declares it, relative to src/
    state: tuple[DecodeState, ...] = ()        # what it keeps while decoding with the cache, besides K and V
    reinit: Mapping[str, Any] = field(default_factory=dict)   # the model's own weights it initialises otherwise:
                                               # {'blocks.*.attn.o_proj.weight': 'zeros'} (rules: nn/model.py's draw)
    drops: tuple[str, ...] = ()                # the model's own weights it removes or reshapes ('blocks.*.norm2.*')
    neutral: bool = False                      # at init it computes what the model without it does
    claim: Claim | None = None                 # its paper's claim (the catalogue's changes declare one)

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
    if name not in plugged_names():
        return None
    module = importlib.import_module(f"{__name__}.{name}")
    change = getattr(module, "CHANGE", None)
    if not isinstance(change, Change) or change.name != name:
        raise TypeError(f"{_source(module.__file__)}: must define CHANGE = Change(name={name!r}, ...)")
    if change.plugs is None:
        raise TypeError(f"{_source(module.__file__)}: a change of a new kind needs its model code (plugs=...)")
    if change.claim is not None and change.claim.effect not in EFFECTS:
        raise TypeError(f"{_source(module.__file__)}: claim.effect={change.claim.effect!r}; allowed: {', '.join(EFFECTS)}")
    if change.hf is not None:
        raise TypeError(f"{_source(module.__file__)}: hf={change.hf!r}: a change of a new kind maps to no Hugging Face "
                        "class here (hf=None: export refuses it); a mapping is an entry of config/hf_class.py's KNOWN")
    if change.default not in change.values or not change.tried:
        raise TypeError(f"{_source(module.__file__)}: default={change.default!r} must be one of values={change.values}, "
                        "and another value must switch it on")
    return dataclasses.replace(change, source=_source(module.__file__))


@functools.cache
def plugged_names() -> tuple[str, ...]:
    """Every change of a new kind this folder holds, by file name, sorted: a listing, no import."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name not in RESERVED))


def decode_states(cfg: Any) -> list[tuple[str, int, int]]:
    """(point, keep, width) of every decoding state the changes `cfg` switches on declare, one per point."""
    return [(point, s.keep, getattr(cfg, s.width)) for name, _ in cfg.changes for s in plugged(name).state
            for point in s.points(cfg.n_layer)]


def decode_numbers(cfg: Any) -> int:
    """The numbers a sequence's decoding states hold besides K and V (the serving arithmetic's)."""
    return sum(keep * width for _, keep, width in decode_states(cfg))


def change_md5(change: Change) -> str:
    return hashlib.md5((HERE.parents[1] / change.source).read_bytes()).hexdigest()
