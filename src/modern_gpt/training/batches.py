"""Tokens → batches: token files, training batches, fixed evaluation windows, split-size checks.

Batches are reproducible by construction: training batches come from a generator seeded by the
run's seed (so every variant trained with seed s sees the same batches), and loss estimates use
fixed, evenly spaced windows (so every variant and seed is scored on the same text).
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..config.validate import check_split_sizes
from ..core.errors import DataError


def check_length(name: str, data: torch.Tensor, block_size: int) -> None:
    check_split_sizes(**{name: len(data)}, block_size=block_size)


def get_batch(data: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator):
    """Random windows of the training split: inputs and next-token targets, (batch_size, block_size) each."""
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i: i + block_size] for i in ix.tolist()])
    y = torch.stack([data[i + 1: i + 1 + block_size] for i in ix.tolist()])
    return x, y


def fixed_windows(data: torch.Tensor, block_size: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n windows evenly spaced over the split: the same text for every variant and every seed."""
    last = len(data) - block_size - 1
    starts = torch.linspace(0, last, n).round().long().tolist()
    x = torch.stack([data[i: i + block_size] for i in starts])
    y = torch.stack([data[i + 1: i + 1 + block_size] for i in starts])
    return x, y


def load_tokens(path: str | Path) -> torch.Tensor:
    """A token file (little-endian int32, as core.files.token_bytes writes it) as a long tensor."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: missing (run the tokenize stage: dvc repro tokenize)")
    return torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.int32).long()
