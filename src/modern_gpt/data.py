"""Corpus reading, the character tokenizer, the contiguous train/val split, and batches.

Batches are reproducible by construction: training batches come from a generator seeded by the
run's seed (so every variant trained with seed s sees the same batches), and loss estimates use
fixed, evenly spaced windows (so every variant and seed is scored on the same text).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

import torch


class DataError(ValueError):
    """Bad corpus or data settings; the message is one line and names what is wrong."""


def read_corpus(path: str | Path) -> str:
    """A UTF-8 text file, or a folder of .txt files (sorted by name, joined by newlines), as NFC."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.txt") if p.is_file())
        if not files:
            raise DataError(f"corpus {path}: folder has no .txt files")
    elif path.is_file():
        files = [path]
    else:
        raise DataError(f"corpus {path}: no such file or folder")
    texts = []
    for f in files:
        raw = f.read_bytes()
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            raise DataError(
                f"corpus {f}: not UTF-8 at byte {e.start} (line {line}): {raw[e.start:e.start + 4]!r}"
            ) from None
    text = unicodedata.normalize("NFC", "\n".join(texts))
    if not text.strip():
        raise DataError(f"corpus {path}: is empty")
    return text


@dataclass(frozen=True)
class CharTokenizer:
    """One token per Unicode code point seen in the corpus."""

    chars: str

    @classmethod
    def fit(cls, text: str) -> "CharTokenizer":
        return cls("".join(sorted(set(text))))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        index = {c: i for i, c in enumerate(self.chars)}
        try:
            return [index[c] for c in text]
        except KeyError as e:
            raise DataError(f"text: character {e.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)


def split(ids: torch.Tensor, val_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Contiguous split: the first (1 - val_fraction) of the tokens train, the rest validate."""
    if not 0.0 < val_fraction < 1.0:
        raise DataError(f"val_fraction={val_fraction}: must be between 0 and 1 (exclusive)")
    n_train = int(round(len(ids) * (1.0 - val_fraction)))
    return ids[:n_train], ids[n_train:]


def check_length(name: str, data: torch.Tensor, block_size: int) -> None:
    if len(data) < block_size + 1:
        raise DataError(
            f"corpus: the {name} split has {len(data):,} tokens; block_size={block_size} needs at least "
            f"{block_size + 1:,} (use a longer corpus, a smaller block_size or another val_fraction)"
        )


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
