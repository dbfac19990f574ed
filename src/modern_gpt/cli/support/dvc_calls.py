"""`dvc` as a subprocess, the one way every runner calls it (repro, shard, the Ray tasks): its failure as one line,
the stages of dvc.yaml that train a run, and the mend of a dvc.lock left empty by a DVC process killed while
writing it, which each command that resumes work does first.
"""

from __future__ import annotations

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
