"""A row's results: its runs (one record per seed) and their statistics against the row it is compared with."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.records import RunRecord
from .stats import BAND, Comparison, Summary, compare, summarize


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

    def values(self, key: str) -> list[float | None]:
        return [getattr(r, key) for r in self.runs]


def row_result(slug: str, label: str, runs: list[RunRecord], ref: RowResult | None = None, *,
               confidence: float = 0.95, param_tolerance: float = 0.05, band: float = BAND) -> RowResult:
    """Summaries of a row's seeds, and the verdict against `ref` (the row above, the baseline, ...)."""
    runs = tuple(runs)
    params = runs[0].params
    unequal = False
    if ref is not None:
        mine, theirs = runs[0].params_non_embedding, ref.runs[0].params_non_embedding
        unequal = abs(mine - theirs) > param_tolerance * theirs
    val = [r.val_loss for r in runs]
    return RowResult(
        slug=slug, label=label, runs=runs,
        train=summarize([r.train_loss for r in runs]), val=summarize(val), bpc=summarize([r.val_bpc for r in runs]),
        vs=compare(val, ref.values("val_loss"), confidence=confidence, band=band) if ref is not None else None,
        params=params, d_params=params - ref.params if ref is not None else None, unequal=unequal,
        secs=sum(r.secs for r in runs) / len(runs),
    )


def ladder_results(rows: list[tuple[str, str, list[RunRecord]]], **rule) -> list[RowResult]:
    """Each row of a ladder against the row above it (row 0 against nothing); `rule`: row_result's keywords."""
    out: list[RowResult] = []
    for slug, label, runs in rows:
        out.append(row_result(slug, label, runs, out[-1] if out else None, **rule))
    return out
