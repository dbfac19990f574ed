"""A row's results: its runs (one record per seed) and their statistics against the row it is compared with; the
sweep's results (SweepCell, SweepRow, SweepPair: sweep.py builds them and says how the sweep is named); and a
ladder's and the whole report's results, which hold them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from ..config.sections import BAND_SDS, CONFIDENCE
from ..records.run_record import RunRecord
from ..records.stages import LadderName, ServeRecord, Size
from ..settling.looks import Design, Look, judge_looks
from .settings import Settings
from ..stats.paired import Comparison, Summary, Verdict, compare, summarize


@dataclass(frozen=True)
class RowResult:
    slug: str
    label: str
    runs: tuple[RunRecord, ...]     # one per seed, in seed order
    train: Summary
    val: Summary
    bpc: Summary
    vs: Comparison | None           # against the reference row, paired by seed (None: no reference)
    params: int
    d_params: int | None            # params minus the reference's
    unequal: bool                   # non-embedding params differ from the reference's by more than the tolerance
    secs: float                     # mean over seeds
    look: Look | None = None        # a ladder row: the look (settle.looks) that judged `vs`, and on which seeds

    def values(self, key: str) -> list[float | None]:
        return [getattr(r, key) for r in self.runs]


def row_result(slug: str, label: str, runs: list[RunRecord], ref: RowResult | None = None, *,
               confidence: float = CONFIDENCE, param_tolerance: float = 0.05, band_sds: float = BAND_SDS,
               design: Design | None = None) -> RowResult:
    """Summaries of a row's seeds, and the verdict against `ref` (the row above, the baseline, ...). A ladder row
    (`design`: its looks and the seed order they take) is judged by looks.judge_looks, paired by seed; any
    other (an A/A copy on other seeds, a leave-one-out or rerun row) once, seed i with the reference's i-th."""
    runs = tuple(runs)
    params = runs[0].params
    unequal = False
    if ref is not None:
        mine, theirs = runs[0].params_non_embedding, ref.runs[0].params_non_embedding
        unequal = abs(mine - theirs) > param_tolerance * theirs
    val = [r.val_loss for r in runs]
    look, vs = None, None
    if ref is not None and design is not None:
        look = judge_looks({r.seed: r.val_loss for r in runs}, {r.seed: r.val_loss for r in ref.runs}, design)
        vs = look.comparison
    elif ref is not None:
        theirs = ref.values("val_loss")
        k = min(len(val), len(theirs))
        vs = compare(val[:k], theirs[:k], confidence=confidence, band_sds=band_sds)
    return RowResult(
        slug=slug, label=label, runs=runs,
        train=summarize([r.train_loss for r in runs]), val=summarize(val), bpc=summarize([r.val_bpc for r in runs]),
        vs=vs, params=params, d_params=params - ref.params if ref is not None else None, unequal=unequal,
        secs=sum(r.secs for r in runs) / len(runs), look=look,
    )


def full_look(rows: list[RowResult]) -> Look | None:
    """A ladder's last row against its row 0, at the ladder's looks (None: a one-row ladder)."""
    if len(rows) < 2 or rows[-1].look is None:
        return None
    return judge_looks({r.seed: r.val_loss for r in rows[-1].runs}, {r.seed: r.val_loss for r in rows[0].runs},
                       rows[-1].look.design)


def ladder_results(rows: list[tuple[str, str, list[RunRecord]]], design: Design | None = None, star: bool = False,
                   **rule) -> list[RowResult]:
    """Each row of a ladder against the row above it (a chain), or against row 0 (a star: the catalogue), row 0
    against nothing, judged at the design's looks (None: once, on the seeds both ran); `rule`: row_result's
    keywords."""
    out: list[RowResult] = []
    for slug, label, runs in rows:
        ref = (out[0] if star else out[-1]) if out else None
        out.append(row_result(slug, label, runs, ref, design=design, **rule))
    return out


class Holds(StrEnum):
    """Whether a rerun's verdict holds (Rerun.holds); the report words each value (extra_sections.py: HOLDS_WORDS)."""
    YES = "yes"
    FLIPPED = "flipped"
    OPEN = "open"
    NONE = ""


