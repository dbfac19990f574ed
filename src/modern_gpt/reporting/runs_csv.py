"""reports/runs.csv: one line per run the report reads, of every family, with the inputs that made it; and each
off-by-default report's own list beside it (reports/beyond_runs.csv ...), with each run's change files.

Words, here and in review/: a *row* is a ladder row; a *run* is one (slug, seed) training run; a *slug* names a
run's config (configs/<slug>.json) and folder (data/runs/<slug>/<seed>/). A line of runs.csv is one run. Its `row`
column is the ladder row the run trains, by the row's slug: for a sweep, scale, A/A or rerun run the row it trains
again (at another rate, size, seed or initial weights), for any other run its own row; its `run` column is the run's
slug. The columns keep those names (a file format); the code reads them as RunLine.row and RunLine.run.

This is the per-seed evidence a reviewer pairs across commits (`modern-gpt review`): a slug's run of seed s trains on
the same batches on any commit with the same corpus, split and tokenizer. Floats are written in full (repr, the
shortest text that reads back as the same float), so that seeds pair exactly and a line changes only when its run
does. The report stage writes the file through RunLine; review and `review --check` read it back through RunLine.
"""

from __future__ import annotations

import csv
import functools
import dataclasses
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..core.errors import DataError
from ..pipeline.families import AA, BEYOND, CATALOGUE, LOO, MAIN, RERUN, SCALE, SWEEP, Family
from ..records.run_record import RunRecord
from ..records.stages import LadderName
from . import outputs

if TYPE_CHECKING:
    from .results import Ladder, Results

CHANGES = "src/modern_gpt/changes/"     # a run's change files: those of its code files here, but the registry
RUNS = outputs.RUNS
LADDER_FAMILY = {LadderName.BEYOND: BEYOND, LadderName.CATALOGUE: CATALOGUE, LadderName.SCALE: SCALE}
LADDER_RUNS = {LadderName.BEYOND: outputs.BEYOND_RUNS, LadderName.CATALOGUE: outputs.CATALOGUE_RUNS,
               LadderName.SCALE: outputs.SCALE_RUNS}


@dataclass(frozen=True)
class RunLine:
    """One run, (slug, seed): which (family, row, size, lr multiple), what it scored, and the md5s of what made it."""
    family: str              # dvc.yaml's stage family (pipeline/families.py): run (the main ladder), sweep, ...
    row: str                 # the ladder row it trains, by the row's slug (the module's docstring)
    size: str | None         # scale.sizes' name; None for model:'s shape (the default size; runs.csv: empty)
    lr: float                # multiple of train.lr (1 but in the grid)
    seed: int
    run: str                 # its slug: its folder data/runs/<slug>/<seed>/ and its config configs/<slug>.json
    train_loss: float | None  # None: diverged
    val_loss: float | None
    val_bpc: float | None
    params: int
    steps: int
    diverged: bool
    secs: float
    config_md5: str          # md5 of configs/<slug>.json
    code_md5: str            # the run's own md5 over the code it imported
    machine: str             # the processor that trained it
    change_files: tuple[str, ...] = ()   # the change files it imported (an off-by-default report's list: runs.csv
                                         # has configs/ beside it, whose change_files name them)

    @property
    def key(self) -> tuple[str, str]:
        """Its slug's runs across commits: the family and the slug (the seed pairs within them)."""
        return self.family, self.run

    def cells(self, fields: tuple[str, ...]) -> list[str]:
        def cell(v: object) -> str:
            if v is None:
                return ""
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, tuple):
                return " ".join(v)
            return repr(v) if isinstance(v, float) else str(v)
        return [cell(round(self.secs, 1)) if f == "secs" else cell(getattr(self, f)) for f in fields]

    @classmethod
    def from_cells(cls, cells: dict[str, str], where: str) -> "RunLine":
        def opt(text: str) -> float | None:
            return float(text) if text else None
        try:
            return cls(family=cells["family"], row=cells["row"], size=cells["size"] or None, lr=float(cells["lr"]),
                       seed=int(cells["seed"]), run=cells["run"], train_loss=opt(cells["train_loss"]),
                       val_loss=opt(cells["val_loss"]), val_bpc=opt(cells["val_bpc"]), params=int(cells["params"]),
                       steps=int(cells["steps"]), diverged=cells["diverged"] == "true", secs=float(cells["secs"]),
                       config_md5=cells["config_md5"], code_md5=cells["code_md5"], machine=cells["machine"],
                       change_files=tuple(cells.get("change_files", "").split()))
        except (KeyError, ValueError, TypeError) as e:
            raise DataError(f"{where}: not a runs.csv of this version ({type(e).__name__}: {e}); "
                            "regenerate it: dvc repro report") from None


