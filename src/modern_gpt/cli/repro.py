"""`modern-gpt repro [--jobs N|auto]`: `dvc repro` with the pending training runs N at a time, each its own
`dvc --wait-for-lock repro -s <run>` with its share of the cores as its threads.

DVC runs one `dvc repro`'s stages one after another, but separate DVC processes in one workspace run their
stages side by side: each holds the repository lock only while it reads and records, not while the command
runs. So: first the stages the runs need (generate, tokenize, plan: a plain `dvc repro` of them), then every
training stage that `dvc status` lists, N at a time, then a plain `dvc repro`, which finds the runs done and
runs the rest (serve, report) as DVC orders it. DVC records every stage in dvc.lock and its run-cache as
usual. Killed at any moment (kill -9 of the whole process group too), the same command starts again where it
stopped: finished runs are recorded, a killed run recorded nothing, and the dead processes' entries in DVC's
lock file block nothing (DVC drops one when it next needs its path). A DVC process killed while writing
dvc.lock leaves it empty, and one killed while writing that lock file (.dvc/tmp/rwlock) leaves it cut short:
the command removes such a file first, and DVC restores the finished runs from its run-cache
(cli/support/dvc_calls.py: mend_killed_writes).

Two single-threaded runs side by side did 1.51x the work of one two-threaded run on this project's 2-core
machine (docs/speed.md), so `--jobs auto` runs one job per usable core, one thread each. When the runs train on
CUDA (train.device cuda, or auto where a GPU is visible) `--jobs auto` is one run per visible GPU (per
--nproc_per_node GPUs under torchrun), each with cores / jobs threads; each run takes its GPU in its own process
(core/slots.py), so two never share one unless --jobs asks for more runs than there are GPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..config import TrainConfig
from ..config.sections import LaunchConfig
from ..config import params as params_file
from ..core.slots import RUNS_PER_GPU, WAITING, shared_by, training_gpus, usable_cores
from ..core.errors import ConfigError, DataError
from .support.dvc_calls import DVC, TRAINING_STAGES, check_params, dvc, dvc_error, mend_killed_writes

AHEAD = 1             # stages started before a core is free for them: their start-up overlaps the training


def add_parsers(sub) -> None:
    s = sub.add_parser("repro", help="dvc repro with the training runs N at a time, each on its share of the cores")
    s.add_argument("--jobs", default="auto", metavar="N|auto",
                   help="training runs at once (default auto: one per usable core, each single-threaded, or one "
                        "per GPU); with --ray, each run's threads are the share --jobs gives it here")
    s.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="the training runs as tasks on the Ray cluster at ADDRESS (none: a local one), each pulled "
                        "from the DVC remote or trained, then pushed; needs the extra: pip install -e '.[ray]'")
    s.add_argument("--clone-from", metavar="URL", default=None,
                   help="with --ray: where each node clones the commit from (default: this clone's folder, which "
                        "every node must then see)")
    s.add_argument("--workdir", metavar="DIR", default=str(Path.home() / ".cache" / "modern-gpt" / "ray"),
                   help="with --ray: the folder each node keeps its clone in (default: ~/.cache/modern-gpt/ray)")
    s.set_defaults(func=cmd_repro)


def parse_jobs(text: str, cores: int, gpus: int = 0, per_run: int = 1) -> tuple[int, int]:
    """(jobs, threads per job) for --jobs: auto is one single-threaded job per core, or with `gpus` (the runs
    train on CUDA, `per_run` GPUs each) one job per run's GPUs; N jobs share the cores evenly (at least one thread
    each; jobs beyond the cores, or the GPUs, wait for a free one, see core/slots.py)."""
    if text == "auto":
        jobs = max(1, gpus // per_run) if gpus else cores
    elif not text.isdigit() or int(text) < 1:
        raise ConfigError(f"--jobs {text!r}: give a whole number of training runs at once (1 or more), or auto")
    else:
        jobs = int(text)
    return jobs, 1 if text == "auto" and not gpus else max(1, cores // jobs)


@dataclass(frozen=True)
class Devices:
    """Where the runs train: `gpus` (the visible GPUs' ids; empty: on the CPU), `per_run` GPUs each (torchrun's
    --nproc_per_node)."""
    gpus: tuple[str, ...] = ()
    per_run: int = 1

    def per_gpu(self, jobs: int) -> int:
        """Runs that may share one GPU: 1, unless --jobs asks for more runs than there are GPUs."""
        return shared_by(jobs, self.per_run, len(self.gpus))

    def env(self, jobs: int) -> dict[str, str]:
        """What each run's process is told: every visible GPU (it takes its own among them, core/slots.py), and
        how many runs share one."""
        if not self.gpus:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(self.gpus), RUNS_PER_GPU: str(self.per_gpu(jobs))}


def devices(path: str | Path = "params.yaml") -> Devices:
    """From params.yaml's train.device and launch, and the GPUs visible here: on a GPU, each run takes one, or under
    torchrun --nproc_per_node N (or its `gpu` / `auto`: every visible one); refused in one line before anything
    starts when that many cannot be had."""
    raw = params_file.load(("train", "launch"), path, optional=("launch",))
    device = TrainConfig.from_dict(raw["train"], "train").device
    gpus = training_gpus(device)
    if not gpus:
        return Devices()
    launch = LaunchConfig.parse(raw.get("launch"))
    per_run = launch.nproc or (len(gpus) if launch.command != "python" else 1)
    if per_run > len(gpus):
        raise ConfigError(f"launch={launch.command!r}: each run trains on {per_run} GPUs together, {len(gpus)} are "
                          f"visible here ({', '.join(gpus)}); allowed: --nproc_per_node={len(gpus)} or fewer")
    return Devices(tuple(gpus), per_run)


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


def at_once(jobs: int, threads: int, cores: int, gpu_slots: int | None = None, per_run: int = 1) -> int:
    """How many stage processes the runner keeps started: `jobs`, and AHEAD more where their core slots (or GPU
    slots: `gpu_slots` of them, `per_run` a run) cannot all be free at once (so the extra ones wait for a slot and
    never make more than `jobs` train)."""
    short = (jobs + 1) * threads > cores or (gpu_slots is not None and (jobs + 1) * per_run > gpu_slots)
    return jobs + (AHEAD if short else 0)


def run_jobs(stages: list[str], jobs: int, threads: int, cores: int, where: Devices = Devices(),
             pull: bool = False) -> None:
    """Each stage as its own `dvc --wait-for-lock repro -s` (`pull`: with --pull, so a run the default remote's
    run-cache holds is restored with its outputs from there), `jobs` training at a time with `threads` threads each;
    one line per finished stage. One more stage than `jobs` is started ahead: its DVC and Python start-up
    (seconds per run) overlap the others' training, and it waits for its core slots (core/slots.py) before it
    trains, so no more than `jobs` train at once (where the cores would leave room for one more, none is
    started ahead). After a failure nothing new starts; the running ones finish, then its error."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), **where.env(jobs)}
    slots = len(where.gpus) * where.per_gpu(jobs) if where.gpus else None
    started = at_once(jobs, threads, cores, slots, where.per_run)
    queue, running, failed, k = list(stages), {}, [], 0
    while (queue and not failed) or running:
        while queue and len(running) < started and not failed:
            name = queue.pop(0)
            log = tempfile.TemporaryFile("w+", encoding="utf-8")    # not a pipe: a full one would stall the run
            running[name] = (time.perf_counter(), log, subprocess.Popen(
                [*DVC, "--wait-for-lock", "repro", *(["--pull"] if pull else []), "-s", name], env=env, stdout=log,
                stderr=subprocess.STDOUT))
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
            waited = f", its wait for a {'GPU or core' if where.gpus else 'core'} included" if WAITING in out else ""
            print(f"[{k}/{len(stages)}] {name}: {how} ({time.perf_counter() - t0:.0f} s{waited})", flush=True)
    if failed:
        raise DataError(f"{failed[0]}; the runs that finished are recorded: run the same command again")


