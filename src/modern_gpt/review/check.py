"""`modern-gpt review --check`: are the committed reports what the committed lock and runs give?

Four checks, none of which needs DVC's cache or a remote (a fresh clone has neither):
- each committed output of a stage has the md5 dvc.lock records for it (a number edited by hand fails);
- no stage's code, params or data changed since dvc.lock (`dvc status`: outputs missing from a clone are fine);
- every run of every committed report was made by today's code: its code_md5 is the one the run's code files give
  at HEAD (dvc.yaml's run dependencies, and its config's change files);
- each report's table is what its runs give: the main table (ablation.csv) from reports/runs.csv, each
  off-by-default ladder's (beyond.md, catalogue.md) from its own run list, each row's train, val, seeds and bpc
  recomputed by the report's own functions, and scale.md's and scale.csv's Δ val and verdicts judged again from
  scale_runs.csv. The off-by-default reports are not the report stage's outputs (it writes them only while their
  overlay is on), so their run lists, not dvc.lock, are what vouches for them, whether or not their stages are on.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..config.params import parse_yaml
from ..config.sections import PARSERS
from ..core.stage import code_md5
from ..reporting import outputs as files_of
from ..reporting.cells import mean_sd, num, verdict
from ..reporting.outputs import CSV_FLOAT
from ..reporting.results import row_result
from ..reporting.runs_csv import RUNS as RUNS_FILE, RunLine, file_md5, from_csv
from ..reporting.scale import name_of
from ..reporting.table import csv_row
from ..settling.looks import Design, judge_looks, ladder_design
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
            fix = "dvc repro" if report == files_of.MAIN else f"modern-gpt reproduce {overlay_of(report)}"
            made = ", ".join(sorted({x.code_md5 for x in stale}))
            problems.append(f"{REPORTS}/{report}: {len(stale)} of its {len(lines)} runs ({path}) were made by code "
                            f"{made}, not what today's files give ({today(changes_of(root, stale[0]))} for "
                            f"{stale[0].run} seed {stale[0].seed}): rerun them: {fix}")
    return problems


def overlay_of(report: str) -> str:
    return next(name for name, files in files_of.OVERLAY_FILES.items() if files[0] == report)


# the catalogue's table names three of the ladder tables' columns its own way
SAME_COLUMN = {"": "#", "change": "variant", "val loss": "val"}


def md_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each Markdown table of a report: (its header's cells, each row's cells), stripped; the alignment line skipped."""
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]
    tables: list[tuple[list[str], list[list[str]]]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            body = [cells(x) for x in itertools.takewhile(lambda x: x.startswith("|"), lines[i + 2:])]
            tables.append((cells(line), body))
    return tables


def markdown_rows(text: str) -> list[dict[str, str]]:
    """The rows of a report's first table with a variant, val and seeds column, by header (the catalogue's
    change, val loss and unnamed number column read as variant, val and #)."""
    for head, body in md_tables(text):
        head = [SAME_COLUMN.get(c, c) for c in head]
        if {"variant", "val", "seeds"} <= set(head):
            return [dict(zip(head, row)) for row in body]
    return []


def ladder_disagreements(root: Path) -> list[str]:
    """Each off-by-default ladder's table (beyond.md, catalogue.md) against its run list: row k of the table is
    the k-th row its runs list (row 0 the main table's), its params, train, val, seeds and bpc recomputed."""
    problems = []
    for report, (path, lines) in run_lists(root).items():
        if report not in (files_of.BEYOND, files_of.CATALOGUE):
            continue
        runs: dict[str, list[RunLine]] = {}
        for x in lines:
            if x.family != "sweep":
                runs.setdefault(x.run, []).append(x)
        table = markdown_rows((root / REPORTS / report).read_text(encoding="utf-8"))
        if len(table) != len(runs):
            problems.append(f"{REPORTS}/{report}: its table has {len(table)} rows, its runs ({path}) {len(runs)}")
            continue
        for row, (slug, mine) in zip(table, runs.items()):
            r = row_result(slug, row.get("variant", ""), sorted(mine, key=lambda x: x.seed))
            expected = {"params": f"{r.params / 1e6:.3f}M", "train": mean_sd(r.train), "val": mean_sd(r.val),
                        "seeds": str(r.val.n), "bpc": num(r.bpc.mean, 3)}
            problems += [f"{REPORTS}/{report}: row {row.get('#', '?')} ({row.get('variant')}) {k} is {row[k]!r}, its "
                         f"runs in {path} give {v!r}" for k, v in expected.items() if k in row and row[k] != v]
    return problems


def scale_designs(root: Path) -> dict[bool, Design]:
    """The looks that judged scale.md's comparisons, as the plan makes them (settling.looks.design) from params.yaml
    with reports/overlays/scale.yaml's settle.runs on top: {False: the default size's rows (the main ladder's, no
    scale_cap), True: every other size's (up to settle.scale_cap)}."""
    raw = parse_yaml((root / "params.yaml").read_text(encoding="utf-8"), "params.yaml")
    overlay = root / REPORTS / files_of.OVERLAYS / "scale.yaml"
    more = parse_yaml(overlay.read_text(encoding="utf-8"), overlay) if overlay.is_file() else {}
    settle_raw = dict(raw.get("settle") or {})
    settle_raw["runs"] = {**(settle_raw.get("runs") or {}), **(((more or {}).get("settle") or {}).get("runs") or {})}
    settle = PARSERS["settle"](settle_raw, "settle")
    seeds = PARSERS["seeds"](raw.get("seeds"), "seeds")
    aa_seeds = PARSERS["ablation"](raw.get("ablation"), "ablation").aa_seeds
    report = PARSERS["report"](raw.get("report"), "report")
    most = len(seeds) + max(map(len, settle.added().values()), default=0)
    return {sized: ladder_design(tuple(settle.looks) if settle.on else (), seeds, aa_seeds, most, report.confidence,
                                 report.borderline, settle.scale_cap if sized else None) for sized in (False, True)}


def size_tables(text: str) -> dict[str, dict[str, dict[str, str]]]:
    """scale.md's table per size: {size name: {change: {column: cell}}}, the Δ val column read as 'Δ val'."""
    return {head[1].split()[0]: {row[0]: dict(zip(["change", "Δ val", *head[2:]], row)) for row in body}
            for head, body in md_tables(text) if len(head) > 1 and head[1].endswith(" Δ val")}


def scale_disagreements(root: Path) -> list[str]:
    """scale.md and scale.csv against scale_runs.csv: each change at each size judged again from its runs (row k
    against row k-1 of that size, paired by seed at the looks that judged it, settling.looks.judge_looks), its Δ val
    and verdict in the CSV and the page's Δ val and verdict cells. Its r (the excess over the corpus floor) needs the
    generated corpus's floor, which a clone lacks: the page's floor line states it, and r is not recomputed."""
    lists = run_lists(root)
    if files_of.SCALE not in lists:
        return []
    path, lines = lists[files_of.SCALE]
    page, table = root / REPORTS / files_of.SCALE, root / REPORTS / files_of.SCALE_TABLE
    if not table.is_file():
        return [f"{REPORTS}/{files_of.SCALE_TABLE}: missing beside {REPORTS}/{files_of.SCALE}"]
    by_size: dict[str | None, dict[str, dict[int, float | None]]] = {}
    for x in lines:
        by_size.setdefault(x.size, {}).setdefault(x.row, {})[x.seed] = x.val_loss
    csv_rows = {(r["row"], r["size"]): r for r in read_table(table.read_text(encoding="utf-8"))}
    pages = size_tables(page.read_text(encoding="utf-8"))
    problems, designs = [], scale_designs(root)
    for size, rows in by_size.items():
        name, design = name_of(size), designs[size is not None]
        slugs = list(rows)
        for ref, slug in zip(slugs, slugs[1:]):
            look = judge_looks(rows[slug], rows[ref], design)
            c = look.comparison
            row = csv_rows.get((slug, name))
            if row is None:
                problems.append(f"{REPORTS}/{files_of.SCALE_TABLE}: no row {slug} at size {name}, which {path} ran")
                continue
            expected = {"d_val": cell(c.effect), "verdict": c.verdict.value}
            problems += [f"{REPORTS}/{files_of.SCALE_TABLE}: {slug} at size {name}: {k} is {row[k]!r}, its runs in "
                         f"{path} give {v!r}" for k, v in expected.items() if row[k] != v]
            shown = pages.get(name, {}).get(row["variant"])
            expected = {"Δ val": num(c.effect, sign=True), "verdict": verdict(c, look)}
            if shown is None:
                problems.append(f"{REPORTS}/{files_of.SCALE}: no {row['variant']} in the table of size {name}")
                continue
            problems += [f"{REPORTS}/{files_of.SCALE}: {row['variant']} at size {name}: {k} is {shown.get(k)!r}, "
                         f"its runs in {path} give {v!r}" for k, v in expected.items() if shown.get(k) != v]
    return problems


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
    problems += ladder_disagreements(root)
    problems += scale_disagreements(root)
    stages = len(lock.get("stages", {}))
    reports = ", ".join(run_lists(root))
    return problems, (f"{len(outs)} committed outputs' md5, {stages} stages, each run's code ({reports}), the "
                      f"tables from their runs")
