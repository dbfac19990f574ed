"""`modern-gpt shard I/N`: this clone is worker I of N. It trains its share of the pipeline's runs and pushes
each one to the default DVC remote as soon as it is done; an aggregator's `dvc repro --pull` then trains none.

DVC runs one repository's stages one at a time, so N machines (or N clones on one) each work in a clone
of their own and share their results through a DVC remote and its run-cache. The runs are every stage of a
training family (pipeline/families.py: run@, sweep@, and the optional aa@, loo@, rerun@, beyond@), in `dvc stage
list` order;
worker I takes every N-th, starting from the I-th. Each run is `dvc repro --pull <run>` (a run another worker
already pushed is pulled, not trained) and then `dvc push --run-cache <run>`. A worker that dies has pushed
its finished runs and nothing of the one it was training (DVC commits a stage's outputs only when its command
succeeds): run it again, or let the aggregator train what is missing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from ..core.errors import ConfigError, DataError

from ..pipeline.families import TRAINING

DVC = [sys.executable, "-m", "dvc"]
TRAINING_STAGES = frozenset(f.stage for f in TRAINING)     # dvc.yaml's stages that train a run


def add_parsers(sub) -> None:
    s = sub.add_parser("shard", help="worker I of N: train every N-th run of the pipeline, push each to the DVC remote")
    s.add_argument("share", metavar="I/N", help="this worker's number and the number of workers, e.g. 1/2")
    s.add_argument("--list", action="store_true", help="print this worker's runs and stop (trains nothing)")


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


def dvc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([*DVC, *args], capture_output=True, text=True)
    if check and done.returncode:
        raise DataError(f"dvc {' '.join(args)}: {dvc_error(done)}")
    return done


def dvc_error(done: subprocess.CompletedProcess) -> str:
    """The one-line reason: a stage's own (`error: ...`, a bad param say), else DVC's first ERROR line, else the
    last line DVC printed."""
    lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    ours = [line.removeprefix("error:").strip() for line in lines if line.startswith("error: ")]
    errors = [line.removeprefix("ERROR:").strip() for line in lines if line.startswith("ERROR")]
    return (ours or errors or lines[-1:] or [f"exit status {done.returncode}"])[0]


def default_remote() -> tuple[str, str]:
    """(name, url) of the default DVC remote, the one `dvc repro --pull` reads."""
    name = dvc("config", "core.remote", check=False).stdout.strip()
    if not name:
        raise ConfigError("DVC remote: none is the default; the workers share their runs through one: "
                          "dvc remote add -d NAME URL (a folder they all reach, s3://, ssh://, ...)")
    url = dvc("config", f"remote.{name}.url").stdout.strip()
    if "://" not in url and not Path(url).is_absolute():       # a folder: written relative to .dvc/config
        url = str((Path(".dvc") / url).resolve())
    return name, url


def cmd_shard(args: argparse.Namespace) -> None:
    i, n = parse_share(args.share)
    if not Path("dvc.yaml").is_file():
        raise DataError("dvc.yaml: not found here; run shard at the root of a clone of the project")
    names = dvc("stage", "list", "--name-only").stdout.split()
    mine = share(names, TRAINING_STAGES, i, n)
    if args.list:
        print("\n".join(mine))
        return
    remote, url = default_remote()
    print(f"worker {i}/{n}: {len(mine)} runs; the remote: {remote} ({url})", flush=True)
    if not mine:
        return
    # the runs' inputs first (seconds: generate, tokenize, plan), pushed so the aggregator can pull them; the
    # push also shows the remote can be written before any run is trained
    dvc("repro", "plan")
    pushed = dvc("push", "generate", "tokenize", check=False)
    if pushed.returncode:
        raise DataError(f"DVC remote {remote!r} ({url}) cannot be written: {dvc_error(pushed)}; nothing was "
                        f"trained (mend it with: dvc remote modify {remote} url URL)")
    counts = {"trained": 0, "pulled": 0, "already here": 0}
    for k, stage in enumerate(mine, 1):
        t0 = time.perf_counter()
        out = dvc("repro", "--pull", stage).stdout
        how = ("trained" if f"Running stage '{stage}'" in out else
               "pulled" if f"Stage '{stage}' is cached" in out else "already here")
        counts[how] += 1
        pushed = dvc("push", "--run-cache", stage, check=False)
        if pushed.returncode:
            raise DataError(f"DVC remote {remote!r} ({url}): pushing {stage} failed: {dvc_error(pushed)}; the runs "
                            f"done so far are in this clone's cache: rerun `modern-gpt shard {i}/{n}` to push them")
        print(f"[{k}/{len(mine)}] {stage}: {how} ({time.perf_counter() - t0:.0f} s), pushed", flush=True)
    print(f"worker {i}/{n} done: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
          + f"; every run is in {remote}. The aggregator: dvc repro --pull", flush=True)


COMMANDS = {"shard": cmd_shard}