def cmd_repro(args: argparse.Namespace) -> None:
    if not Path("dvc.yaml").is_file():
        raise DataError("dvc.yaml: not found here; run modern-gpt repro at the root of a clone of the project")
    check_params()                                  # settle's rounds and reproduce come through here too
    mend_killed_writes()
    cores = usable_cores()
    if args.ray is not None:
        from .support.ray_runs import import_ray, run_on_ray    # ray is an extra: imported only here, first
        import_ray(args.ray or None)
        _, threads = parse_jobs(args.jobs, cores)
        device = TrainConfig.from_dict(params_file.load(("train",))["train"], "train").device
        run_on_ray(args.ray or None, lambda: pending(stage_graph()[1]), threads, cores, device, args.clone_from,
                   args.workdir)
        streamed("repro", "--pull")                 # every run is in the remote: serve, report, training nothing
        return
    where, pull = devices(), getattr(args, "pull", False)     # pull: reproduce --remote's, restoring runs from it
    jobs, threads = parse_jobs(args.jobs, cores, len(where.gpus), where.per_run)
    upstream, training = stage_graph()
    if upstream:                                    # generate, tokenize, plan: seconds, DVC's own output
        streamed("repro", *upstream)
    todo = pending(training)
    if todo:
        each = f"{threads} thread{'s' if threads > 1 else ''}"
        if where.gpus:
            each = f"{where.per_run} GPU{'s' if where.per_run > 1 else ''} and {each}"
        gpus = f", GPUs {','.join(where.gpus)}" if where.gpus else ""
        print(f"{len(todo)} training runs, {min(jobs, len(todo))} at a time, {each} each ({cores} cores{gpus})",
              flush=True)
        run_jobs(todo, jobs, threads, cores, where, pull=pull)
    streamed("repro", *(["--pull"] if pull else []))   # the runs are done: serve, report and anything else


def streamed(*args: str) -> None:
    """A dvc command whose output the user reads as it comes; a failure stops here in one line (DVC's own
    error, and a stage's, are printed above it)."""
    if subprocess.run([*DVC, *args]).returncode:
        raise DataError(f"dvc {' '.join(args)} failed (its error is above); fix it and run the same command again")
