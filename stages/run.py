"""Stage run@<row>-<seed> (and aa@<seed>, loo@<flag>-<seed>): train one row's config on one seed, then evaluate it.

Reads configs/<row>.json and data/tokenized/; writes data/runs/<row>/<seed>/model.pt (the weights) and
run.json (the run record: losses of the trained weights, the loss curve, parameter counts, seconds,
tokens per second, and the md5 of the code this process imported). One process per run: the unit
DVC caches, restores and shares. Under `torchrun --nproc_per_node=N` (params `launch`), N processes train
the run together with DistributedDataParallel, and the first one writes it. Its thread count is torch's
(OMP_NUM_THREADS, which `modern-gpt repro` sets to each job's share of the cores; else every core). On CUDA it
first takes its GPU slot (core/slots.py), so that runs side by side never share a GPU.
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
import contextlib
import dataclasses

import torch

from modern_gpt.core.slots import hold_cores, run_gpus
from modern_gpt.core.files import read_json, write_json
from modern_gpt.core.stage import code_files, code_md5, stage_main
from modern_gpt.records.inputs import CorpusMeta, RowConfig
from modern_gpt.training.batches import load_tokens
from modern_gpt.training.distributed import ranks
from modern_gpt.training.run import run

PARAMS = ()                        # none: a run reads its resolved config file, which the plan stage writes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("row", help="the row's slug: configs/<row>.json")
    ap.add_argument("seed", type=int)
    ap.add_argument("--configs", default="configs")
    ap.add_argument("--data", default="data/tokenized")
    ap.add_argument("--out", default="data/runs", help="writes <out>/<row>/<seed>/")
    args = ap.parse_args()
    config, data = Path(args.configs) / f"{args.row}.json", Path(args.data)
    spec = RowConfig.from_dict(read_json(config), str(config))
    meta = CorpusMeta.from_dict(read_json(data / "meta.json"), str(data / "meta.json"))
    # The GPU slot first (on CUDA; before CUDA starts, which then shows this process that GPU only), then one core
    # slot per thread (core/slots.py), waiting for them while other runs of this project hold them, and never more
    # threads than cores. Under torchrun the processes of one run must start together, so they take no core slots
    # (torchrun gives each process 1 thread); their local rank 0 takes the run's GPUs together.
    cores = hold_cores(torch.get_num_threads()) if ranks().world == 1 else contextlib.nullcontext()
    with run_gpus(spec.train.device) as gpus, cores as threads:
        if threads:
            torch.set_num_threads(threads)
        model, record = run(args.row, spec.model, spec.train, load_tokens(data / "train.bin"),
                            load_tokens(data / "val.bin"), args.seed, val_chars=meta.val.chars)
    if ranks().rank != 0:          # under torchrun every process holds the same result: the first one writes it
        return
    files = code_files(__file__, ROOT)
    record = dataclasses.replace(record, code_md5=code_md5(files, ROOT), code_files=tuple(files),
                                 device_index=",".join(gpus))
    out = Path(args.out) / args.row / str(args.seed)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out / "model.pt")
    write_json(out / "run.json", record.to_dict())


if __name__ == "__main__":
    stage_main(main)
