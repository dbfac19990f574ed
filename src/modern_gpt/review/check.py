"""`modern-gpt review --check`: are the committed reports what the committed lock and runs give?

Three checks, none of which needs DVC's cache or a remote (a fresh clone has neither):
- each committed output of a stage has the md5 dvc.lock records for it (a number edited by hand fails);
- no stage's code, params or data changed since dvc.lock (`dvc status`: outputs missing from a clone are fine);
- reports/runs.csv gives the main table: each row's train, val and bpc recomputed from its runs by the report's own
  functions, and its params, as ablation.csv writes them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..reporting.outputs import CSV_FLOAT
from ..reporting.results import row_result
from ..reporting.runs_csv import RunLine, file_md5, from_csv
from ..reporting.table import csv_row
from .sides import RUNS, TABLE, load_yaml, read_table


def outputs(lock: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(stage, path, md5) of every output dvc.lock records, folders included (their md5 ends in .dir)."""
    return [(stage, out["path"], out.get("md5", "")) for stage, entry in lock.get("stages", {}).items()
            for out in entry.get("outs", [])]


def committed(root: Path, lock: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The outputs git tracks, as single files (folders are dvc status's to check)."""
    tracked = set(subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.split())
    return [(stage, path, digest) for stage, path, digest in outputs(lock)
            if path in tracked and (root / path).is_file() and digest and not digest.endswith(".dir")]


def edited(root: Path, outs: list[tuple[str, str, str]]) -> list[str]:
    """Those of the committed outputs (`committed`) whose bytes are not the ones dvc.lock records."""
    problems = []
    for stage, path, digest in outs:
        if (mine := file_md5(root / path)) != digest:
            problems.append(f"{path}: md5 {mine} is not the {digest} that dvc.lock records for stage {stage}: "
                            f"edited by hand? `dvc repro {stage}` regenerates it, `git checkout {path}` restores it")
    return problems


def is_produced(path: str, outs: list[str]) -> bool:
    """An output of some stage, inside one, or a folder holding some (checked at their own stages)."""
    return any(path == o or path.startswith(o + "/") or o.startswith(path + "/") for o in outs)


def stale(status: dict, outs: list[str]) -> list[str]:
    """`dvc status --json`'s changes that mean the lock no longer matches: a source file, a param, a command or an
    edited output. Outputs (and deps produced by stages) missing from a clone without DVC's cache are fine."""
    problems = []
    for stage, changes in status.items():
        for change in changes:
            if not isinstance(change, dict):
                problems.append(f"stage {stage}: {change}")                         # e.g. changed command
                continue
            for kind, items in change.items():
                for path, state in items.items():
                    if isinstance(state, dict):                                      # a params file
                        keys = ", ".join(f"{k} {v}" for k, v in state.items())
                        problems.append(f"stage {stage}: params {path}: {keys} since dvc.lock")
                    elif kind == "changed deps" and not is_produced(path, outs):
                        problems.append(f"stage {stage}: {path} {state} since dvc.lock")
                    elif kind == "changed outs" and state == "modified":
                        problems.append(f"stage {stage}: output {path} was edited")
    return problems


def dvc_status(root: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "DVC_NO_ANALYTICS": "1"}, timeout=300)
    if out.returncode:
        lines = (out.stderr or out.stdout).strip().splitlines()
        raise RuntimeError(f"dvc status failed: {lines[-1] if lines else out.returncode}")
    return json.loads(out.stdout or "{}")


def stale_stages(root: Path, lock: dict[str, Any]) -> list[str]:
    return stale(dvc_status(root), [path for _, path, _ in outputs(lock)])


# ablation.csv's columns that a row's runs alone decide (the rest compare it with the row above: its verdict)
RUN_COLUMNS = ("params", "train_mean", "train_sd", "val_mean", "val_sd", "n", "diverged", "bpc_mean")


def table_disagreements(root: Path) -> list[str]:
    """Rows of the main table (ablation.csv) that runs.csv does not give: each row's runs summarised by the report's
    own row_result and written as the report writes a row of ablation.csv (csv_row, CSV_FLOAT). The Markdown page
    is not read: its bytes are dvc.lock's to vouch for (`edited`), and it is built from the same results."""
    f = root / RUNS
    if not f.is_file():
        return [f"{RUNS}: missing; the report stage writes it: dvc repro report"]
    runs: dict[str, list[RunLine]] = {}
    for line in from_csv(f.read_text(encoding="utf-8")):
        if line.family == "run":
            runs.setdefault(line.run, []).append(line)
    problems = []
    for row in read_table((root / TABLE).read_text(encoding="utf-8") if (root / TABLE).is_file() else None):
        mine = runs.get(row["row"])
        if not mine:
            problems.append(f"{RUNS}: no run of row {row['row']}, which {TABLE} lists")
            continue
        expected = csv_row(row_result(row["row"], row.get("variant", ""), sorted(mine, key=lambda r: r.seed)))
        problems += [f"{TABLE}: row {row['row']} {k} is {row.get(k)!r}, its runs in {RUNS} give {cell(expected[k])!r}"
                     for k in RUN_COLUMNS if row.get(k, "") != cell(expected[k])]
    return problems


def cell(v: float | int | None) -> str:
    """A value as the report's CSVs write it (pandas, float_format CSV_FLOAT)."""
    if v is None:
        return ""
    return CSV_FLOAT % v if isinstance(v, float) else str(v)


def check(root: Path) -> tuple[list[str], str]:
    """(problems, what was checked): one line per problem; none when the reports are honest."""
    lock = load_yaml((root / "dvc.lock").read_text(encoding="utf-8")) if (root / "dvc.lock").is_file() else {}
    if not lock:
        return ["dvc.lock: missing or empty; `dvc repro` writes it"], ""
    outs = committed(root, lock)
    problems = edited(root, outs)
    seen = {p.split(":")[0] for p in problems}
    problems += [p for p in stale_stages(root, lock) if not any(f"output {s} " in p + " " for s in seen)]
    problems += table_disagreements(root)
    stages = len(lock.get("stages", {}))
    return problems, f"{len(outs)} committed outputs' md5, {stages} stages, the main table from {RUNS}"
