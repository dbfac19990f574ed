"""`dvc` as a subprocess, the one way every runner calls it (repro, shard, the Ray tasks): its failure as one line,
the stages of dvc.yaml that train a run, every params value checked before any of them runs, and the mend of the
files a DVC process killed while writing them leaves cut short (dvc.lock, DVC's rwlock), which each command that
resumes work does first.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ...core.errors import DataError
from ...pipeline.families import SETTLE, TRAINING

DVC = [sys.executable, "-m", "dvc"]
TRAINING_STAGES = frozenset(f.stage for f in TRAINING) | {SETTLE}     # dvc.yaml's stages that train a run


def stage_paths(stage: str, path: str | Path = "dvc.yaml") -> dict[str, str]:
    """The --option value pairs of a stage's command in dvc.yaml ({'runs': 'data/runs', ...}): where that stage
    reads and writes, for a command that reads the same files as the stage (modern-gpt settle: the report's)."""
    import shlex

    import yaml
    try:
        cmd = yaml.safe_load(Path(path).read_text(encoding="utf-8"))["stages"][stage]["cmd"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as e:
        raise DataError(f"{path}: no stage {stage!r} with a command ({type(e).__name__}); run this at the root of a "
                        "clone of the project") from None
    words = shlex.split(cmd)
    return {w[2:]: v for w, v in zip(words, words[1:]) if w.startswith("--") and not v.startswith("--")}


def check_params(raw: dict | None = None) -> None:
    """Every value of params.yaml (or of `raw`, its parsed text) checked as the plan stage checks it, before a runner
    starts anything: DVC compares a param's old and new value by equality, where true == 1, so after `qk_norm: 1`
    a plain `dvc repro` reruns no plan and nothing refuses the value; this does, in one line naming the key."""
    from ...config import params as params_file
    from ...config.sections import OPTIONAL, SECTIONS
    from ...pipeline.ladder_params import check_all
    check_all(params_file.sections(params_file.read_yaml("params.yaml") if raw is None else raw, SECTIONS, OPTIONAL))


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


def mend_killed_writes(cwd: Path | None = None) -> list[Path]:
    """DVC writes two files in place (it truncates the file, then writes it): dvc.lock, and its lock file of who
    reads and writes which path, .dvc/tmp/rwlock. A DVC process killed in that instant (kill -9 of a runner's or a
    worker's process group, say) leaves the file empty or cut short, and every later DVC command in the workspace
    stops on it ("'./dvc.lock' validation failed", "Unable to read RWLock-file ... JSON structure is corrupted").
    Each is removed, each under the lock DVC itself writes it under (waiting for it, as --wait-for-lock does), so
    that the file removed is never one a live DVC process is writing:
    - an empty dvc.lock records nothing, and DVC puts each stage it runs into its run-cache before it writes
      dvc.lock, so the next `dvc repro` restores every stage that had finished, training none again. A dvc.lock
      with anything in it is DVC's to read.
    - an rwlock that is not JSON: only a killed writer leaves one, and DVC reads a missing rwlock as one with no
      entries. The entries a cut-short one held are lost; a live process among them could not have released them
      from it either, and a dead one's DVC drops when it next needs their paths. One that reads as JSON is DVC's.
    Says which it removed, a line for each."""
    root = Path(cwd or ".")
    lockfile, rwlock = root / "dvc.lock", root / ".dvc" / "tmp" / "rwlock"

    def empty() -> bool:
        return lockfile.is_file() and not lockfile.read_bytes().strip()

    def cut_short() -> bool:
        try:
            json.loads(rwlock.read_bytes())
        except FileNotFoundError:
            return False
        except ValueError:
            return True
        return False

    if not empty() and not cut_short():
        return []
    from dvc.lock import make_lock
    from dvc.repo import Repo
    removed = []
    with Repo(str(root), _wait_for_lock=True) as repo, repo.lock:
        if empty():                                 # not written meanwhile by a live DVC process
            lockfile.unlink()
            removed.append(lockfile)
            print(f"{lockfile}: empty, as a DVC process killed while writing it leaves it: removed; dvc repro restores "
                  "every stage that had finished from the run-cache", flush=True)
        with make_lock(str(rwlock.with_name("rwlock.lock")), tmp_dir=str(rwlock.parent), wait=True,
                       hardlink_lock=repo.config["core"].get("hardlink_lock", False)):
            if cut_short():
                rwlock.unlink()
                removed.append(rwlock)
                print(f"{rwlock}: not JSON, as a DVC process killed while writing it leaves it: removed; DVC reads a "
                      "missing one as empty", flush=True)
    return removed
