"""The two files every run reads, typed once: its row's resolved config (configs/<row>.json, the plan stage writes
it) and the tokenized corpus's meta (data/tokenized/meta.json, the tokenize stage writes it; the plan and the report
read it too). Each has one way out (`to_dict`, what the file holds) and one way in (`from_dict`,
records.typed.build). Every run imports this file (dvc.yaml's run deps list it), so changing it retrains them all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import changes
from ..config import ModelConfig, TrainConfig
from ..core.errors import DataError
from .typed import build


@dataclass(frozen=True)
class RowConfig:
    """configs/<row>.json: only what training reads, so a flag change retrains only the rows it changes. A row that
    switches on changes of a new kind also names each one's file and md5 (`change_files`): the run depends on its
    config file, so editing a change's file retrains exactly the rows that use it, and no other."""
    model: ModelConfig
    train: TrainConfig

    def change_files(self) -> dict[str, str]:
        """{file under src/: its md5} of the changes of a new kind this row switches on."""
        found = [changes.plugged(name) for name, _ in self.model.changes]
        return {c.source: changes.change_md5(c) for c in found}

    def to_dict(self) -> dict[str, Any]:
        files = self.change_files()
        return {"model": self.model.to_dict(), "train": self.train.to_dict(), **({"change_files": files} if files else {})}

    @classmethod
    def from_dict(cls, d: Any, where: str = "row config") -> "RowConfig":
        planned = d.get("change_files", {}) if isinstance(d, dict) else {}
        row = build(cls, {k: v for k, v in d.items() if k != "change_files"} if isinstance(d, dict) else d, where)
        if planned != row.change_files():         # the plan saw other change files than this process imports
            raise DataError(f"{where}: planned with change files {planned or 'none'}, but the code here has "
                            f"{row.change_files() or 'none'}; rerun it: dvc repro")
        return row


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
