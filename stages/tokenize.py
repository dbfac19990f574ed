"""Stage tokenize: corpus → token arrays for the train and val splits, plus the vocabulary and meta.

The split is contiguous (data.val_fraction at the end validates). Writes data/tokenized/:
train.bin and val.bin (little-endian int32), tokenizer.json, meta.json (corpus size and md5,
token and character counts per split, for bits per character).
"""

import sys
from pathlib import Path

# Run the code dvc.yaml hashes (src/ of this checkout), and keep stages/ off the path, where
# tokenize.py would shadow the standard library module of that name.
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse
import hashlib

from modern_gpt.config.sections import DataConfig, TokenizerConfig, section
from modern_gpt.config.validate import check_split_sizes
from modern_gpt.core import params
from modern_gpt.core.errors import ConfigError
from modern_gpt.core.files import token_bytes, write_bytes, write_json
from modern_gpt.core.stage import stage_main
from modern_gpt.corpus.reading import read_corpus, split_text
from modern_gpt.corpus.tokenizers import fit_tokenizer

PARAMS = ("data", "tokenizer", "model")   # the params it reads (of model, block_size only): dvc.yaml lists the same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="data/tokenized", help="output folder")
    args = ap.parse_args()
    p = params.load(PARAMS)
    data, spec = section(DataConfig, p["data"], "data"), section(TokenizerConfig, p["tokenizer"], "tokenizer")
    block_size = p["model"].get("block_size") if isinstance(p["model"], dict) else None
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ConfigError(f"model.block_size={block_size!r}: must be a positive integer")
    text = read_corpus(data.corpus)
    train_text, val_text = split_text(text, data.val_fraction)
    tok = fit_tokenizer(spec, train_text, val_text)
    train_ids, val_ids = tok.encode(train_text), tok.encode(val_text)
    check_split_sizes(len(train_ids), len(val_ids), block_size=block_size)   # all checks before any write
    corpus = text.encode("utf-8")
    meta = {
        "corpus": {"path": data.corpus, "bytes": len(corpus), "md5": hashlib.md5(corpus).hexdigest(),
                   "chars": len(text)},
        "val_fraction": data.val_fraction,
        "tokenizer": spec.kind,
        "vocab_size": tok.vocab_size,
        "train": {"tokens": len(train_ids), "chars": len(train_text)},
        "val": {"tokens": len(val_ids), "chars": len(val_text)},
    }
    out = Path(args.out)
    write_bytes(out / "train.bin", token_bytes(train_ids))
    write_bytes(out / "val.bin", token_bytes(val_ids))
    write_json(out / "tokenizer.json", tok.to_dict())
    write_json(out / "meta.json", meta)


if __name__ == "__main__":
    stage_main(main)
