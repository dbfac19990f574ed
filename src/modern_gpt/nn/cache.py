"""The KV cache: what generation keeps of every past token, so that each new token computes only its own keys and
values (GPT.forward(idx, cache=...)); and, beside K and V, the decoding state a change declares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from .. import changes

if TYPE_CHECKING:
    from ..config import ModelConfig


class KVCache:
    """Every layer's keys and values of `batch` sequences: only the n_kv_head K/V heads are stored (under GQA,
    n_head / n_kv_head times less than multi-head attention keeps), after QK-norm and RoPE, so a stored key never
    changes. A full-attention layer keeps block_size positions; a sliding-window layer keeps only its window, a
    ring buffer in which position p sits at slot p mod window. Beside them, each decoding state a change declares
    (changes.DecodeState: its point, width and the past positions it keeps), zeros until a token is stored.
    GPT.forward(idx, cache=...) appends idx's tokens."""

    def __init__(self, cfg: ModelConfig, batch: int, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32):
        self.block_size = cfg.block_size
        self.windows = cfg.windows
        # per layer: (K or V, batch, K/V head, position or slot, head_dim)
        self.kv = [torch.zeros(2, batch, cfg.n_kv_head, w or cfg.block_size, cfg.head_dim, device=device,
                               dtype=dtype) for w in self.windows]
        # per point of a change's decoding state: (batch, past positions kept, width)
        self.held = {point: torch.zeros(batch, keep, width, device=device, dtype=dtype)
                     for point, keep, width in changes.decode_states(cfg)}
        self.length = 0                                   # tokens stored per sequence

    @property
    def nbytes(self) -> int:
        """The bytes the cache holds: K and V of every layer (a window's worth in sliding-window layers), and the
        changes' decoding states."""
        return sum(t.numel() * t.element_size() for t in [*self.kv, *self.held.values()])

    def layer(self, i: int) -> LayerKV:
        return LayerKV(self.kv[i][0], self.kv[i][1], self.length, self.windows[i])


@dataclass(frozen=True)
class LayerKV:
    """One layer's slice of a KVCache, and where the new tokens go."""
    k: torch.Tensor                 # (B, n_kv_head, block_size or window, head_dim)
    v: torch.Tensor
    start: int                      # tokens already stored
    window: int | None = None       # None: full attention

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Full attention: store the new tokens' keys and values; return every stored token's."""
        end = self.start + k.size(2)
        self.k[:, :, self.start:end] = k
        self.v[:, :, self.start:end] = v
        return self.k[:, :, :end], self.v[:, :, :end]

    def slide(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A sliding-window layer: the keys and values the new tokens may see (the ring's, then their own) with
        those keys' positions; then the last `window` of the new tokens replace the oldest in the ring."""
        T, W = k.size(2), self.window
        held = torch.arange(max(0, self.start - W), self.start, device=k.device)   # positions the ring holds
        new = torch.arange(self.start, self.start + T, device=k.device)
        keys = torch.cat([self.k[:, :, held % W], k], dim=2)
        values = torch.cat([self.v[:, :, held % W], v], dim=2)
        kept = new[-W:]
        self.k[:, :, kept % W] = k[:, :, -W:]
        self.v[:, :, kept % W] = v[:, :, -W:]
        return keys, values, torch.cat([held, new])
