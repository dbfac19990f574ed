"""`modern-gpt repro --ray [ADDRESS]`: every pending training run as a Ray task, on a Ray cluster (or a local one
started for the command), each doing the unit of distributed work (shared_runs.py: pulled from the DVC remote if
it holds the run, else trained; then pushed with its run-cache entry); then `dvc repro --pull` here, which trains
nothing and writes the report.

Ray schedules the tasks by what they ask for (a GPU each when the runs train on CUDA, else their threads as CPUs),
retries a task whose worker dies (max_retries), and sends each to whichever node is free. Each node keeps one
clone of the commit (made by its first task, under a lock; its DVC remote set to the driver's, as an absolute
URL, in .dvc/config.local), and the node's tasks run side by side in it through DVC's lock, as the local
runner's do. A task's `dvc` and `stages/run.py` processes live in its worker's process group, so a worker killed
with its group leaves no orphan to hold core slots or push a result while the retry trains.

Ray is an extra (`pip install -e .[ray]`): importing this project never imports it.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ConfigError, DataError
from .dvc_calls import dvc
from .shared_runs import Remote, default_remote, pull_or_train, push_inputs

GUARDED = ("params.yaml", "dvc.yaml", "configs", "src", "stages")   # what decides what a run trains
INSTALL = "pip install -e '.[ray]' (or pip install -r requirements.txt, which pins it)"
RETRIES = 3                       # Ray's retries of a task whose worker died


def import_ray(address: str | None = None):
    """Ray, imported with this driver's token mode set first (driver_auth: Ray reads the mode once, at import)."""
    driver_auth(address)
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--ray: ray is not installed here; install it: {INSTALL}") from None
    return ray


