"""`modern-gpt repro [--jobs N|auto]`: `dvc repro` with the pending training runs N at a time, each its own
`dvc --wait-for-lock repro -s <run>` with its share of the cores as its threads.

DVC runs one `dvc repro`'s stages one after another, but separate DVC processes in one workspace run their
stages side by side: each holds the repository lock only while it reads and records, not while the command
runs. So: first the stages the runs need (generate, tokenize, plan: a plain `dvc repro` of them), then every
training stage that `dvc status` lists, N at a time, then a plain `dvc repro`, which finds the runs done and
runs the rest (serve, report) as DVC orders it. DVC records every stage in dvc.lock and its run-cache as
usual. Killed at any moment (kill -9 of the whole process group too), the same command starts again where it
stopped: finished runs are recorded, a killed run recorded nothing, and the dead processes' entries in DVC's
lock file block nothing (DVC drops one when it next needs its path).

Two single-threaded runs side by side did 1.51x the work of one two-threaded run on this project's 2-core
machine (docs/speed.md), so `--jobs auto` runs one job per usable core, one thread each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from ..core.cores import usable_cores
from ..core.errors import ConfigError, DataError
from .shard import DVC, TRAINING_STAGES, dvc, dvc_error

AHEAD = 1             # stages started before a core is free for them: their start-up overlaps the training
WAITING = "other training processes of this project hold them"     # what core/cores.py says while a run waits


def add_parsers(sub) -> None:
    s = sub.add_parser("repro", help="dvc repro with the training runs N at a time, each on its share of the cores")
    s.add_argument("--jobs", default="auto", metavar="N|auto",
                   help="training runs at once (default auto: one per usable core, each single-threaded)")


def parse_jobs(text: str, cores: int) -> tuple[int, int]:
    """(jobs, threads per job) for --jobs: auto is one single-threaded job per core; N jobs share the cores
    evenly (at least one thread each; jobs beyond the cores wait for a free one, see core/cores.py)."""
    if text == "auto":
        return cores, 1
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"--jobs {text!r}: give a whole number of training runs at once (1 or more), or auto")
    jobs = int(text)
    return jobs, max(1, cores // jobs)


def stage_graph() -> tuple[list[str], set[str]]:
    """(the stages the training runs depend on, the training runs): every stage of a training family trains
    one, read from DVC's own graph of dvc.yaml."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo
    import networkx as nx

    try:
        with Repo(".") as repo:
            graph = repo.index.graph                        # edges: a stage -> the stages it depends on
            training = {s for s in graph.nodes if s.addressing.split("@")[0] in TRAINING_STAGES}
            upstream = set().union(*(nx.descendants(graph, s) for s in training)) - training
            return sorted(s.addressing for s in upstream), {s.addressing for s in training}
    except DvcException as e:
        raise DataError(f"dvc.yaml: {e}") from None


def pending(training: set[str]) -> list[str]:
    """The training runs `dvc status` says must run (or be restored from the run-cache), in dvc.yaml order."""
    done = dvc("status", "--json", check=False)
    if done.returncode:
        raise DataError(f"dvc status: {dvc_error(done)}")
    changed = set(json.loads(done.stdout or "{}"))
    order = dvc("stage", "list", "--name-only").stdout.split()
    return [name for name in order if name in training and name in changed]


def at_once(jobs: int, threads: int, cores: int) -> int:
    """How many stage processes the runner keeps started: `jobs`, and AHEAD more where their core slots cannot
    all be free at once (so the extra ones wait for a core and never make more than `jobs` train)."""
    return jobs + (AHEAD if (jobs + 1) * threads > cores else 0)


def run_jobs(stages: list[str], jobs: int, threads: int, cores: int) -> None:
    """Each stage as its own `dvc --wait-for-lock repro -s`, `jobs` training at a time with `threads` threads each;
    one line per finished stage. One more stage than `jobs` is started ahead: its DVC and Python start-up
    (seconds per run) overlap the others' training, and it waits for its core slots (core/cores.py) before it
    trains, so no more than `jobs` train at once (where the cores would leave room for one more, none is
    started ahead). After a failure nothing new starts; the running ones finish, then its error."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    started = at_once(jobs, threads, cores)
    queue, running, failed, k = list(stages), {}, [], 0
    while queue or running:
        while queue and len(running) < started and not failed:
            name = queue.pop(0)
            log = tempfile.TemporaryFile("w+", encoding="utf-8")    # not a pipe: a full one would stall the run
            running[name] = (time.perf_counter(), log, subprocess.Popen(
                [*DVC, "--wait-for-lock", "repro", "-s", name], env=env, stdout=log, stderr=subprocess.STDOUT))
        time.sleep(0.2)
        for name, (t0, log, proc) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[name]
            log.seek(0)
            out = log.read()
            log.close()
            k += 1
            if proc.returncode:
                failed.append(f"{name}: {dvc_error(subprocess.CompletedProcess([], proc.returncode, out, ''))}")
                print(f"[{k}/{len(stages)}] {name}: failed", flush=True)
                continue
            how = "restored from the run-cache" if f"Stage '{name}' is cached" in out else "trained"
            waited = ", its wait for a core included" if WAITING in out else ""
            print(f"[{k}/{len(stages)}] {name}: {how} ({time.perf_counter() - t0:.0f} s{waited})", flush=True)
    if failed:
        raise DataError(f"{failed[0]}; the runs that finished are recorded: run the same command again")


def cmd_repro(args: argparse.Namespace) -> None:
    if not Path("dvc.yaml").is_file():
        raise DataError("dvc.yaml: not found here; run modern-gpt repro at the root of a clone of the project")
    cores = usable_cores()
    jobs, threads = parse_jobs(args.jobs, cores)
    upstream, training = stage_graph()
    if upstream:                                    # generate, tokenize, plan: seconds, DVC's own output
        streamed("repro", *upstream)
    todo = pending(training)
    if todo:
        print(f"{len(todo)} training runs, {min(jobs, len(todo))} at a time, {threads} thread"
              f"{'s' if threads > 1 else ''} each ({cores} cores)", flush=True)
        run_jobs(todo, jobs, threads, cores)
    streamed("repro")                               # the runs are done: serve, report and anything else


def streamed(*args: str) -> None:
    """A dvc command whose output the user reads as it comes; a failure stops here in one line (DVC's own
    error, and a stage's, are printed above it)."""
    if subprocess.run([*DVC, *args]).returncode:
        raise DataError(f"dvc {' '.join(args)} failed (its error is above); fix it and run the same command again")


COMMANDS = {"repro": cmd_repro}
