"""`modern-gpt review --check`: are the committed reports what the committed lock and runs give?

Three checks, none of which needs DVC's cache or a remote (a fresh clone has neither):
- each committed output of a stage has the md5 dvc.lock records for it (a number edited by hand fails);
- no stage's code, params or data changed since dvc.lock (`dvc status`: outputs missing from a clone are fine);
- reports/runs.csv gives the main table: each row's train, val and bpc recomputed from its runs, and its params.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..reporting.cells import mean_sd, num
from ..reporting.runs_csv import RunLine, file_md5, from_csv
from ..reporting.stats import summarize
from .sides import RUNS, TABLE, load_yaml, read_table

REPORT = "reports/ablation.md"


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


def report_cells(text: str) -> dict[str, dict[str, str]]:
    """The main table of ablation.md: variant → {header: cell}."""
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if line.replace(" ", "").startswith("|#|variant|")), None)
    if head is None:
        return {}
    headers = [c.strip() for c in lines[head].strip().strip("|").split("|")]
    out = {}
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        cells = dict(zip(headers, (c.strip() for c in line.strip().strip("|").split("|"))))
        out[cells.get("variant", "")] = cells
    return out


def table_disagreements(root: Path) -> list[str]:
    """Rows of the main table (ablation.csv, and ablation.md's cells) that runs.csv does not give."""
    f = root / RUNS
    if not f.is_file():
        return [f"{RUNS}: missing; the report stage writes it: dvc repro report"]
    runs: dict[str, list[RunLine]] = {}
    for line in from_csv(f.read_text(encoding="utf-8")):
        if line.family == "run":
            runs.setdefault(line.run, []).append(line)
    md = report_cells((root / REPORT).read_text(encoding="utf-8")) if (root / REPORT).is_file() else {}
    problems = []
    for row in read_table((root / TABLE).read_text(encoding="utf-8") if (root / TABLE).is_file() else None):
        mine = runs.get(row["row"])
        if not mine:
            problems.append(f"{RUNS}: no run of row {row['row']}, which {TABLE} lists")
            continue
        problems += row_disagreements(row, mine, md.get(row["variant"], {}))
    return problems


def row_disagreements(row: dict[str, str], runs: list[RunLine], cells: dict[str, str]) -> list[str]:
    train, val = summarize([r.train_loss for r in runs]), summarize([r.val_loss for r in runs])
    bpc = summarize([r.val_bpc for r in runs])
    csv_values = {"train_mean": train.mean, "train_sd": train.sd, "val_mean": val.mean, "val_sd": val.sd,
                  "bpc_mean": bpc.mean, "n": val.n_finite, "diverged": val.n_diverged, "params": runs[0].params}
    out = [f"{TABLE}: row {row['row']} {k} is {row.get(k)!r}, its runs in {RUNS} give {text(v)!r}"
           for k, v in csv_values.items() if row.get(k, "") != text(v)]
    md_values = {"train": mean_sd(train), "val": mean_sd(val), "bpc": num(bpc.mean, 3)}
    out += [f"{REPORT}: row {row['variant']!r} {k} is {cells.get(k)!r}, its runs in {RUNS} give {v!r}"
            for k, v in md_values.items() if cells and cells.get(k) != v]
    return out


def text(v: float | int | None) -> str:
    """A number as ablation.csv writes it (pandas, float_format %.6g)."""
    if v is None:
        return ""
    return f"{v:.6g}" if isinstance(v, float) else str(v)


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