@dataclass(frozen=True)
class Source:
    """What every node clones: a git URL (or a path every node sees) and the commit to check out."""
    url: str
    commit: str


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd)
    if done.returncode:
        raise DataError(f"git {' '.join(args)}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return done.stdout.rstrip()                    # not the left: a porcelain status line starts with a space


def source(url: str | None) -> Source:
    """This clone's commit, refused in one line where what a run trains differs from it (the workers would train
    something else), and where the nodes clone it from: `url`, else this clone's folder."""
    commit = git("rev-parse", "HEAD")
    changed = git("status", "--porcelain", "--untracked-files=all", "--", *GUARDED).splitlines()
    if changed:
        files = sorted({line[3:].split(" -> ")[-1] for line in changed})
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise ConfigError(f"--ray: {shown} differ from commit {commit[:12]}, which the workers check out: they "
                          f"would train something else; commit (and push) them first")
    return Source(url or git("rev-parse", "--show-toplevel"), commit)


TOKEN_SOURCES = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"


def token_source() -> str | None:
    """Where Ray would find a token for this driver, in Ray's order (RAY_AUTH_TOKEN, then the file at
    RAY_AUTH_TOKEN_PATH, then ~/.ray/auth_token), or None: none; a RAY_AUTH_TOKEN_PATH it cannot read is one line."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if not path:
        return "~/.ray/auth_token" if (Path.home() / ".ray" / "auth_token").is_file() else None
    try:
        token = Path(path).read_text().strip()
    except OSError as e:
        token, why = "", e.strerror or str(e)
    else:
        why = "it is empty"
    if not token:
        raise ConfigError(f"RAY_AUTH_TOKEN_PATH={path}: cannot read the Ray token there ({why}); point it at the "
                          "cluster's token file, or unset it")
    return f"RAY_AUTH_TOKEN_PATH={path}"


def driver_auth(address: str | None) -> None:
    """The driver sends a token whenever it has one. Ray 2.60 turns token authentication on by itself for a local
    cluster (writing ~/.ray/auth_token) and for `ray start --head` where that file exists, but never for a driver
    given an address: such a driver would send no token, and a cluster with authentication on refuses it. A token
    sent to a cluster without authentication is ignored, so with RAY_AUTH_MODE unset and a token where Ray looks,
    the driver turns it on; RAY_AUTH_MODE, where set, decides (docs/machines.md). import_ray calls it: Ray reads the
    mode once, when it is imported."""
    if address and "RAY_AUTH_MODE" not in os.environ and token_source():
        os.environ["RAY_AUTH_MODE"] = "token"


def connect(ray, address: str | None, cores: int) -> None:
    """Ray's cluster at `address`, or a new local one of this machine's cores when it is None; one line when it
    cannot be reached or refuses this driver's token, Ray's own log lines held back (they go to a file while Ray
    connects, and are read for the refusal)."""
    local = {} if address else {"num_cpus": cores, "include_dashboard": False}
    host, _, port = (address or "").rpartition(":")
    if host and port.isdigit() and "://" not in address:
        import socket                              # a plain HOST:PORT: is anything listening? (Ray itself would
        try:                                       # retry for a minute, printing its own log lines)
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as e:
            raise DataError(f"--ray: cannot reach the Ray cluster at {address}: {e.strerror or e}; start it with "
                            "`ray start --head`, or give its address") from None
    where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
    with held_stderr() as said:
        try:
            ray.init(address=address or "local", log_to_driver=False, logging_level="ERROR", **local)
            return
        except Exception as e:                     # Ray raises ConnectionError, RuntimeError, ValueError, ...
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    if "InvalidAuthToken" in said[0] or "Unauthenticated" in said[0]:
        source = token_source()
        sent = (f"this driver's token (from {source}"
                + (", which a local `modern-gpt repro --ray` may have written" if source == "~/.ray/auth_token" else "")
                + ")" if os.environ.get("RAY_AUTH_MODE", "").lower() == "token"
                else "this driver, which sent no token (RAY_AUTH_MODE is not token)")
        raise DataError(f"--ray: {where} refused {sent}: its token authentication is on; give the driver the "
                        f"cluster's token in {TOKEN_SOURCES} (docs/machines.md)")
    raise DataError(f"--ray: cannot reach {where}: {first}")


@contextmanager
def held_stderr():
    """Everything written to this process's stderr (file descriptor 2: Ray's C++ logs too) goes to a temporary file
    until the block ends; yields a list that then holds what was written, as its one item."""
    import sys
    import tempfile
    said: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield said
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            said.append(held.read().decode("utf-8", "replace"))


def node_clone(src: Source, remote: Remote, workdir: Path) -> Path:
    """This node's clone of the commit, made once (by the node's first task, under a lock the others wait on): a
    clone checked out at the commit, the driver's remote as its default (its absolute URL, in .dvc/config.local),
    and the runs' inputs pulled from it, plan run."""
    workdir.mkdir(parents=True, exist_ok=True)
    clone = workdir / src.commit[:12]
    with open(workdir / f"{src.commit[:12]}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (clone / ".ready").exists():
            subprocess.run(["rm", "-rf", str(clone)], check=True)       # a half-made clone of a killed task
            git("clone", "-q", "--no-checkout", src.url, str(clone))
            git("checkout", "-q", src.commit, cwd=clone)
            dvc("remote", "add", "--local", "--force", "--default", remote.name, remote.url, cwd=clone)
            dvc("--wait-for-lock", "repro", "--pull", "plan", cwd=clone)
            (clone / ".ready").write_text(src.commit + "\n")
    return clone


def unit(src: Source, remote: Remote, stage: str, threads: int, workdir: str) -> tuple[str, str, float, str]:
    """One Ray task: the unit of distributed work for `stage` in this node's clone. Its processes join its
    worker's process group (the worker leads it), so they die with the worker. (stage, how, seconds, node)."""
    import socket
    t0 = time.perf_counter()
    if os.getpgid(0) != os.getpid():
        os.setpgid(0, 0)                            # the worker leads a group of its own: its children join it
    clone = node_clone(src, remote, Path(workdir))
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    how = pull_or_train(stage, remote, again="modern-gpt repro --ray", cwd=clone, env=env)
    return stage, how, time.perf_counter() - t0, socket.gethostname()


def wants_gpus(ray, device: str) -> bool:
    """Whether each task asks Ray for a GPU: on CUDA (train.device cuda, or auto on a cluster that has GPUs)."""
    has = ray.cluster_resources().get("GPU", 0) > 0
    if device == "cuda" and not has:
        raise ConfigError("train.device='cuda': the Ray cluster has no GPU; allowed: cpu, cuda, auto")
    return device == "cuda" or (device == "auto" and has)


def run_on_ray(address: str | None, todo, threads: int, cores: int, device: str, url: str | None,
               workdir: str) -> None:
    """The driver: refuse in one line what cannot work (a workspace that differs from the commit, no remote or one
    it cannot write, a cluster it cannot reach), then one task per pending run (`todo()`, read once the inputs are
    in place), one line per finished run."""
    ray = import_ray(address)
    src = source(url)
    remote = default_remote()
    connect(ray, address, cores)
    try:
        gpus = wants_gpus(ray, device)
        push_inputs(remote)                             # the inputs pushed, and the remote shown writable
        stages = todo()
        if not stages:
            return
        task = ray.remote(unit).options(max_retries=RETRIES, retry_exceptions=False,
                                        **({"num_gpus": 1, "num_cpus": threads} if gpus else {"num_cpus": threads}))
        print(f"{len(stages)} training runs as Ray tasks, {'1 GPU and ' if gpus else ''}{threads} CPU"
              f"{'s' if threads > 1 else ''} each; the remote: {remote}", flush=True)
        pending = {task.remote(src, remote, stage, threads, workdir): stage for stage in stages}
        failed, k = [], 0
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            stage = pending.pop(done[0])
            k += 1
            try:
                _, how, secs, node = ray.get(done[0])
                print(f"[{k}/{len(stages)}] {stage}: {how} ({secs:.0f} s on {node}), pushed", flush=True)
            except Exception as e:                      # the task's one-line DataError, or Ray's own
                cause = getattr(e, "cause", None) or e
                failed.append(f"{stage}: {(str(cause).strip().splitlines() or [type(cause).__name__])[-1]}")
                print(f"[{k}/{len(stages)}] {stage}: failed", flush=True)
        if failed:
            raise DataError(f"{failed[0]}; the runs that finished are in {remote.name}: run the same command again")
    finally:
        ray.shutdown()
