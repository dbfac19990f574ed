"""What a plug point is handed and what fills it: `Pass`, one forward call as every point sees it; `Wiring`, a block's
join of attention and the MLP with the norms it uses; and `plugs_of`, each change's modules by point (nn/model.py's
docstring lists the points; its classes' SLOTS name them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import torch
import torch.nn as nn

from .. import changes

if TYPE_CHECKING:
    from ..config import ModelConfig
    from .cache import KVCache

Rope = tuple[torch.Tensor, torch.Tensor]     # cos and sin of the positions in hand, (T, head_dim/2) each


@dataclass
class Pass:
    """One forward call, as every plug point sees it."""
    idx: torch.Tensor                        # (B, T) the token ids
    start: int                               # idx[:, 0]'s position: 0, or the tokens the cache already holds
    rope: Rope | None                        # RoPE's angles of positions start .. start+T-1; None without RoPE
    targets: torch.Tensor | None = None      # (B, T) the next tokens, when the loss is asked for
    cache: KVCache | None = None
    carry: dict[str, torch.Tensor] = field(default_factory=dict)   # what a layer leaves for the layers after it
    terms: dict[str, torch.Tensor] = field(default_factory=dict)   # auxiliary loss terms, by name

    def held(self, point: str) -> torch.Tensor | None:
        """The decoding state the cache keeps for `point` (B, keep, width), to read and update; None without one."""
        return None if self.cache is None else self.cache.held[point]


@dataclass(frozen=True)
class Wiring:
    """How a block's attention and MLP meet the residual stream: join(block, x, kv, ctx) -> x, and the norms it
    uses, which the block builds (and only those)."""
    join: Callable
    norms: tuple[str, ...] = ("norm1", "norm2")


def plugs_of(cfg: ModelConfig, points: list[str]) -> dict[str, nn.Module | Wiring]:
    """The modules (and wirings) of every change `cfg` switches on, by point's path; a TypeError names a point
    two changes fill, or a path that is no point. Built under a forked generator: a change's modules draw nothing
    from the seed's stream, so the model's own weights are those of the model without it (init_weights draws the
    change's own afterwards)."""
    points, found, owner = set(points), {}, {}
    with torch.random.fork_rng(devices=[]):
        for name, value in cfg.changes:
            for path, module in changes.plugged(name).plugs(cfg, value).items():
                if path not in points:
                    raise TypeError(f"{name}: {path}: not a plug point (nn/model.py's: {', '.join(sorted(points))})")
                if path in found:
                    raise TypeError(f"{path}: filled by both {owner[path]} and {name}")
                found[path], owner[path] = module, name
    return found
