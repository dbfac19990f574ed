"""Core slots and GPU slots: a training process holds one core slot per thread it runs, and one GPU slot per GPU
it trains on, so that the project's processes side by side (the runner's jobs, shard workers in clones on one
machine, the tests' own runs) never run more threads than the machine has cores, nor two runs on one GPU.

Threads that share a core spin against each other: measured here, two two-threaded trainings at once each ran
8-40x slower than one alone. A slot is an exclusive flock on a file in one folder per machine and user; the
kernel releases it when its process ends, however it ends (kill -9 too), so no slot is ever stale. A process
that asks for more slots than are free waits: the asked-for thread count, never a smaller one, is what it runs
with, because the thread count changes a run's last bits.

A run takes its GPU slot in its own process before CUDA starts, and then sets CUDA_VISIBLE_DEVICES to the GPU it
holds, so CUDA shows it that one device (cuda:0). Under torchrun the run's N processes share N GPUs: local rank
0 takes them together and hands their ids to the other ranks (each trains on cuda:LOCAL_RANK of them).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import ConfigError

POLL_SECS = 0.5
WAITING = "other training processes of this project hold them"     # what a waiting run says (the runner reads it)
RUNS_PER_GPU = "MODERN_GPT_RUNS_PER_GPU"       # set by the runner when --jobs asks for more runs than GPUs


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask: a container's or taskset's share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                        # macOS has no affinity call
        return os.cpu_count() or 1


def slots_dir() -> Path:
    """One folder per machine and user; MODERN_GPT_CORES_DIR overrides it (tests give each its own)."""
    return Path(os.environ.get("MODERN_GPT_CORES_DIR") or Path(tempfile.gettempdir()) / f"modern-gpt-cores-{os.getuid()}")


def _try_hold(candidates: list[tuple[str, str]], n: int, folder: Path) -> dict[str, int] | None:
    """Lock one slot file for each of n different units (a core, a GPU), trying `candidates` ((unit, file name))
    in order, or None (holding nothing) when fewer than n units have a free slot. {unit: its locked file}."""
    held: dict[str, int] = {}
    for unit, name in candidates:
        if unit in held:
            continue
        fd = os.open(folder / name, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        held[unit] = fd
        if len(held) == n:
            return held
    for fd in held.values():                      # all or nothing: two waiters never deadlock on half each
        os.close(fd)
    return None


@contextmanager
def _hold(candidates: list[tuple[str, str]], n: int, folder: Path, what: str) -> Iterator[list[str]]:
    """Hold n units' slots for the body, waiting (and saying so once) until they are free; yields the units."""
    folder.mkdir(parents=True, exist_ok=True)
    told = False
    while (held := _try_hold(candidates, n, folder)) is None:
        if not told:
            print(f"waiting for {what}: {WAITING}", file=sys.stderr, flush=True)
            told = True
        time.sleep(POLL_SECS)
    try:
        yield list(held)
    finally:
        for fd in held.values():
            os.close(fd)


@contextmanager
def hold_cores(threads: int, *, cores: int | None = None, folder: Path | None = None) -> Iterator[int]:
    """Hold `threads` core slots (at most the machine's cores) for the body, waiting until they are free; yields
    how many are held. Closing the files (or the process ending) releases them."""
    cores = usable_cores() if cores is None else cores
    n = max(1, min(int(threads), cores))
    slots = [(str(k), f"core-{k}") for k in range(cores)]
    with _hold(slots, n, slots_dir() if folder is None else folder, f"{n} of {cores} cores"):
        yield n


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA names them, found without starting CUDA here (CUDA reads
    CUDA_VISIBLE_DEVICES once, when it starts): the entries of CUDA_VISIBLE_DEVICES where it is set (indices or
    UUIDs; CUDA stops at the first negative one), else every GPU that torch counts in a child process (none with a
    CPU build of torch)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        ids = []
        for item in (part.strip() for part in listed.split(",")):
            if not item or item.startswith("-"):
                break
            ids.append(item)
        return ids
    count = subprocess.run([sys.executable, "-c", "import torch\n"
                            "print(torch.cuda.device_count() if torch.version.cuda else 0)"],
                           capture_output=True, text=True).stdout.strip()
    return [str(k) for k in range(int(count))] if count.isdigit() else []


