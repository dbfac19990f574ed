"""Core slots: a training process holds one slot per thread it runs, so that the project's processes side by
side (the runner's jobs, shard workers in clones on one machine, the tests' own runs) never run more threads
than the machine has cores.

Threads that share a core spin against each other: measured here, two two-threaded trainings at once each ran
8-40x slower than one alone. A slot is an exclusive flock on a file in one folder per machine and user; the
kernel releases it when its process ends, however it ends (kill -9 too), so no slot is ever stale. A process
that asks for more slots than are free waits: the asked-for thread count, never a smaller one, is what it runs
with, because the thread count changes a run's last bits.
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

POLL_SECS = 0.5


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask: a container's or taskset's share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                        # macOS has no affinity call
        return os.cpu_count() or 1


def slots_dir() -> Path:
    """One folder per machine and user; MODERN_GPT_CORES_DIR overrides it (tests give each its own)."""
    return Path(os.environ.get("MODERN_GPT_CORES_DIR") or Path(tempfile.gettempdir()) / f"modern-gpt-cores-{os.getuid()}")


def _try_hold(n: int, cores: int, folder: Path) -> list[int] | None:
    """Open and lock n free slot files of `cores`, or None (holding nothing) when fewer are free."""
    held = []
    for k in range(cores):
        fd = os.open(folder / f"core-{k}", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        held.append(fd)
        if len(held) == n:
            return held
    for fd in held:                               # all or nothing: two waiters never deadlock on half each
        os.close(fd)
    return None


@contextmanager
def hold_cores(threads: int, *, cores: int | None = None, folder: Path | None = None) -> Iterator[int]:
    """Hold `threads` core slots (at most the machine's cores) for the body, waiting until they are free; yields
    how many are held. Closing the files (or the process ending) releases them."""
    cores = usable_cores() if cores is None else cores
    n = max(1, min(int(threads), cores))
    folder = slots_dir() if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    told = False
    while (held := _try_hold(n, cores, folder)) is None:
        if not told:
            print(f"waiting for {n} of {cores} cores: other training processes of this project hold them",
                  file=sys.stderr, flush=True)
            told = True
        time.sleep(POLL_SECS)
    try:
        yield n
    finally:
        for fd in held:
            os.close(fd)
