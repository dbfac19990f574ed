"""Stage run@<row>-<seed> (and every training family's, settle@<slug>-<seed>): train one run's config on one seed, then
evaluate it.

Reads <configs>/<slug>.json and the tokenized corpus; writes <out>/<slug>/<seed>/model.pt (the weights) and
run.json (the run record: losses of the trained weights, the loss curve, parameter counts, seconds,
tokens per second, and the md5 of the code this process imported). One process per run: the unit
DVC caches, restores and shares. Under `torchrun --nproc_per_node=N` (params `launch`), N processes train
the run together with DistributedDataParallel, and the first one writes it. Its thread count is torch's
(OMP_NUM_THREADS, which `modern-gpt repro` sets to each job's share of the cores; else every core). On CUDA it
first takes its GPU slot (core/slots.py), so that runs side by side never share a GPU. All of it is
training/single.py's train_stage; this script is its arguments.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# This checkout's src/, not the installed copy: DVC experiments and the tests run copies (test_stage_deps.py).
sys.path[0] = str(ROOT / "src")
# train.compile: Inductor's kernels persist in .cache/ (ignored by git and DVC) across stages and `dvc repro`
# calls, so each distinct graph compiles once; an explicit TORCHINDUCTOR_CACHE_DIR wins.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".cache" / "torchinductor"))

import argparse

from modern_gpt.core.stage import stage_main
from modern_gpt.training.single import train_stage

PARAMS = ()                        # none: a run reads its resolved config file, which the plan stage writes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("slug", help="the run's slug: <configs>/<slug>.json")
    ap.add_argument("seed", type=int)
    ap.add_argument("--configs", required=True, help="the folder of the plan stage's configs")
    ap.add_argument("--data", required=True, help="the tokenized corpus: train.bin, val.bin, meta.json")
    ap.add_argument("--out", required=True, help="writes <out>/<slug>/<seed>/model.pt and run.json")
    args = ap.parse_args()
    train_stage(args.slug, args.seed, Path(args.configs), Path(args.data), Path(args.out), Path(__file__), ROOT)


if __name__ == "__main__":
    stage_main(main)