FIELDS = tuple(f.name for f in dataclasses.fields(RunLine))[:-1]       # runs.csv's columns
REPORT_FIELDS = (*FIELDS, "change_files")                               # an off-by-default report's list's


def run_lines(results: Results, config_md5: Callable[[str], str]) -> dict[str, list[RunLine]]:
    """{file: its lines}: runs.csv, every run the results read, once; and each off-by-default report's own list
    (beyond_runs.csv ...), every run it reads, its row 0's (the main table's) included. Written from the results the
    report is built from, in their order: the main ladder (its rows, then its cells of the learning-rate grid), each
    further ladder alike, then the A/A copy, the leave-one-out and rerun rows."""
    main = results.main

    @functools.cache
    def digest(slug: str) -> str:
        return config_md5(slug)

    def line(family: Family, row: str, size: str | None, lr: float, rec: RunRecord) -> RunLine:
        return RunLine(family.stage, row, size, lr, rec.seed, rec.slug, rec.train_loss, rec.val_loss, rec.val_bpc,
                       rec.params, rec.steps, rec.diverged, rec.secs, digest(rec.slug), rec.code_md5, rec.machine,
                       tuple(f for f in rec.code_files if f.startswith(CHANGES) and f != CHANGES + "__init__.py"))

    def rows(lad: Ladder) -> list[RunLine]:
        out = []
        for i, r in enumerate(lad.rows):
            if lad is main or (i == 0 and lad.size is None):     # the second ladder's and the catalogue's row 0
                family, row = MAIN, r.slug                        # is the main table's last row
            else:
                family, row = LADDER_FAMILY[lad.name], (main.rows[i].slug if lad.size is not None else r.slug)
            out += [line(family, row, lad.size, 1.0, rec) for rec in r.runs]
        return out

    def sweep(lad: Ladder) -> list[RunLine]:
        return [line(SWEEP, g.row.slug, None, c.multiple, rec)
                for g in lad.sweep for c in g.cells if not c.main for rec in c.runs + c.later]

    extras = [line(AA, results.aa.slug, None, 1.0, rec) for rec in results.aa.runs] if results.aa else []
    extras += [line(LOO, r.slug, None, 1.0, rec) for r in results.loo for rec in r.runs]
    extras += [line(RERUN, x.original.slug, None, 1.0, rec) for x in results.reruns for rec in x.again.runs]
    files = {RUNS: once([x for lad in results.ladders for x in rows(lad) + sweep(lad)] + extras)}
    for lad in results.ladders[1:]:                  # a size's list: the default size's rows (the main table's) too
        name = LADDER_RUNS[lad.name]
        files[name] = once(files.get(name, rows(main) if lad.size is not None else []) + rows(lad) + sweep(lad))
    return files


def once(lines: list[RunLine]) -> list[RunLine]:
    """Each run (slug and seed) once, where it first comes."""
    seen: set[tuple[str, int]] = set()
    return [x for x in lines if (x.run, x.seed) not in seen and not seen.add((x.run, x.seed))]


def file_md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def to_csv(lines: list[RunLine], fields: tuple[str, ...] = FIELDS) -> bytes:
    """runs.csv's text (an off-by-default report's list: fields=REPORT_FIELDS)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    w.writerows(line.cells(fields) for line in lines)
    return buf.getvalue().encode()


def from_csv(text: str, where: str = "reports/runs.csv") -> list[RunLine]:
    """runs.csv's lines, or an off-by-default report's list's (its change_files too)."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) not in (FIELDS, REPORT_FIELDS):
        raise DataError(f"{where}: not a runs.csv of this version (columns {reader.fieldnames}); "
                        "regenerate it: dvc repro report")
    return [RunLine.from_cells(row, f"{where} line {i + 2}") for i, row in enumerate(reader)]
