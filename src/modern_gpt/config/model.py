"""The model's config: one typed field per ablation axis, validated on construction.

Its defaults are the Step 1 (2017-style) GPT. The switches accept exactly the names in choices.py,
against which nn/model.py registers its modules. Every check raises `ConfigError` with a one-line
message that names the field and says what is allowed. Torch-free.

A change of a new kind (changes/<name>.py) is no field here: `changes` holds those a config switches on, each read
as if it were one (`cfg.parallel_block`), set by `replace`, and written as a key of its own only where it is on, so
that adding a change leaves every other row's config file as it was.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import changes as registry
from ..core.errors import ConfigError, DataError
from .choices import MLP_HIDDEN, MLPS, NORMS, PLACEMENTS, POSITIONS
from .validate import check_choice, check_positive, check_types, from_dict


@dataclass(frozen=True)
class ModelConfig:
    # shape
    vocab_size: int = 79           # number of distinct tokens
    block_size: int = 32           # context length in tokens
    n_layer: int = 2               # transformer blocks
    n_head: int = 4                # query heads
    n_kv_head: int = 4             # key/value heads; < n_head is grouped-query attention
    n_embd: int = 64               # residual width
    head_dim: int | None = None    # per-head width; null: n_embd / n_head, resolved on construction
    dropout: float = 0.0           # on attention weights and residual branches
    # the ablation axes (Step 1 values; the book's modern values are in params.yaml's model:)
    norm: str = "layernorm"        # NORMS: 'layernorm' (centre + scale + bias) | 'rmsnorm' (scale only)
    norm_eps: float = 1e-5         # added to the variance / mean square before the square root
    norm_placement: str = "pre"    # PLACEMENTS: 'pre' (norm inside the residual branch) | 'post' (2017)
    pos: str = "learned"           # POSITIONS: 'learned' (a table added) | 'rope' (rotate q, k) | 'none' (NoPE)
    rope_base: float = 10000.0     # RoPE's base; larger = slower rotations
    mlp: str = "gelu"              # MLPS: 'gelu' (4·d hidden) | 'swiglu' (gated, 2/3·4·d hidden) | 'relu2' (4·d)
    mlp_multiple: int = 64         # SwiGLU's hidden size is rounded up to a multiple of this
    mlp_hidden: int = 0            # 0: the MLP's own rule; > 0: this hidden size (parameter matching)
    bias: bool = True              # False removes every bias: projections, MLP and norms
    qk_norm: bool = False          # normalise queries and keys per head before q·k
    # past the book (params.yaml's beyond: ladder)
    tie_embeddings: bool = True    # the output head is the token matrix (GPT-2); False: a separate lm_head
    logit_softcap: float = 0.0     # > 0: logits squashed to cap·tanh(logits / cap) (Gemma 2, nanochat: 15); 0: off
    attn_window: int = 0           # > 0: local layers attend to the last attn_window tokens, their own included; 0: off
    global_every: int = 0          # with a window: every k-th layer (1-based, as Gemma counts) attends to all; 0: none
    # changes of a new kind (changes/<name>.py), those switched on: ((name, value), ...), sorted. A config file lists
    # each as a key of its own (`parallel_block: true`), and `cfg.parallel_block` reads it (its default when off)
    changes: tuple = field(default=(), metadata={"untyped": True})

    def __post_init__(self) -> None:
        check_types(self)
        object.__setattr__(self, "changes", _switched_on(self.changes))
        check_positive(self, "vocab_size", "block_size", "n_layer", "n_head", "n_kv_head", "n_embd", "mlp_multiple")
        check_choice("norm", self.norm, NORMS)
        check_choice("norm_placement", self.norm_placement, PLACEMENTS)
        check_choice("pos", self.pos, POSITIONS)
        check_choice("mlp", self.mlp, MLPS)
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout={self.dropout}: must be in [0, 1)")
        if self.mlp_hidden < 0:
            raise ConfigError(f"mlp_hidden={self.mlp_hidden}: must be 0 (the default rule) or a positive integer")
        if not self.norm_eps > 0:
            raise ConfigError(f"norm_eps={self.norm_eps}: must be > 0")
        if not 0 <= self.logit_softcap < float("inf"):
            raise ConfigError(f"logit_softcap={self.logit_softcap}: must be 0 (off) or a positive number, "
                              "the cap c of c·tanh(logits / c)")
        if not 0 <= self.attn_window < self.block_size:
            raise ConfigError(f"attn_window={self.attn_window}: must be 0 (full attention) or a window below "
                              f"block_size={self.block_size} (a window of the whole context is full attention)")
        if self.global_every < 0 or (self.attn_window and self.global_every > self.n_layer):
            raise ConfigError(f"global_every={self.global_every}: must be 0 (every layer local) or 1..n_layer="
                              f"{self.n_layer} (every k-th layer global, 1-based, with attn_window > 0)")
        if self.attn_window and self.global_every == 1:
            raise ConfigError(f"global_every=1 with attn_window={self.attn_window}: every layer would be global and "
                              "the window unused; use 2..n_layer, 0 (every layer local), or attn_window=0")
        if not self.rope_base > 1:
            raise ConfigError(f"rope_base={self.rope_base}: must be > 1")
        if self.head_dim is not None and self.head_dim < 1:
            raise ConfigError(f"head_dim={self.head_dim}: must be a positive integer, or null for n_embd / n_head")
        if self.head_dim is None and self.n_embd % self.n_head:
            raise ConfigError(f"n_embd={self.n_embd}, n_head={self.n_head}: n_embd must be divisible by n_head "
                              "(or set head_dim)")
        if self.head_dim is None:                                  # one name: the width attention uses
            object.__setattr__(self, "head_dim", self.n_embd // self.n_head)
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
        for name, _ in self.changes:
            change = registry.plugged(name)
            if change.check is not None:
                change.check(self)

    def __getattr__(self, name: str) -> Any:
        """A change of a new kind's switch: its value here, or its default where this config leaves it off."""
        change = registry.plugged(name) if name in registry.plugged_names() else None   # a listing, no import probe
        if change is None:
            raise AttributeError(f"{type(self).__name__!r} has no field or change {name!r}")
        return dict(self.changes).get(name, change.default)

    def replace(self, **values: Any) -> "ModelConfig":
        """This config with some fields or changes' switches set otherwise (a change set to its default is off)."""
        names = {f.name for f in dataclasses.fields(self)} - {"changes"}
        switched = {k: v for k, v in values.items() if k not in names}
        kept = {k: v for k, v in values.items() if k in names}
        return dataclasses.replace(self, **kept, changes=(*self.changes, *switched.items()))

    @property
    def hidden(self) -> int:
        """The MLP's hidden width: mlp_hidden when set, else the MLP's own rule (GELU and ReLU² 4·d, SwiGLU 2/3 of it)."""
        return self.mlp_hidden or MLP_HIDDEN[self.mlp](self.n_embd, self.mlp_multiple)

    @property
    def windows(self) -> tuple[int | None, ...]:
        """Each layer's window: None for full attention. With attn_window > 0, layer i (1-based) is global when
        global_every divides i: global_every=4 on 4 layers is nanochat's short-short-short-long."""
        if not self.attn_window:
            return (None,) * self.n_layer
        return tuple(None if self.global_every and i % self.global_every == 0 else self.attn_window
                     for i in range(1, self.n_layer + 1))

    @classmethod
    def from_dict(cls, d: Any, where: str = "model") -> "ModelConfig":
        """From a params section or a config file: ModelConfig's fields, and a key per change switched on."""
        if isinstance(d, Mapping):
            names = {f.name for f in dataclasses.fields(cls)} - {"changes"}
            others = {k: v for k, v in d.items() if k not in names}
            d = {**{k: v for k, v in d.items() if k in names}, **({"changes": others} if others else {})}
        return from_dict(cls, d, where)

    @classmethod
    def from_record(cls, d: Any, where: str) -> "ModelConfig":
        """From a file between stages (configs/<row>.json's model): every field, plus the changes it switches on."""
        names = {f.name for f in dataclasses.fields(cls)} - {"changes"}
        if not isinstance(d, Mapping) or not names <= set(d) <= names | set(registry.plugged_names()):
            got = sorted(d) if isinstance(d, Mapping) else type(d).__name__
            raise DataError(f"{where}: not a ModelConfig of this version (keys {got}); rerun it: dvc repro")
        try:
            return cls(**{k: d[k] for k in names}, changes={k: v for k, v in d.items() if k not in names})
        except ConfigError as e:
            raise DataError(f"{where}: {e}; rerun it: dvc repro") from None

    def to_dict(self) -> dict[str, Any]:
        """Every field, then each change switched on as a key of its own (none: the file of a config without any)."""
        d = dataclasses.asdict(self)
        return {**{k: v for k, v in d.items() if k != "changes"}, **dict(self.changes)}


def model_keys() -> list[str]:
    """What a model section or config file may set: ModelConfig's fields, then every change of a new kind."""
    fields = [f.name for f in dataclasses.fields(ModelConfig) if f.name != "changes"]
    clash = sorted(set(fields) & set(registry.plugged_names()))
    if clash:
        raise ConfigError(f"{clash[0]}: a file of changes/ takes the name of a field of ModelConfig; rename the file")
    return fields + list(registry.plugged_names())


def _switched_on(given: Any) -> tuple:
    """((name, value), ...) of the changes a config switches on, sorted, each checked; a default is off."""
    pairs = list(given.items()) if isinstance(given, Mapping) else list(given)
    out = {}
    for name, value in pairs:
        change = registry.plugged(name) if isinstance(name, str) else None
        if change is None:
            raise ConfigError(f"{name}: unknown key; allowed keys are {', '.join(model_keys())}")
        change.check_value(value)
        out[name] = value
    return tuple(sorted((k, v) for k, v in out.items() if v != registry.plugged(k).default))
