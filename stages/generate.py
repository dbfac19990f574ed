"""Stage generate: the bundled corpus, Sanskrit drawn from a small grammar, and its loss floor.

Writes data/generated/sanskrit.txt (params: generate.chars, generate.seed) and floor.json: the
entropy of the generating process in nats per character, the best loss any model can reach.
"""

import sys
from pathlib import Path

# This checkout's src/, not the installed copy: DVC experiments and the tests run copies (test_stage_deps.py).
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse

from modern_gpt.config import params
from modern_gpt.core.files import write_bytes, write_json
from modern_gpt.core.stage import stage_main
from modern_gpt.corpus.sanskrit import entropy_per_char, generate
from modern_gpt.config.sections import PARSERS, GenerateConfig
from modern_gpt.records.stages import Floor

PARAMS = ("generate",)             # the params sections this stage reads: dvc.yaml lists the same
FLOOR_SENTENCES = 50_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, help="output folder: sanskrit.txt and floor.json")
    args = ap.parse_args()
    g: GenerateConfig = PARSERS["generate"](params.load(PARAMS)["generate"], "generate")
    text = generate(g.chars, g.seed)
    floor, se = entropy_per_char(FLOOR_SENTENCES, seed=g.seed + 1)   # sentences not in the corpus
    out = Path(args.out)
    write_bytes(out / "sanskrit.txt", text.encode("utf-8"))
    write_json(out / "floor.json", Floor(round(floor, 6), round(se, 6), FLOOR_SENTENCES).to_dict())


if __name__ == "__main__":
    stage_main(main)
