"""`modern-gpt shard I/N`: this clone is worker I of N. It trains its share of the pipeline's runs and pushes
each one to the default DVC remote as soon as it is done; an aggregator's `dvc repro --pull` then trains none.

DVC runs one repository's stages one at a time, so N machines (or N clones on one) each work in a clone
of their own and share their results through a DVC remote and its run-cache. The runs are every stage of a
training family (pipeline/families.py: run@, sweep@, and the optional aa@, loo@, rerun@, beyond@, scale@), in
`dvc stage list` order; worker I takes every N-th, starting from the I-th, and runs each through the unit of
distributed work (cli/support/shared_runs.py: pulled if the remote has it, else trained; then pushed). A worker
that dies has pushed its finished runs: run it again, or let the aggregator train what is missing. A SLURM array
runs one worker per task (docs/machines.md).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from ..core.errors import ConfigError, DataError
from .support.dvc_calls import TRAINING_STAGES, check_params, dvc
from .support.shared_runs import default_remote, pull_or_train, push_inputs


def add_parsers(sub) -> None:
    s = sub.add_parser("shard", help="worker I of N: train every N-th run of the pipeline, push each to the DVC remote")
    s.add_argument("share", metavar="I/N", help="this worker's number and the number of workers, e.g. 1/2")
    s.add_argument("--list", action="store_true", help="print this worker's runs and stop (trains nothing)")
    s.set_defaults(func=cmd_shard)


def parse_share(text: str) -> tuple[int, int]:
    found = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not found or not 1 <= int(found.group(1)) <= int(found.group(2)):
        raise ConfigError(f"shard {text!r}: give I/N, this worker's number I of N workers, 1 <= I <= N (e.g. 1/2)")
    return int(found.group(1)), int(found.group(2))


def share(names: list[str], training: set[str], i: int, n: int) -> list[str]:
    """Worker i of n's runs: every n-th training stage of `names`, from the i-th (1-based). The n shares are
    disjoint and together cover every run, whatever n."""
    runs = [name for name in names if name.split("@")[0] in training]
    return runs[i - 1::n]


def cmd_shard(args: argparse.Namespace) -> None:
    i, n = parse_share(args.share)
    if not Path("dvc.yaml").is_file():
        raise DataError("dvc.yaml: not found here; run shard at the root of a clone of the project")
    names = dvc("stage", "list", "--name-only").stdout.split()
    mine = share(names, TRAINING_STAGES, i, n)
    if args.list:
        print("\n".join(mine))
        return
    remote = default_remote()
    check_params()                                  # before anything is pushed or trained
    print(f"worker {i}/{n}: {len(mine)} runs; the remote: {remote}", flush=True)
    if not mine:
        return
    push_inputs(remote)
    counts = {"trained": 0, "pulled": 0, "already here": 0}
    for k, stage in enumerate(mine, 1):
        t0 = time.perf_counter()
        how = pull_or_train(stage, remote, again=f"modern-gpt shard {i}/{n}")
        counts[how] += 1
        print(f"[{k}/{len(mine)}] {stage}: {how} ({time.perf_counter() - t0:.0f} s), pushed", flush=True)
    print(f"worker {i}/{n} done: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
          + f"; every run is in {remote.name}. The aggregator: dvc repro --pull", flush=True)
