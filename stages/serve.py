"""Stage serve@<row> (and serve_beyond@<flag>): the run of seed serve.run_seed of a row, generating. A sample from
the start of the validation text, the KV cache's size, and prefill / decode tokens per second, into
<out>/<slug>.json for the report.

Reads <runs>/<slug>/<seed>/ (the weights and the record), the tokenizer and the validation tokens, and the
`serve` params. The tokens per second depend on the machine: the file records which.
"""

import sys
from pathlib import Path

# This checkout's src/, not the installed copy: DVC experiments and the tests run copies (test_stage_deps.py).
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse

from modern_gpt.config.sections import PARSERS, ServeConfig
from modern_gpt.config import params
from modern_gpt.core.files import read_json, write_json
from modern_gpt.core.stage import stage_main
from modern_gpt.corpus.tokenizers import load_tokenizer
from modern_gpt.nn.checkpoint import load_run
from modern_gpt.serving.generate import serve_record
from modern_gpt.training.batches import load_tokens

PARAMS = ("serve",)                # the params sections this stage reads: dvc.yaml lists the same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("slug", help="the run's slug: serves <runs>/<slug>/<serve.run_seed>/")
    ap.add_argument("--runs", required=True, help="the folder of the training runs")
    ap.add_argument("--data", required=True, help="the tokenized corpus: tokenizer.json, val.bin")
    ap.add_argument("--out", required=True, help="writes <out>/<slug>.json")
    args = ap.parse_args()
    s: ServeConfig = PARSERS["serve"](params.load(PARAMS)["serve"], "serve")
    data = Path(args.data)                                     # plan checked serve.run_seed is one of seeds
    record = serve_record(args.slug, s.run_seed, load_run(Path(args.runs) / args.slug / str(s.run_seed)),
                          load_tokenizer(read_json(data / "tokenizer.json")), load_tokens(data / "val.bin"), s)
    write_json(Path(args.out) / f"{args.slug}.json", record.to_dict())


if __name__ == "__main__":
    stage_main(main)
