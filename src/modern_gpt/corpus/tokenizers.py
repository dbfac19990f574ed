"""Tokenizers behind one small protocol, and the table of kinds that params.yaml's tokenizer.kind accepts.

`char` gives one token per Unicode code point; `akshara` one per Devanagari orthographic syllable
(other characters stay single code points); `bpe` byte-level BPE from Hugging Face `tokenizers`,
learned on the training split only. A new kind is one class with `fit` and `from_dict`, and one
entry in TOKENIZERS.
"""

from __future__ import annotations

import dataclasses

import json
from dataclasses import dataclass
from typing import Protocol

from ..config.choices import registered
from ..config.sections import TOKENIZER_KINDS, TokenizerConfig
from ..core.errors import DataError
from .akshara import aksharas


class Tokenizer(Protocol):
    kind: str

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def to_dict(self) -> dict: ...


@dataclass(frozen=True)
class SymbolTokenizer:
    """One token per symbol: a Unicode code point ('char') or a Devanagari syllable ('akshara')."""

    kind: str                  # 'char' | 'akshara'
    symbols: tuple[str, ...]   # the vocabulary, sorted

    @staticmethod
    def split(kind: str, text: str) -> list[str]:
        return aksharas(text) if kind == "akshara" else list(text)

    @classmethod
    def fit(cls, spec: dict, train_text: str, val_text: str = "") -> "SymbolTokenizer":
        """The vocabulary (symbols only, no statistics) of the whole text, so no val symbol is unknown."""
        return cls(spec["kind"], tuple(sorted(set(cls.split(spec["kind"], train_text + val_text)))))

    @classmethod
    def from_dict(cls, spec: dict) -> "SymbolTokenizer":
        return cls(spec["kind"], tuple(spec["symbols"]))

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def encode(self, text: str) -> list[int]:
        index = {c: i for i, c in enumerate(self.symbols)}
        pieces = self.split(self.kind, text)
        missing = sorted({c for c in pieces if c not in index})
        if missing:
            raise DataError(f"text: {', '.join(map(repr, missing))} not in the vocabulary of {len(index)} "
                            f"{'characters' if self.kind == 'char' else 'syllables'}")
        return [index[c] for c in pieces]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.symbols[i] for i in ids)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "symbols": list(self.symbols)}


class BPETokenizer:
    """Byte-level BPE (Hugging Face `tokenizers`), learned on the training split only.

    Words are pre-split at spaces (a word keeps its leading space), not with GPT-2's pattern,
    which would cut Devanagari words at every vowel sign (those are marks, not letters).
    """

    kind = "bpe"

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    @classmethod
    def fit(cls, spec: dict, train_text: str, val_text: str = "") -> "BPETokenizer":
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r" ?[^\s]+|\s+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=spec["vocab_size"], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(train_text.splitlines(keepends=True), trainer)
        return cls(tok)

    @classmethod
    def from_dict(cls, spec: dict) -> "BPETokenizer":
        from tokenizers import Tokenizer
        return cls(Tokenizer.from_str(json.dumps(spec["tokenizer"])))

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).ids

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids)

    def to_dict(self) -> dict:
        return {"kind": "bpe", "tokenizer": json.loads(self.tokenizer.to_str())}


TOKENIZERS: dict[str, type] = registered("tokenizer.kind", TOKENIZER_KINDS,
                                         {"char": SymbolTokenizer, "akshara": SymbolTokenizer, "bpe": BPETokenizer})


def fit_tokenizer(cfg: TokenizerConfig, train_text: str, val_text: str) -> Tokenizer:
    """The tokenizer params.yaml asks for (its checked `tokenizer` section), fitted to the text."""
    return TOKENIZERS[cfg.kind].fit(dataclasses.asdict(cfg), train_text, val_text)


def load_tokenizer(spec: dict) -> Tokenizer:
    """A tokenizer back from its to_dict()."""
    return TOKENIZERS[spec["kind"]].from_dict(spec)
