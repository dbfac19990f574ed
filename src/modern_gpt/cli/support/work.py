"""One unit of distributed work: a training run, pulled from the DVC remote if the remote holds it, else trained
here, then pushed with its run-cache entry. `modern-gpt shard I/N` runs its share of the runs through it, one
after another, and so does each task of a cluster's scheduler.

The data plane is DVC's: the default remote holds every run's outputs, and its run-cache ("this command on these
inputs made these outputs") lets `dvc repro --pull` restore a run that any clone pushed instead of training it.
A worker that dies has pushed its finished runs and nothing of the one it was training (DVC commits a stage's
outputs only when its command succeeds). A DVC process killed while it writes dvc.lock leaves it empty: each
command that resumes work mends that first (`mend_lockfile`).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ConfigError, DataError
from ...pipeline.families import TRAINING

DVC = [sys.executable, "-m", "dvc"]
TRAINING_STAGES = frozenset(f.stage for f in TRAINING)     # dvc.yaml's stages that train a run


def dvc(*args: str, check: bool = True, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`dvc ARGS` in `cwd` (default: here); a failure is one line (check) or the caller's to read."""
    done = subprocess.run([*DVC, *args], capture_output=True, text=True, cwd=cwd, env=env)
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


@dataclass(frozen=True)
class Remote:
    """The default DVC remote, the one `dvc repro --pull` reads: its name and its URL (a folder: absolute)."""
    name: str
    url: str

    def __str__(self) -> str:
        return f"{self.name} ({self.url})"


def default_remote() -> Remote:
    name = dvc("config", "core.remote", check=False).stdout.strip()
    if not name:
        raise ConfigError("DVC remote: none is the default; the workers share their runs through one: "
                          "dvc remote add -d NAME URL (a folder they all reach, s3://, ssh://, ...)")
    url = dvc("config", f"remote.{name}.url").stdout.strip()
    if "://" not in url and not Path(url).is_absolute():       # a folder: written relative to .dvc/config
        url = str((Path(".dvc") / url).resolve())
    return Remote(name, url)


def mend_lockfile(cwd: Path | None = None) -> bool:
    """DVC writes dvc.lock in place (it truncates the file, then writes it), so a DVC process killed in that
    instant (kill -9 of a runner's or a worker's process group, say) leaves dvc.lock empty, and every later DVC
    command in the workspace stops on it ("'./dvc.lock' validation failed"). An empty dvc.lock records nothing,
    and DVC puts each stage it runs into its run-cache before it writes dvc.lock; so remove it, and the next
    `dvc repro` restores every stage that had finished, training none again. Done under DVC's repository lock
    (waiting for it, as --wait-for-lock does), so the empty file is never one a live DVC process is writing. A
    dvc.lock with anything in it is DVC's to read. Says whether it removed one."""
    path = Path(cwd or ".") / "dvc.lock"

    def empty() -> bool:
        return path.is_file() and not path.read_bytes().strip()

    if not empty():
        return False
    from dvc.repo import Repo
    with Repo(str(cwd or "."), _wait_for_lock=True) as repo, repo.lock:
        if not empty():                             # written meanwhile by a live DVC process
            return False
        path.unlink()
    print(f"{path}: empty, as a DVC process killed while writing it leaves it: removed; dvc repro restores every "
          "stage that had finished from the run-cache", flush=True)
    return True


def prepare(remote: Remote) -> None:
    """The runs' inputs (seconds: generate, tokenize, plan), pushed so that an aggregator, and every other clone, can
    pull them; the push also shows that the remote can be written before any run is trained."""
    mend_lockfile()
    dvc("repro", "plan")
    pushed = dvc("push", "generate", "tokenize", check=False)
    if pushed.returncode:
        raise DataError(f"DVC remote {remote.name!r} ({remote.url}) cannot be written: {dvc_error(pushed)}; "
                        f"nothing was trained (mend it with: dvc remote modify {remote.name} url URL)")


def pull_or_train(stage: str, remote: Remote, again: str, *, cwd: Path | None = None,
                  env: dict | None = None) -> str:
    """The unit, in the clone at `cwd` whose inputs are in place (prepare, or a pull of them): `dvc repro --pull -s
    <stage>` (the remote's copy if it has one, else a training run here), then `dvc push --run-cache <stage>`,
    each waiting for DVC's lock, so that units side by side in one clone take turns only at DVC's bookkeeping.
    Says how the run came: 'trained', 'pulled' or 'already here'. `again` is the command that resumes the caller's
    work, for the one-line error when the push fails."""
    mend_lockfile(cwd)
    out = dvc("--wait-for-lock", "repro", "--pull", "-s", stage, cwd=cwd, env=env).stdout
    how = ("trained" if f"Running stage '{stage}'" in out else
           "pulled" if f"Stage '{stage}' is cached" in out else "already here")
    pushed = dvc("--wait-for-lock", "push", "--run-cache", stage, check=False, cwd=cwd, env=env)
    if pushed.returncode:
        raise DataError(f"DVC remote {remote.name!r} ({remote.url}): pushing {stage} failed: {dvc_error(pushed)}; "
                        f"the runs done so far are in this clone's cache: rerun `{again}` to push them")
    return how
