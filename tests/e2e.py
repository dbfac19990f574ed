"""The end-to-end tests' workspaces: this project at smoke size, trained once per test session by the real `dvc
repro`, and copied for each test, so that no test undoes another's changes and each passes alone and in any order.

A *build* is one trained project (`BUILDS`: the book's ladder, and a smaller one with the optional rows on) in a
folder that every pytest process of the session can see, with its outputs pushed (run-cache included) to the default
remote next to it. The first process that needs a build makes it under a file lock; the others wait on the lock and
find it made. `start()` makes the builds in the background from the session's first test on, so that the unit tests
run while they train. A test gets its own copy of a build: git history, DVC cache, outputs and all (`workspace()`),
and where it needs the remote, a copy of that too.

Run as a script, `python tests/e2e.py NAME ROOT` makes build NAME under ROOT (what `start()` runs).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DVC = [sys.executable, "-m", "dvc"]
# without PYTHONDONTWRITEBYTECODE (some machines set it): a stage process caches its checkout's compiled modules in
# src/**/__pycache__ (ignored by git and .dvcignore), so the next process, and every copy of a build, skips compiling
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
       "DVC_NO_ANALYTICS": "1", "PYTHONPATH": "",
       # the stages run `python`: make it this interpreter, activated environment or not
       "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
# one thread per run, as the workers and Ray's tasks train theirs (docs/machines.md): two thread counts round
# differently on some CPUs (an AMD EPYC of family 25 moved val_curves.csv's 6th digit), and those tests compare
# their report with the build's digit for digit
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
ROWS = ["baseline", "norm", "pos", "mlp", "bias", "n_kv_head", "qk_norm"]
RUNS = {f"run@{row}-{seed}" for row in ROWS for seed in (0, 1)} | {
    f"sweep@qk_norm-4-{seed}" for seed in (0, 1)}                  # the grid: QK-norm at x4 only
SERVE = {f"serve@{row}" for row in ROWS}
INPUTS = {"generate", "tokenize", "plan"}

SMOKE = {
    "generate": {"chars": 30000, "seed": 0},
    "model": {"n_layer": 1, "n_embd": 32, "block_size": 16, "global_every": 0},   # with a window: the layer local
    "seeds": [0, 1],
    "train": {"iters": 20, "batch_size": 8, "warmup_iters": 2, "eval_interval": 10, "eval_iters": 2},
    "sweep": {"lr": [4], "rows": ["qk_norm"], "seeds": [0, 1]},
    "serve": {"prompt_tokens": 4, "new_tokens": 8, "repeats": 2, "batch": 2},
    "settle": {"looks": [], "scale_cap": None, "runs": {}},    # off: a test switches on its own looks
}
# A smaller ladder with the optional rows switched on: the A/A copy and leave-one-out.
OPTIONS = {
    "baseline": {"norm": "layernorm", "pos": "rope", "mlp": "swiglu", "bias": False, "n_kv_head": 2, "qk_norm": False},
    "ladder": ["baseline", "norm", "qk_norm"],
    "ablation": {"match_params": False, "aa_seeds": [5, 6], "leave_one_out": ["qk_norm"]},
    "sweep": {"lr": [], "rows": [], "seeds": [0, 1]},
}
OPTION_RUNS = {f"{family}@{row}-{seed}" for family, row, seeds in (
    ("run", "baseline", (0, 1)), ("run", "norm", (0, 1)), ("run", "qk_norm", (0, 1)), ("aa", "baseline", (5, 6)),
    ("loo", "qk_norm", (0, 1))) for seed in seeds}
OPTION_SERVE = {f"serve@{row}" for row in OPTIONS["ladder"]}
# name: (params overrides, the stages its first `dvc repro` must run)
BUILDS = {
    "smoke": ({}, RUNS | SERVE | INPUTS | {"report"}),
    "options": (OPTIONS, OPTION_RUNS | OPTION_SERVE | INPUTS | {"report"}),
}


def sh(args, cwd, check=True, env=None):
    out = subprocess.run(args, cwd=cwd, env={**ENV, **(env or {})}, capture_output=True, text=True, timeout=900)
    if check and out.returncode:
        raise AssertionError(f"{args} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def commit(repo: Path, message: str) -> None:
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", message], repo)


def set_params(repo: Path, overrides: dict) -> None:
    """params.yaml with each section of `overrides` merged into it (a dict) or replacing it (a list or value)."""
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    for section, values in overrides.items():
        params[section] = {**params[section], **values} if isinstance(values, dict) else values
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def project_copy(tmp: Path, **overrides) -> Path:
    """The tracked and untracked-but-not-ignored files of this checkout at smoke size, in a fresh git repo."""
    repo = tmp / "project"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    skip = ("data/", "reports/", "configs/", "dvc.lock")
    for f in files:
        if f.startswith(skip) or not (ROOT / f).is_file():
            continue
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, repo / f)
    set_params(repo, {**SMOKE, **overrides})
    sh(["git", "init", "-q"], repo)
    commit(repo, "smoke")
    return repo


def code_copy(dest: Path) -> Path:
    """This checkout's src/ and stages/ in dest (no bytecode, no egg-info): what a stage script needs to run the
    copy's own code (each script puts <its checkout>/src first on sys.path)."""
    for folder in ("src", "stages"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    return dest


def status(repo: Path) -> set[str]:
    """The stages `dvc status` names, asked in this process (the same `Repo.status()` the command prints as JSON,
    in the repo's folder: DVC names a stage by its path from there)."""
    from dvc.repo import Repo
    with contextlib.chdir(repo), Repo() as dvc_repo:
        return set(dvc_repo.status())


# --- builds ---------------------------------------------------------------------------------------------------


def build(name: str, root: Path) -> Path:
    """Build `name` under `root` once (the first caller makes it, under a lock; the rest find it made): the project
    copied at smoke size, `dvc repro` with one thread per run, committed, and pushed with its run-cache to the
    default remote (root/name/modern-gpt-remote). Returns the project's folder."""
    overrides, stages = BUILDS[name]
    home = root / name
    home.mkdir(parents=True, exist_ok=True)
    project, done = home / "project", home / "done"
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return project
        shutil.rmtree(project, ignore_errors=True)                  # a build that failed half-way
        project_copy(home, **overrides)
        out = sh([*DVC, "repro"], project, env=ONE_THREAD)
        assert ran(out.stdout) == stages, sorted(ran(out.stdout) ^ stages)
        commit(project, "repro")
        sh([*DVC, "push", "--run-cache"], project)
        done.write_text("made\n")
    return project


def workspace(name: str, root: Path, dest: Path, remote: bool = False) -> Path:
    """A copy of build `name` of its own at dest/project: git history, DVC cache and outputs (DVC's state and locks
    are not copied: they name the build's files). With `remote`, the build's pushed remote too, at the place the
    copy's default remote points to (dest/modern-gpt-remote)."""
    project = build(name, root)
    shutil.copytree(project, dest / "project", symlinks=True, ignore=lambda d, names: (
        ["tmp"] if Path(d) == project / ".dvc" else []))
    if remote:
        shutil.copytree(project.parent / "modern-gpt-remote", dest / "modern-gpt-remote")
    return dest / "project"


def run_cache_entries(remote: Path) -> dict[str, list[Path]]:
    """A local DVC remote's run-cache entries by the command they record: one per set of outputs of one command on
    one set of inputs (every training writes other seconds into run.json, so each training is an entry)."""
    entries: dict[str, list[Path]] = {}
    for entry in (remote / "runs").glob("*/*/*"):
        entries.setdefault(yaml.safe_load(entry.read_text())["cmd"], []).append(entry)
    return entries


def forget(repo: Path, remote: Path, stages: list[str]) -> None:
    """Take `stages`' run-cache entries out of a local remote: the remote then holds every run but these, which a
    `dvc repro --pull` has to run (a stage with an output DVC does not cache, the report's, has no entry)."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    entries = run_cache_entries(remote)
    for stage in stages:
        for entry in entries.get(lock[stage]["cmd"], []):
            entry.unlink()


def start(root: Path, names: list[str]) -> list[subprocess.Popen]:
    """Make the builds `names` in the background, one process each (the first to take a build's lock makes it)."""
    procs = []
    for name in names:
        if not (root / name / "done").exists():
            (root / name).mkdir(parents=True, exist_ok=True)
            log = (root / name / f"background-{os.getpid()}.log").open("w")
            procs.append(subprocess.Popen([sys.executable, __file__, name, str(root)], stdout=log,
                                          stderr=subprocess.STDOUT, cwd=ROOT, env=ENV))
    return procs


# ------------------------------------------------------------------------- what the end-to-end tests share

def report_rows(repo: Path, name: str = "ablation.md") -> list[dict[str, str]]:
    """The report's ladder table's rows, each as {header: cell} (md_tables: the table whose first header is '#'),
    its headers checked against the report's columns (settle off at smoke size: no seeds column; 95%)."""
    from md_tables import rows, tables
    from modern_gpt.reporting.table import TABLE
    expected = [c.header.replace("{confidence}", "95%") for c in TABLE if not c.looks_only]
    text = (repo / "reports" / name).read_text()
    head, found = rows(next(t for t in tables(text) if t[0].replace(" ", "").startswith("|#|")))
    assert head == expected
    return found


def repro_with(repo: Path, sets: list[str]) -> subprocess.CompletedProcess:
    """`dvc repro` after setting `sets` in params.yaml, each written as `dvc exp run -S` takes it (KEY.PATH=YAML,
    a leading + for a new key). The experiment machinery itself is tried by the tests that call `dvc exp run`
    (new K/V heads, a train change, NoPE, a bad param, a missing corpus); here it would add ~6 s a call."""
    from modern_gpt.config.params import read_yaml
    params = read_yaml(repo / "params.yaml")
    for s in sets:
        key, value = s.split("=", 1)
        *path, last = key.removeprefix("+").split(".")
        node = params
        for k in path:
            node = node.setdefault(k, {})
        node[last] = yaml.safe_load(value)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return sh([*DVC, "repro"], repo)


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


if __name__ == "__main__":
    build(sys.argv[1], Path(sys.argv[2]))
    print(json.dumps({"built": sys.argv[1]}))