def runs_per_gpu() -> int:
    """How many runs may share one GPU: 1, unless the runner's --jobs asks for more runs than there are GPUs."""
    raw = os.environ.get(RUNS_PER_GPU, "1")
    return int(raw) if raw.isdigit() and int(raw) >= 1 else 1


def shared_by(jobs: int, per_run: int, gpus: int) -> int:
    """Runs per GPU when `jobs` runs of `per_run` GPUs each train at once on `gpus`: 1 while they fit."""
    return max(1, math.ceil(jobs * per_run / gpus))


@contextmanager
def hold_gpus(n: int, gpus: list[str], *, per_gpu: int = 1, folder: Path | None = None) -> Iterator[list[str]]:
    """Hold n of `gpus` (n different ones, together) for the body, waiting until they are free, and make them the
    only GPUs CUDA shows this process (CUDA_VISIBLE_DEVICES; call this before CUDA starts). A GPU has `per_gpu`
    slots: free GPUs are filled before any GPU gets a second run. Yields the held GPUs' ids."""
    if n > len(gpus):
        raise ConfigError(f"a run on {n} GPU{'s' if n > 1 else ''} together: {len(gpus)} visible here "
                          f"({', '.join(gpus) or 'none'}); allowed: at most {len(gpus)} (launch's --nproc_per_node)")
    slots = [(gpu, f"gpu-{re.sub(r'[^A-Za-z0-9.-]', '_', gpu)}-{k}") for k in range(per_gpu) for gpu in gpus]
    what = f"{n} of {len(gpus)} GPUs" if n > 1 or per_gpu == 1 else f"1 of {len(gpus)} GPUs x {per_gpu} runs each"
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    with _hold(slots, n, slots_dir() if folder is None else folder, what) as held:
        held = sorted(held, key=gpus.index)
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(held)
        try:
            yield held
        finally:
            if before is None:
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = before


def trains_on_gpu(device: str, gpus: list[str]) -> bool:
    """Whether a run with train.device `device` trains on a GPU here: cuda always, auto where one is visible."""
    return device == "cuda" or (device == "auto" and bool(gpus))


def training_gpus(device: str) -> list[str]:
    """The visible GPUs a run with train.device `device` trains on here ([]: it trains on the CPU); cuda with none
    visible is refused in one line."""
    if device == "cpu":
        return []
    gpus = visible_gpus()
    if not trains_on_gpu(device, gpus):
        return []
    if not gpus:                                  # cuda, and none visible
        raise ConfigError("train.device='cuda': no CUDA device is visible here (CUDA_VISIBLE_DEVICES, or a CUDA "
                          "build of torch); allowed: cpu, cuda, auto")
    return gpus


@contextmanager
def run_gpus(device: str, *, folder: Path | None = None) -> Iterator[list[str]]:
    """The GPU slots of one training run with train.device `device`, taken in its own process before CUDA starts:
    none on the CPU; one GPU for a plain process; under torchrun, LOCAL_WORLD_SIZE GPUs that local rank 0 takes
    together and hands to the node's other ranks (the agent that started them is their common parent). Yields the
    held GPUs' ids, as this machine numbers them ([] on the CPU)."""
    gpus = training_gpus(device)
    if not gpus:
        yield []
        return
    folder = slots_dir() if folder is None else folder
    local, together = int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    handoff = folder / f"torchrun-{os.getppid()}.json"
    if local > 0:                                 # torchrun's other ranks: the GPUs local rank 0 holds
        held = _handed(handoff)
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(held)     # the process ends with the run: nothing to restore
        yield held
        return
    with hold_gpus(together, gpus, per_gpu=runs_per_gpu(), folder=folder) as held:
        if together > 1:
            tmp = handoff.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"pid": os.getpid(), "gpus": held}))
            tmp.replace(handoff)                  # whole or absent: the others never read half of it
        try:
            yield held
        finally:
            if together > 1:
                handoff.unlink(missing_ok=True)


def _handed(handoff: Path) -> list[str]:
    """The GPUs torchrun's local rank 0 holds for this run: its hand-off file, once it is written by a live
    process started by the same agent as this one (a file a dead run left behind is not read)."""
    while True:
        try:
            info = json.loads(handoff.read_text())
            if _parent(info["pid"]) == os.getppid():
                return list(info["gpus"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        time.sleep(POLL_SECS / 5)


def _parent(pid: int) -> int | None:
    """The parent of a live process (Linux's /proc), or None."""
    try:
        return int(Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
