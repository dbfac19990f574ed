"""reports/runs.csv: one line per run the plan lists, of every family, with the inputs that made it.

This is the per-seed evidence a reviewer pairs across commits (`modern-gpt review`): seed s of a row trains on the
same batches on any commit with the same corpus, split and tokenizer. Floats are written in full (repr, the
shortest text that reads back as the same float), so that seeds pair exactly and a line changes only when its run
does. The report stage writes the file through RunLine; review and `review --check` read it back through RunLine.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..core.errors import DataError
from ..records.run_record import RunRecord
from ..records.stages import Plan

# The families, as dvc.yaml names their stages (pipeline/families.py), in the file's order.
FAMILIES = ("run", "sweep", "beyond", "scale", "aa", "loo", "rerun")


@dataclass(frozen=True)
class RunLine:
    """One run: which (family, row, size, lr multiple, seed), what it scored, and the md5s of what made it."""
    family: str              # dvc.yaml's stage family: run (the main ladder), sweep, beyond, scale, aa, loo, rerun
    row: str                 # the main ladder's row it trains (sweep, scale, aa, rerun), or its own row's slug
    size: str                # scale.sizes' name; '' for model:'s shape
    lr: float                # multiple of train.lr (1 but in the grid)
    seed: int
    run: str                 # its folder, data/runs/<run>/<seed>/, and its config, configs/<run>.json
    train_loss: float | None  # None: diverged
    val_loss: float | None
    val_bpc: float | None
    params: int
    steps: int
    diverged: bool
    secs: float
    config_md5: str          # md5 of configs/<run>.json
    code_md5: str            # the run's own md5 over the code it imported
    machine: str             # the processor that trained it

    @property
    def key(self) -> tuple[str, str]:
        """The row across commits: its family and run folder (the seed pairs within it)."""
        return self.family, self.run

    def cells(self) -> list[str]:
        def cell(v: object) -> str:
            if v is None:
                return ""
            if isinstance(v, bool):
                return "true" if v else "false"
            return repr(v) if isinstance(v, float) else str(v)
        return [cell(round(self.secs, 1)) if f.name == "secs" else cell(getattr(self, f.name))
                for f in dataclasses.fields(self)]

    @classmethod
    def from_cells(cls, cells: dict[str, str], where: str) -> "RunLine":
        def opt(text: str) -> float | None:
            return float(text) if text else None
        try:
            return cls(family=cells["family"], row=cells["row"], size=cells["size"], lr=float(cells["lr"]),
                       seed=int(cells["seed"]), run=cells["run"], train_loss=opt(cells["train_loss"]),
                       val_loss=opt(cells["val_loss"]), val_bpc=opt(cells["val_bpc"]), params=int(cells["params"]),
                       steps=int(cells["steps"]), diverged=cells["diverged"] == "true", secs=float(cells["secs"]),
                       config_md5=cells["config_md5"], code_md5=cells["code_md5"], machine=cells["machine"])
        except (KeyError, ValueError, TypeError) as e:
            raise DataError(f"{where}: not a runs.csv of this version ({type(e).__name__}: {e}); "
                            "regenerate it: dvc repro report") from None


FIELDS = tuple(f.name for f in dataclasses.fields(RunLine))


def planned(plan: Plan) -> Iterator[tuple[str, str, str, float, str, tuple[int, ...]]]:
    """(family, row, size, lr multiple, run slug, seeds) for every run slug the plan lists, in the file's order.
    A run listed twice (the second ladder's row 0, the default size's rows: the main table's runs) comes once. A
    ladder row's seeds (a grid run's: sweep.seeds) are the base ones and those settle added to it (Plan.seeds_of)."""
    main = plan.ladders[0]
    yield from (("run", r.slug, "", 1.0, r.slug, plan.seeds_of(r.slug)) for r in main.rows)
    yield from (("sweep", g.slug, "", x.multiple, x.slug, plan.seeds_of(x.slug))
                for g in plan.sweep.rows for x in g.runs)
    for lp in plan.ladders[1:]:
        if lp.size is None:                       # the second ladder: its own rows
            yield from ((lp.name, r.slug, "", 1.0, r.slug, plan.seeds_of(r.slug)) for r in lp.rows)
        else:                                     # a size: the main ladder's rows, row for row
            yield from (("scale", m.slug, lp.size, 1.0, r.slug, plan.seeds_of(r.slug))
                        for m, r in zip(main.rows, lp.rows))
    if plan.aa_seeds:
        yield "aa", main.rows[0].slug, "", 1.0, main.rows[0].slug, plan.aa_seeds
    yield from (("loo", r.slug, "", 1.0, r.slug, plan.seeds) for r in plan.leave_one_out)
    yield from (("rerun", r.of or r.slug, "", 1.0, r.slug, plan.seeds) for r in plan.rerun)


def run_lines(plan: Plan, records: Callable[[str, list[int]], list[RunRecord]],
              config_md5: Callable[[str], str]) -> list[RunLine]:
    """Every run of the plan, once, in the file's order (records: (slug, seeds) → their run records)."""
    seen: set[tuple[str, int]] = set()
    out = []
    for family, row, size, lr, slug, seeds in planned(plan):
        todo = [s for s in seeds if (slug, s) not in seen]
        seen.update((slug, s) for s in todo)
        digest = config_md5(slug) if todo else ""
        for rec in records(slug, todo) if todo else []:
            out.append(RunLine(family, row, size, lr, rec.seed, slug, rec.train_loss, rec.val_loss, rec.val_bpc,
                               rec.params, rec.steps, rec.diverged, rec.secs, digest, rec.code_md5, rec.machine))
    return out


def file_md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def to_csv(lines: list[RunLine]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FIELDS)
    w.writerows(line.cells() for line in lines)
    return buf.getvalue().encode()


def from_csv(text: str, where: str = "reports/runs.csv") -> list[RunLine]:
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != FIELDS:
        raise DataError(f"{where}: not a runs.csv of this version (columns {reader.fieldnames}); "
                        "regenerate it: dvc repro report")
    return [RunLine.from_cells(row, f"{where} line {i + 2}") for i, row in enumerate(reader)]
