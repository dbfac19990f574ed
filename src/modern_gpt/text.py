"""Text → tokens: corpus reading (UTF-8, NFC), the contiguous split, and the three tokenizers.

`char` gives one token per Unicode code point; `akshara` one per Devanagari orthographic syllable
(other characters stay single code points); `bpe` byte-level BPE from Hugging Face `tokenizers`,
learned on the training split only.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError
from .sanskrit import aksharas


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
class SymbolTokenizer:
    """One token per symbol: a Unicode code point ('char') or a Devanagari syllable ('akshara')."""

    kind: str                  # 'char' | 'akshara'
    symbols: tuple[str, ...]   # the vocabulary, sorted

    @staticmethod
    def split(kind: str, text: str) -> list[str]:
        if kind == "akshara":
            return aksharas(text)
        return list(text)

    @classmethod
    def fit(cls, text: str, kind: str = "char") -> "SymbolTokenizer":
        return cls(kind, tuple(sorted(set(cls.split(kind, text)))))

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def encode(self, text: str) -> list[int]:
        index = {c: i for i, c in enumerate(self.symbols)}
        try:
            return [index[c] for c in self.split(self.kind, text)]
        except KeyError as e:
            raise DataError(f"text: {e.args[0]!r} is not in the vocabulary") from None

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
    def fit(cls, text: str, vocab_size: int) -> "BPETokenizer":
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r" ?[^\s]+|\s+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(text.splitlines(keepends=True), trainer)
        return cls(tok)

    @classmethod
    def from_json(cls, spec: dict) -> "BPETokenizer":
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


def fit_tokenizer(spec: dict, train_text: str, val_text: str):
    """The tokenizer params.yaml asks for. char and akshara take their vocabulary (symbols only,
    no statistics) from the whole text, so no val symbol is unknown; bpe learns from train only."""
    if spec["kind"] == "bpe":
        return BPETokenizer.fit(train_text, spec["vocab_size"])
    return SymbolTokenizer.fit(train_text + val_text, spec["kind"])


def load_tokenizer(spec: dict):
    if spec["kind"] == "bpe":
        return BPETokenizer.from_json(spec)
    return SymbolTokenizer(spec["kind"], tuple(spec["symbols"]))


def split_text(text: str, val_fraction: float) -> tuple[str, str]:
    """Contiguous split: the first (1 - val_fraction) of the text trains, the rest validates.

    The cut moves forward to the next line break (or space), so no word or syllable is cut in two.
    """
    if not 0.0 < val_fraction < 1.0:
        raise DataError(f"val_fraction={val_fraction}: must be between 0 and 1 (exclusive)")
    cut = int(round(len(text) * (1.0 - val_fraction)))
    for sep in ("\n", " "):
        at = text.find(sep, max(cut - 1, 0), cut + 1000)   # a cut right after sep stays
        if at != -1 and at + 1 < len(text):
            cut = at + 1
            break
    return text[:cut], text[cut:]
