"""The runs that clones share through the default DVC remote, and the one unit of distributed work: a training
run, pulled from the remote if the remote holds it, else trained here, then pushed with its run-cache entry
(pull_or_train). `modern-gpt shard I/N` runs its share of the runs through it, one after another, and so does each
task of a cluster's scheduler, Ray's included (ray_runs.py); before the first, the worker (or Ray's driver) runs the
stages the runs need and pushes their data (push_inputs).

The data plane is DVC's: the default remote holds every run's outputs, and its run-cache ("this command on these
inputs made these outputs") lets `dvc repro --pull` restore a run that any clone pushed instead of training it.
A worker that dies has pushed its finished runs and nothing of the one it was training (DVC commits a stage's
outputs only when its command succeeds). A DVC process killed while it writes dvc.lock (or its rwlock) leaves
it cut short: each command that resumes work mends that first (dvc_calls.py: mend_killed_writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ConfigError, DataError
from .dvc_calls import dvc, dvc_error, mend_killed_writes


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


def push_inputs(remote: Remote) -> None:
    """The stages the runs need (seconds: generate, tokenize, plan) run here, and their data pushed to `remote`, so
    that an aggregator, and every other clone, can pull them; the push also shows that the remote can be written
    before any run is trained."""
    mend_killed_writes()
    dvc("repro", "plan")
    pushed = dvc("push", "generate", "tokenize", check=False)
    if pushed.returncode:
        raise DataError(f"DVC remote {remote.name!r} ({remote.url}) cannot be written: {dvc_error(pushed)}; "
                        f"nothing was trained (mend it with: dvc remote modify {remote.name} url URL)")


def pull_or_train(stage: str, remote: Remote, again: str, *, cwd: Path | None = None,
                  env: dict | None = None) -> str:
    """The unit, in the clone at `cwd` whose inputs are in place (push_inputs, or a pull of them):
    `dvc repro --pull -s <stage>` (the remote's copy if it has one, else a training run here), then
    `dvc push --run-cache <stage>`, each waiting for DVC's lock, so that units side by side in one clone take turns
    only at DVC's bookkeeping. Says how the run came: 'trained', 'pulled' or 'already here'. `again` is the command
    that resumes the caller's work, for the one-line error when the push fails."""
    mend_killed_writes(cwd)
    out = dvc("--wait-for-lock", "repro", "--pull", "-s", stage, cwd=cwd, env=env).stdout
    how = ("trained" if f"Running stage '{stage}'" in out else
           "pulled" if f"Stage '{stage}' is cached" in out else "already here")
    pushed = dvc("--wait-for-lock", "push", "--run-cache", stage, check=False, cwd=cwd, env=env)
    if pushed.returncode:
        raise DataError(f"DVC remote {remote.name!r} ({remote.url}): pushing {stage} failed: {dvc_error(pushed)}; "
                        f"the runs done so far are in this clone's cache: rerun `{again}` to push them")
    return how
