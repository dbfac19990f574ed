"""The two files every run reads, typed once: its row's resolved config (configs/<row>.json, the plan stage writes
it) and the tokenized corpus's meta (data/tokenized/meta.json, the tokenize stage writes it; the plan and the report
read it too). Each has one way out (`to_dict`, what the file holds) and one way in (`from_dict`,
records.typed.build). Every run imports this file (dvc.yaml's run deps list it), so changing it retrains them all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..config import ModelConfig, TrainConfig
from .typed import build


@dataclass(frozen=True)
class RowConfig:
    """configs/<row>.json: only what training reads, so a flag change retrains only the rows it changes."""
    model: ModelConfig
    train: TrainConfig

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model.to_dict(), "train": self.train.to_dict()}

    @classmethod
    def from_dict(cls, d: Any, where: str = "row config") -> "RowConfig":
        return build(cls, d, where)


@dataclass(frozen=True)
class CorpusFile:
    path: str                     # data.corpus, as params.yaml gives it
    bytes: int
    md5: str                      # of its bytes
    chars: int


@dataclass(frozen=True)
class SplitSize:
    tokens: int
    chars: int                    # for bits per character: the split's characters per token


@dataclass(frozen=True)
class CorpusMeta:
    """data/tokenized/meta.json: the corpus, its contiguous split and each split's size."""
    corpus: CorpusFile
    val_fraction: float           # the last fraction of the text validates
    tokenizer: str                # tokenizer.kind
    vocab_size: int
    train: SplitSize
    val: SplitSize

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Any, where: str = "data/tokenized/meta.json") -> "CorpusMeta":
        return build(cls, d, where)
