"""Stage tokenize: corpus → token arrays for the train and val splits, plus the vocabulary and meta.

The split is contiguous (data.val_fraction at the end validates). Writes data/tokenized/:
train.bin and val.bin (little-endian int32), tokenizer.json, meta.json (corpus size and md5,
token and character counts per split, for bits per character).
"""

import sys
from pathlib import Path

# This checkout's src/, not the installed copy: DVC experiments and the tests run copies (test_stage_deps.py).
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse

from modern_gpt.config.sections import PARSERS
from modern_gpt.config import params
from modern_gpt.core.files import token_bytes, write_bytes, write_json
from modern_gpt.core.stage import stage_main
from modern_gpt.corpus.prepare import prepare

PARAMS = ("data", "tokenizer", "model")   # the params it reads (of model, block_size only): dvc.yaml lists the same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args()
    p = params.load(PARAMS)
    model = p["model"]                  # block_size alone (dvc.yaml's params), through model:'s one parser
    block = PARSERS["model"]({k: v for k, v in model.items() if k == "block_size"} if isinstance(model, dict)
                             else model, "model").block_size
    t = prepare(PARSERS["data"](p["data"], "data"), PARSERS["tokenizer"](p["tokenizer"], "tokenizer"),
                block)                  # every check before any write
    out = Path(args.out)
    write_bytes(out / "train.bin", token_bytes(t.train))
    write_bytes(out / "val.bin", token_bytes(t.val))
    write_json(out / "tokenizer.json", t.tokenizer.to_dict())
    write_json(out / "meta.json", t.meta.to_dict())


if __name__ == "__main__":
    stage_main(main)
