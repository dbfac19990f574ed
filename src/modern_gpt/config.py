"""Typed configs, validated on construction, and the ladder that walks from Step 1 to the modern design.

`ModelConfig` has one field per ablation axis. Its defaults are the Step 1 (2017-style) GPT;
`MODERN` holds the values of today's design. Every check raises `ConfigError` with a one-line
message that names the field and says what is allowed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

from .errors import ConfigError


@dataclass(frozen=True)
class ModelConfig:
    # shape
    vocab_size: int = 79           # number of distinct tokens
    block_size: int = 32           # context length in tokens
    n_layer: int = 2               # transformer blocks
    n_head: int = 4                # query heads
    n_kv_head: int = 4             # key/value heads; < n_head is grouped-query attention
    n_embd: int = 64               # residual width
    dropout: float = 0.0           # on attention weights and residual branches
    # the ablation axes (Step 1 values; see MODERN for today's)
    norm: str = "layernorm"        # 'layernorm' (centre + scale + bias) | 'rmsnorm' (scale only)
    norm_eps: float = 1e-5         # added to the variance / mean square before the square root
    norm_placement: str = "pre"    # 'pre' (norm inside the residual branch) | 'post' (2017: after the add)
    pos: str = "learned"           # 'learned' (a position table added to tokens) | 'rope' (rotate q and k)
    rope_base: float = 10000.0     # RoPE's base; larger = slower rotations
    mlp: str = "gelu"              # 'gelu' (4·d hidden) | 'swiglu' (gated, 2/3·4·d hidden)
    mlp_multiple: int = 64         # SwiGLU's hidden size is rounded up to a multiple of this
    mlp_hidden: int = 0            # 0: the rule (GELU 4·d, SwiGLU above); > 0: this hidden size (parameter matching)
    bias: bool = True              # False removes every bias: projections, MLP and norms
    qk_norm: bool = False          # normalise queries and keys per head before q·k

    def __post_init__(self) -> None:
        check_types(self)
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_kv_head", "n_embd", "mlp_multiple"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)}: must be a positive integer")
        check_choice("norm", self.norm, ("layernorm", "rmsnorm"))
        check_choice("norm_placement", self.norm_placement, ("pre", "post"))
        check_choice("pos", self.pos, ("learned", "rope"))
        check_choice("mlp", self.mlp, ("gelu", "swiglu"))
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout={self.dropout}: must be in [0, 1)")
        if self.mlp_hidden < 0:
            raise ConfigError(f"mlp_hidden={self.mlp_hidden}: must be 0 (the default rule) or a positive integer")
        if not self.norm_eps > 0:
            raise ConfigError(f"norm_eps={self.norm_eps}: must be > 0")
        if not self.rope_base > 1:
            raise ConfigError(f"rope_base={self.rope_base}: must be > 1")
        if self.n_embd % self.n_head:
            raise ConfigError(f"n_embd={self.n_embd}, n_head={self.n_head}: n_embd must be divisible by n_head")
        if self.n_head % self.n_kv_head:
            raise ConfigError(
                f"n_head={self.n_head}, n_kv_head={self.n_kv_head}: n_head must be divisible by n_kv_head "
                f"(allowed n_kv_head: {', '.join(str(k) for k in range(1, self.n_head + 1) if self.n_head % k == 0)})"
            )
        if self.pos == "rope" and self.head_dim % 2:
            raise ConfigError(
                f"n_embd={self.n_embd}, n_head={self.n_head}: RoPE rotates pairs of dimensions, "
                f"so the head dim ({self.head_dim}) must be even"
            )

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def swiglu_hidden(self) -> int:
        """2/3 of GELU's 4·d keeps the gated MLP's three matrices near GELU's two; rounded up."""
        hidden = int(2 / 3 * 4 * self.n_embd)
        return self.mlp_multiple * math.ceil(hidden / self.mlp_multiple)

    @property
    def hidden(self) -> int:
        """The MLP's hidden width: mlp_hidden when set, else 4·d for GELU and the 2/3 rule for SwiGLU."""
        if self.mlp_hidden:
            return self.mlp_hidden
        return self.swiglu_hidden if self.mlp == "swiglu" else 4 * self.n_embd

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "model") -> "ModelConfig":
        return from_dict(cls, d, where)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# Today's design: the values the ladder switches to, flag by flag.
MODERN: dict[str, Any] = dict(norm="rmsnorm", pos="rope", mlp="swiglu", bias=False, n_kv_head=2, qk_norm=True)
# The order in which the book (and the default ladder) adds the changes.
LADDER: tuple[str, ...] = ("norm", "pos", "mlp", "bias", "n_kv_head", "qk_norm")


