"""`modern-gpt review --check`: are the committed reports what the committed lock and runs give?

Four checks, none of which needs DVC's cache or a remote (a fresh clone has neither):
- each committed output of a stage has the md5 dvc.lock records for it (a number edited by hand fails);
- no stage's code, params or data changed since dvc.lock (`dvc status`: outputs missing from a clone are fine);
- every run of every committed report was made by today's code: its code_md5 is the one the run's code files give
  at HEAD (dvc.yaml's run dependencies, and its config's change files);
- each report's tables are what its runs give: the main table (ablation.csv) from reports/runs.csv (ablation.md's
  every byte is dvc.lock's md5 to vouch for), and every cell of each off-by-default report's tables (beyond.md's
  ladder, catalogue.md's star with its verdicts and the claims' words, scale.md's tables and scale.csv) made again
  from its own run list by the report's own functions (tables.py), at the looks params.yaml with the report's
  overlay gives. The off-by-default reports are not the report stage's outputs (it writes them only while their
  overlay is on), so their run lists, not dvc.lock, are what vouches for them, whether or not their stages are on;
  what no run list can give (provenance, the grid's spikes, serving, scale's r without the corpus's floor) is said
  in the check's closing line.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..core.stage import code_md5
from ..reporting import outputs as files_of
from ..reporting.outputs import CSV_FLOAT
from ..reporting.results import row_result
from ..reporting.runs_csv import RUNS as RUNS_FILE, RunLine, file_md5, from_csv
from ..reporting.table import csv_row
from . import overlays, tables
from .sides import REPORTS, RUNS, TABLE, load_yaml, read_table


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
    runs: dict[str, list[RunLine]] = {}                   # a main-ladder row's slug → its runs
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


def head_bytes(root: Path, path: str) -> bytes | None:
    """A file as HEAD has it (None: not in HEAD)."""
    out = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=root, capture_output=True)
    return out.stdout if out.returncode == 0 else None


def run_code(root: Path) -> list[str]:
    """The code files every run imports, as dvc.yaml's run stage lists its dependencies (its data left out)."""
    deps = load_yaml((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["run"]["deps"]
    return [d for d in deps if d.endswith(".py")]


def run_lists(root: Path) -> dict[str, tuple[str, list[RunLine]]]:
    """{report: (its run list's path, its lines)} for each committed report with one: ablation.md's runs.csv, and
    each off-by-default report's list (files_of.OVERLAY_FILES)."""
    lists = {files_of.MAIN: RUNS_FILE, **{files[0]: files[-1] for files in files_of.OVERLAY_FILES.values()}}
    out = {}
    for report, name in lists.items():
        f = root / REPORTS / name
        if (root / REPORTS / report).is_file() and f.is_file():
            out[report] = (f"{REPORTS}/{name}", from_csv(f.read_text(encoding="utf-8"), f"{REPORTS}/{name}"))
    return out


def changes_of(root: Path, line: RunLine) -> tuple[str, ...]:
    """A run's change files: its list's column, or for runs.csv its config's (configs/<slug>.json at HEAD)."""
    return line.change_files or config_changes(root, line.run)


@functools.cache
def config_changes(root: Path, slug: str) -> tuple[str, ...]:
    config = head_bytes(root, f"configs/{slug}.json")
    return tuple(json.loads(config).get("change_files", {})) if config else ()


def code_problems(root: Path) -> list[str]:
    """One line per committed report with a run made by other code than HEAD's files give: its code_md5 against
    code_md5() over dvc.yaml's run dependencies and the run's change files, each file as HEAD has it."""
    common = run_code(root)
    cache: dict[tuple[str, ...], str] = {}
    head = Path(tempfile.mkdtemp(prefix="review-check-"))     # HEAD's copies, for core/stage.py's own code_md5

    def today(files: tuple[str, ...]) -> str:
        if files not in cache:
            paths = sorted({*common, *files})
            for p in paths:
                if not (head / p).is_file():
                    (head / p).parent.mkdir(parents=True, exist_ok=True)
                    (head / p).write_bytes(head_bytes(root, p) or b"")
            cache[files] = code_md5(paths, head)
        return cache[files]

    problems = []
    try:
        found = {report: (path, [x for x in lines if x.code_md5 != today(changes_of(root, x))])
                 for report, (path, lines) in run_lists(root).items()}
    finally:
        shutil.rmtree(head, ignore_errors=True)
    for report, (path, lines) in run_lists(root).items():
        stale = found[report][1]
        if stale:
            fix = "dvc repro" if report == files_of.MAIN else f"modern-gpt reproduce {overlays.of(report)}"
            made = ", ".join(sorted({x.code_md5 for x in stale}))
            problems.append(f"{REPORTS}/{report}: {len(stale)} of its {len(lines)} runs ({path}) were made by code "
                            f"{made}, not what today's files give ({today(changes_of(root, stale[0]))} for "
                            f"{stale[0].run} seed {stale[0].seed}): rerun them: {fix}")
    return problems


def report_disagreements(root: Path, only: str | None = None) -> tuple[list[str], list[str]]:
    """Every cell of each off-by-default report's tables (`only`: of that one) against its run list (tables.py: the
    tables made again by the report's own functions), and scale.csv's rows; (problems, what was not recomputed, one
    line a report)."""
    problems, unchecked = [], []
    for report, (path, lines) in run_lists(root).items():
        if report == files_of.MAIN or only not in (None, report):
            continue                                      # ablation.md: dvc.lock's md5 vouches for every byte
        page = (root / REPORTS / report).read_text(encoding="utf-8")
        left = ""
        if report == files_of.SCALE:
            made, rows, left = tables.scale_table(root, lines)
            problems += tables.compare_tables(report, path, page, made, skip=("mean ",) if left else ())
            problems += scale_csv_disagreements(root, rows, path, floor=not left)
        else:
            made = tables.ladder_table(root, report, lines)
            problems += tables.compare_tables(report, path, page, made)
        others = [x for x in tables.not_from_runs(page, made) if not (left and x.startswith("the table headed"))]
        unchecked += [f"{report}: " + "; ".join(([left] if left else []) + [f"not from its runs: {', '.join(others)}"]
                                                 * bool(others))] if left or others else []
    return problems, unchecked


SCALE_R = ("measure", "effect", "ci_low", "ci_high", "transfer")    # scale.csv's columns that read the floor


def scale_csv_disagreements(root: Path, expected: list[dict[str, Any]], path: str, floor: bool) -> list[str]:
    """Every cell of scale.csv against its rows made again (reporting.scale.csv_rows), as the report's CSVs write
    them (without the floor, all but SCALE_R)."""
    table = root / REPORTS / files_of.SCALE_TABLE
    if not table.is_file():
        return [f"{REPORTS}/{files_of.SCALE_TABLE}: missing beside {REPORTS}/{files_of.SCALE}"]
    rows = {(r["row"], r["size"]): r for r in read_table(table.read_text(encoding="utf-8"))}
    problems = []
    for want in expected:
        row = rows.get((want["row"], want["size"]))
        if row is None:
            problems.append(f"{REPORTS}/{files_of.SCALE_TABLE}: no row {want['row']} at size {want['size']}, which "
                            f"{path} ran")
            continue
        problems += [f"{REPORTS}/{files_of.SCALE_TABLE}: {want['row']} at size {want['size']}: {k} is {row.get(k)!r}, "
                     f"its runs in {path} give {cell(v)!r}" for k, v in want.items()
                     if (floor or k not in SCALE_R) and row.get(k) != cell(v)]
    if len(rows) != len(expected):
        problems.append(f"{REPORTS}/{files_of.SCALE_TABLE}: {len(rows)} rows, its runs in {path} give {len(expected)}")
    return problems


CHANGES_DIR = "src/modern_gpt/changes"


def only_the_plan(problems: list[str]) -> list[str]:
    """The problems, with one line for them all where the only one is the change folder moved under the plan (a
    change file no committed run imports: every run's code checked above): the plan alone reruns."""
    if problems != [f"stage plan: {CHANGES_DIR} modified since dvc.lock"]:
        return problems
    return [f"stage plan: {CHANGES_DIR} moved and no committed run imports what moved: run `dvc repro plan` "
            "(it trains nothing) and commit dvc.lock"]


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
    problems += code_problems(root)
    found, unchecked = report_disagreements(root)
    problems = only_the_plan(problems + found)
    stages = len(lock.get("stages", {}))
    reports = ", ".join(run_lists(root))
    return problems, (f"{len(outs)} committed outputs' md5, {stages} stages, each run's code ({reports}), every "
                      "cell of the tables from their runs" + "".join(f"; {x}" for x in unchecked))
