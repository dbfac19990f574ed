"""Stage serve@<row>: a row's first-seed model generating. A sample from the start of the validation text, the
KV cache's size, and prefill / decode tokens per second, into data/serve/<row>.json for the report.

Reads data/runs/<row>/<seed>/ (the weights and the record), the tokenizer and the validation tokens, and the
`serve` params. The tokens per second depend on the machine: the file records which.
"""

import sys
from pathlib import Path

# Run the code dvc.yaml hashes (src/ of this checkout), and keep stages/ off the path, where
# tokenize.py would shadow the standard library module of that name.
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse
import dataclasses
import platform

import torch

from modern_gpt.core import params
from modern_gpt.config.sections import ServeConfig, section
from modern_gpt.core.files import read_json, write_json
from modern_gpt.core.stage import stage_main
from modern_gpt.corpus.tokenizers import load_tokenizer
from modern_gpt.nn.checkpoint import load_run
from modern_gpt.serving.generate import serve_row
from modern_gpt.training.batches import load_tokens
from modern_gpt.training.run import machine

PARAMS = ("serve",)                # the params sections this stage reads: dvc.yaml lists the same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("row", help="the row's slug: data/runs/<row>/")
    ap.add_argument("--runs", default="data/runs")
    ap.add_argument("--data", default="data/tokenized")
    ap.add_argument("--out", default="data/serve")
    args = ap.parse_args()
    s = section(ServeConfig, params.load(PARAMS, optional=PARAMS)["serve"], "serve")
    seed = s.run_seed                                           # plan checked it is one of seeds
    data = Path(args.data)
    tokenizer = load_tokenizer(read_json(data / "tokenizer.json"))
    prompt = load_tokens(data / "val.bin")[:s.prompt_tokens].tolist()
    row = serve_row(load_run(Path(args.runs) / args.row / str(seed)), prompt, s)
    write_json(Path(args.out) / f"{args.row}.json", {
        "slug": args.row, "seed": seed, "settings": dataclasses.asdict(s), "prompt": prompt, "prompt_text": tokenizer.decode(prompt),
        **row, "sample_text": tokenizer.decode(row["sample"]),
        "machine": machine("cpu"), "device": "cpu", "threads": torch.get_num_threads(), "torch": torch.__version__,
        "python": platform.python_version(),
    })


if __name__ == "__main__":
    stage_main(main)