@dataclass(frozen=True)
class TrainConfig:
    iters: int = 200               # optimiser steps
    batch_size: int = 16           # sequences per step
    lr: float = 3e-3               # peak learning rate
    min_lr: float = 3e-4           # cosine decays to this
    warmup_iters: int = 20         # linear warm-up steps
    weight_decay: float = 0.1      # AdamW decay, matrices only
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0         # max global grad norm; 0 turns clipping off
    eval_interval: int = 50        # steps between points on the loss curve
    eval_iters: int = 8            # fixed batches per loss estimate
    device: str = "cpu"            # 'cpu' | 'cuda' | 'auto'

    def __post_init__(self) -> None:
        check_types(self)
        for name in ("iters", "batch_size", "eval_interval", "eval_iters"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)}: must be a positive integer")
        if self.warmup_iters < 0 or self.warmup_iters > self.iters:
            raise ConfigError(f"warmup_iters={self.warmup_iters}: must be between 0 and iters ({self.iters})")
        if not self.lr > 0 or not 0 <= self.min_lr <= self.lr:
            raise ConfigError(f"lr={self.lr}, min_lr={self.min_lr}: need lr > 0 and 0 <= min_lr <= lr")
        for name in ("weight_decay", "grad_clip"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)}: must be >= 0")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)}: must be in [0, 1)")
        check_choice("device", self.device, ("cpu", "cuda", "auto"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "train") -> "TrainConfig":
        return from_dict(cls, d, where)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r}: allowed values are {', '.join(allowed)}")


def check_types(cfg: Any) -> None:
    """Strict types: a bool is not an int, a string is not a bool ('yes' and 'no' are errors)."""
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        kind = {"int": int, "float": float, "bool": bool, "str": str}[f.type]
        if kind is bool:
            ok = isinstance(value, bool)
            allowed = "true or false"
        elif kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            allowed = "a number"
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
            allowed = "an integer"
        else:
            ok = isinstance(value, str)
            allowed = "a string"
        if not ok:
            raise ConfigError(f"{f.name}={value!r}: must be {allowed}")
        if kind is float:
            object.__setattr__(cfg, f.name, float(value))


def from_dict(cls, d: Mapping[str, Any], where: str):
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where}: must be a mapping of settings, got {type(d).__name__}")
    known = [f.name for f in fields(cls)]
    unknown = [k for k in d if k not in known]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed keys are {', '.join(known)}")
    try:
        return cls(**d)
    except ConfigError as e:
        raise ConfigError(f"{where}.{e}") from None


# ---------------------------------------------------------------------------------------------
# The ladder: row 0 is the baseline; row k switches flag k to the model's value on top of row k-1.

@dataclass(frozen=True)
class Row:
    slug: str            # a stage-name-safe id: 'baseline', 'norm', 'n_kv_head', ...
    label: str           # what a reader sees: 'Step 1 baseline', '+ RMSNorm', '+ GQA (kv=2)'
    config: ModelConfig
    changed: bool        # False when the flag's baseline and model values agree ("no change")


def change_label(flag: str, value: Any, cfg: ModelConfig) -> str:
    """How a row that sets `flag` to `value` is named in tables."""
    if flag == "n_kv_head":
        if value == cfg.n_head:
            return "+ multi-head"
        return f"+ {'MQA' if value == 1 else 'GQA'} (kv={value})"
    names = {
        ("norm", "rmsnorm"): "RMSNorm", ("norm", "layernorm"): "LayerNorm",
        ("pos", "rope"): "RoPE", ("pos", "learned"): "learned positions",
        ("mlp", "swiglu"): "SwiGLU", ("mlp", "gelu"): "GELU",
        ("bias", False): "no bias", ("bias", True): "bias",
        ("qk_norm", True): "QK-norm", ("qk_norm", False): "no QK-norm",
        ("norm_placement", "pre"): "pre-norm", ("norm_placement", "post"): "post-norm",
    }
    return "+ " + names.get((flag, value), f"{flag}={value}")


def ladder(baseline: ModelConfig, model: ModelConfig, flags: Sequence[str] = LADDER) -> list[Row]:
    """Rows from `baseline` to `model`, one flag at a time, in the order of `flags`.

    A flag whose two values agree still gets its row (marked changed=False), so a table always has
    one row per ladder entry and the reader sees that nothing changed there.
    """
    known = [f.name for f in fields(ModelConfig)]
    seen = set()
    for flag in flags:
        if flag not in known:
            raise ConfigError(f"ladder: unknown flag {flag!r}; allowed flags are {', '.join(known)}")
        if flag in seen:
            raise ConfigError(f"ladder: flag {flag!r} is listed twice")
        seen.add(flag)
    rows = [Row("baseline", "Step 1 baseline", baseline, True)]
    cfg = baseline
    for flag in flags:
        value = getattr(model, flag)
        changed = getattr(cfg, flag) != value
        try:
            cfg = dataclasses.replace(cfg, **{flag: value})
        except ConfigError as e:
            raise ConfigError(f"ladder row {flag!r}: {e}") from None
        label = change_label(flag, value, cfg) if changed else f"{change_label(flag, value, cfg)} (no change)"
        rows.append(Row(flag, label, cfg, changed))
    if cfg != model:
        diff = [f.name for f in fields(ModelConfig) if getattr(cfg, f.name) != getattr(model, f.name)]
        raise ConfigError(
            f"ladder: baseline and model differ in {', '.join(diff)}, which the ladder does not walk; "
            "add them to the ladder or give the baseline the model's values"
        )
    return rows
