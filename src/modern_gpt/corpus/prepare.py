"""The tokenize stage's work: a corpus read, split at a line break, tokenized, and described, all checked
before the stage writes anything."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..config.sections import DataConfig, TokenizerConfig
from ..config.validate import check_split_sizes
from ..records.inputs import CorpusFile, CorpusMeta, SplitSize
from .reading import read_corpus, split_text
from .tokenizers import fit_tokenizer


@dataclass(frozen=True)
class Tokenized:
    train: list[int]
    val: list[int]
    tokenizer: Any                 # corpus.tokenizers: one of its classes, fitted on the training text
    meta: CorpusMeta               # data/tokenized/meta.json: the corpus, the split and the token counts


def prepare(data: DataConfig, spec: TokenizerConfig, block_size: int) -> Tokenized:
    """The corpus's contiguous train/val split as tokens; a split too short for one example of block_size
    tokens is refused here (a one-line error), before anything is written."""
    text = read_corpus(data.corpus)
    train_text, val_text = split_text(text, data.val_fraction)
    tok = fit_tokenizer(spec, train_text, val_text)
    train_ids, val_ids = tok.encode(train_text), tok.encode(val_text)
    check_split_sizes(len(train_ids), len(val_ids), block_size=block_size)
    corpus = text.encode("utf-8")
    meta = CorpusMeta(CorpusFile(data.corpus, len(corpus), hashlib.md5(corpus).hexdigest(), len(text)),
                      data.val_fraction, spec.kind, tok.vocab_size, SplitSize(len(train_ids), len(train_text)),
                      SplitSize(len(val_ids), len(val_text)))
    return Tokenized(train_ids, val_ids, tok, meta)
