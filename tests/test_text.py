"""Corpora and tokenizers: any UTF-8 text in, clear errors out, and losses comparable across tokenizers."""

import math
import unicodedata

import pytest
import torch

from conftest import score

from modern_gpt.core.errors import DataError
from modern_gpt.corpus.reading import read_corpus, split_text
from modern_gpt.corpus.sanskrit import generate
from modern_gpt.corpus.tokenizers import BPETokenizer, SymbolTokenizer, fit_tokenizer, load_tokenizer
from modern_gpt.config.sections import TokenizerConfig
from modern_gpt.config import ModelConfig, TrainConfig
from modern_gpt.nn import GPT

TEXT = generate(20_000, seed=3)
BPE = {"kind": "bpe", "vocab_size": 300}
SPECS = [{"kind": "char"}, {"kind": "akshara"}, BPE]


def test_a_folder_of_txt_files_is_one_corpus_in_name_order(tmp_path):
    (tmp_path / "b.txt").write_text("दूसरा", encoding="utf-8")
    (tmp_path / "a.txt").write_text("पहला", encoding="utf-8")
    (tmp_path / "notes.md").write_text("ignored", encoding="utf-8")
    assert read_corpus(tmp_path) == "पहला\nदूसरा"


def test_text_is_normalised_to_nfc(tmp_path):
    decomposed = unicodedata.normalize("NFD", "क़ि é")
    (tmp_path / "c.txt").write_text(decomposed, encoding="utf-8")
    assert read_corpus(tmp_path / "c.txt") == unicodedata.normalize("NFC", decomposed) != decomposed


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.txt", "no such file or folder"),
    (lambda d: (d / "e.txt").write_text("") and None or d / "e.txt", "is empty"),
    (lambda d: (d / "b.txt").write_bytes("ठीक\n".encode() + b"\xc3\x28") and None or d / "b.txt",
     "not UTF-8 at byte 10 (line 2)"),
    (lambda d: (d / "sub").mkdir() or d / "sub", "folder has no .txt files"),
])
def test_bad_corpora_give_one_line(tmp_path, make, message):
    with pytest.raises(DataError) as e:
        read_corpus(make(tmp_path))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("spec", SPECS, ids=[s["kind"] for s in SPECS])
def test_every_tokenizer_round_trips_and_reloads(spec):
    train_text, val_text = split_text(TEXT, 0.1)
    tok = fit_tokenizer(TokenizerConfig(**spec), train_text, val_text)
    assert tok.decode(tok.encode(val_text)) == val_text
    again = load_tokenizer(tok.to_dict())
    assert again.encode(val_text) == tok.encode(val_text) and again.vocab_size == tok.vocab_size


def test_aksharas_are_fewer_tokens_than_characters_and_bpe_fewer_than_bytes():
    train_text, val_text = split_text(TEXT, 0.1)
    counts = {s["kind"]: len(fit_tokenizer(TokenizerConfig(**s), train_text, val_text).encode(val_text)) for s in SPECS}
    assert counts["char"] == len(val_text)
    assert counts["akshara"] < 0.7 * counts["char"]
    assert counts["bpe"] < 0.5 * len(val_text.encode("utf-8"))           # merges learned: well under one per byte


def test_bpe_learns_from_the_training_split_only():
    train_text, val_text = "ab ab ba " * 200, "zyxw " * 200
    tok = fit_tokenizer(TokenizerConfig(**BPE), train_text, val_text)
    assert len(tok.encode(" zyxw")) > 1                                    # never merged: it was not in train
    assert len(BPETokenizer.fit(BPE, val_text).encode(" zyxw")) == 1     # it would be, had val been seen


def test_bpe_is_deterministic():
    train_text, _ = split_text(TEXT, 0.1)
    assert BPETokenizer.fit(BPE, train_text).to_dict() == BPETokenizer.fit(BPE, train_text).to_dict()


def test_an_unknown_symbol_is_a_clear_error():
    with pytest.raises(DataError, match="'z' not in the vocabulary"):
        SymbolTokenizer.fit({"kind": "char"}, "abc").encode("abz")


def test_split_refuses_an_impossible_fraction():
    with pytest.raises(DataError, match="val_fraction=1.0: must be between 0 and 1"):
        split_text("abc", 1.0)


@pytest.mark.parametrize("spec", SPECS, ids=[s["kind"] for s in SPECS])
def test_bits_per_character_of_a_uniform_model(spec):
    """A model that predicts uniformly over V tokens scores log2(V) × tokens/characters."""
    train_text, val_text = split_text(TEXT, 0.1)
    tok = fit_tokenizer(TokenizerConfig(**spec), train_text, val_text)
    val = torch.tensor(tok.encode(val_text))
    model = GPT(ModelConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_embd=16))
    torch.nn.init.zeros_(model.lm_head.weight)                             # zero logits: uniform
    result = score(model, TrainConfig(batch_size=4, eval_iters=2), val, val, val_chars=len(val_text))
    assert result["val_loss"] == pytest.approx(math.log(tok.vocab_size), rel=1e-5)
    assert result["val_bpc"] == pytest.approx(math.log2(tok.vocab_size) * len(val) / len(val_text), rel=1e-5)