@dataclass(frozen=True)
class Rerun:
    """A ladder row trained again with perturbed initial weights (`again`, compared with the rerun of the row
    above where that was rerun too), next to the row as the ladder has it (`original`)."""
    original: RowResult
    again: RowResult

    def diffs(self) -> list[float]:
        """rerun - original val loss of each seed that is finite in both."""
        return [b - a for a, b in zip(self.original.values("val_loss"), self.again.values("val_loss"))
                if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]

    def holds(self) -> "Holds":
        """YES / FLIPPED for a settled verdict (the rerun's, without a band, is / is not the same), OPEN where the
        original was borderline, NONE with nothing compared."""
        o, a = self.original.vs, self.again.vs
        if o is None or a is None or o.verdict == Verdict.NA:
            return Holds.NONE
        if o.verdict == Verdict.BORDERLINE:
            return Holds.OPEN
        return Holds.YES if a.unbanded == o.verdict else Holds.FLIPPED


# ----------------------------------------------------------------------------------------------- the sweep
# its results (reporting/sweep.py computes them); here, since a Ladder holds them and they hold RowResults

@dataclass(frozen=True)
class SweepCell:
    """One covered row at one learning rate of the sweep: its runs on sweep.seeds (what the table shows and the best
    rate is chosen on), and those past them that the looks judge a comparison on (`later`)."""
    slug: str                       # the run slug of its runs: the row's own at train.lr, else the grid run's
    multiple: float                 # of train.lr
    lr: float
    runs: tuple[RunRecord, ...]
    val: Summary
    spikes: tuple[int, ...]         # per seed
    main: bool                      # the main table's runs (multiple 1)
    later: tuple[RunRecord, ...] = ()   # runs on seeds past sweep.seeds, in the grid's seed order (settle.runs)

    @property
    def seeds_spiked(self) -> int:
        return sum(s > 0 for s in self.spikes)

    @property
    def unstable(self) -> bool:
        return self.seeds_spiked > 0 or self.val.n_diverged > 0


@dataclass(frozen=True)
class SweepRow:
    """A covered ladder row across the sweep, its cells in order of learning rate."""
    row: RowResult                  # the main table's row
    cells: tuple[SweepCell, ...]

    @property
    def best(self) -> SweepCell | None:
        """The cell with the lowest mean val loss among those where no seed diverged (None: none such)."""
        ok = [c for c in self.cells if c.val.mean is not None and c.val.n_diverged == 0]
        return min(ok, key=lambda c: c.val.mean) if ok else None


@dataclass(frozen=True)
class SweepPair:
    """A covered row against the covered row above it, each at its own best learning rate."""
    row: SweepRow
    ref: SweepRow
    vs: Comparison | None           # None: a row had no rate without a diverged seed
    main: Comparison                # both at train.lr (the main table's runs), judged alike
    look: Look | None = None        # vs at the grid's looks (the rates fixed at the first), and on which seeds


@dataclass(frozen=True)
class Ladder:
    """One ladder of rows, each against the row above it (row 0 against nothing): read, judged and rendered by the
    same code whichever it is (the main ladder: reports/ablation.md; the second: reports/beyond.md)."""
    name: LadderName                            # the plan's
    rows: list[RowResult]                       # row 0 first; each row's runs, one per seed
    provenance: dict[str, str] = field(default_factory=dict)
    sweep: list[SweepRow] = ()                  # its rows of the sweep (the learning-rate grid)
    pairs: list[SweepPair] = ()                 # those rows compared at their best rates
    serve: list[ServeRecord] = ()               # its rows' serve records, in row order (those served)
    size: str | None = None                     # a scale ladder: its size's name (Results.sizes)
    design: Design | None = None                # the looks its comparisons are judged at (settle.looks)
    claims: tuple = ()                          # a star (the catalogue): each row's paper's claim (None: row 0)

    @property
    def star(self) -> bool:
        """Each row against row 0 (the catalogue), not against the row above."""
        return self.name == LadderName.CATALOGUE


@dataclass(frozen=True)
class Results:
    """Everything the report shows, read from the files the plan lists (reporting.collect): nothing in it is
    measured by the report stage."""
    ladders: list[Ladder]                       # the main ladder first (row 0 the baseline); then the second,
                                                # where it is on (row 0 the book's design)
    settings: Settings
    aa: RowResult | None = None                 # the baseline on other seeds, against the baseline
    loo: list[RowResult] = ()                   # one change reverted from the full model, against it
    reruns: list[Rerun] = ()                    # rows trained again with perturbed initial weights
    perturbation: float = 0.0                   # their relative perturbation
    uniform: float | None = None                # ln(vocab): the loss of guessing every token equally
    sizes: tuple[Size, ...] = ()                # the scale ladders' sizes, smallest N first (name None: the
                                                # main ladder's); () with scale.sizes empty

    @property
    def main(self) -> Ladder:
        return self.ladders[0]

    def ladder(self, name: LadderName) -> Ladder | None:
        return next((x for x in self.ladders if x.name == name), None)
