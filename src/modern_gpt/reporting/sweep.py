"""The sweep (params: sweep; to a reader, the learning-rate grid): val loss against learning rate for each
covered row, each row's best rate, the comparison of neighbouring rows at their best rates, and loss spikes and
divergence per row and rate.

A row's runs at train.lr are the main table's; the sweep adds the other multiples (params: sweep).

Names: in code the concept is "sweep", as params.yaml (sweep:), its DVC stages (sweep@...) and reports/lr_sweep.csv
name it; "learning-rate grid" is prose only (docstrings, the report's text). Its results, built here, are
results.py's (a Ladder holds them): SweepCell, one covered row at one rate (sweep_cell); SweepRow, a covered row
across the sweep; SweepPair, a covered row against the covered row above it at their best rates (sweep_pairs).
The plan's record of it is records/stages.py's SweepPlan, SweepPlanRow and SweepPlanRun.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..records.run_record import RunRecord
from ..settling.looks import Design, judge_looks
from .results import RowResult, SweepCell, SweepPair, SweepRow
from ..stats.paired import pooled_sd, summarize


def spikes(losses: Sequence[float], threshold: float, start: int = 0) -> int:
    """Loss spikes of one run: episodes in which a step's training loss rises above the running minimum of the
    steps before it by more than `threshold` nats, counted from step `start` (the pipeline: the end of warm-up;
    the minimum runs from step 0). Consecutive steps above it are one spike."""
    count, best, inside = 0, math.inf, False
    for step, loss in enumerate(losses):
        above = step >= start and loss > best + threshold
        count += above and not inside
        inside = above
        best = min(best, loss)
    return count


def expected_max(k: int) -> float:
    """E[max of k independent standard normals] (0 at k=1, 0.564 at 2, 0.846 at 3, 1.029 at 4): how far the
    best of k equally good means lies, by luck, below their common value, in units of one mean's sd."""
    if k < 2:
        return 0.0
    h, lo, n = 0.01, -9.0, 1801
    total = 0.0
    for i in range(n):
        x = lo + i * h
        pdf = math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        cdf = 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
        total += x * k * pdf * cdf ** (k - 1) * (0.5 if i in (0, n - 1) else 1.0)
    return total * h


def sweep_cell(slug: str, multiple: float, lr: float, runs: Sequence[RunRecord], threshold: float,
               later: Sequence[RunRecord] = ()) -> SweepCell:
    runs = tuple(runs)
    return SweepCell(slug, multiple, lr, runs, summarize([r.val_loss for r in runs]),
                     tuple(spikes(r.losses, threshold, r.train.warmup_iters) for r in runs), multiple == 1,
                     tuple(later))


def sweep_pairs(rows: Sequence[SweepRow], ladder: Sequence[RowResult], design: Design) -> list[SweepPair]:
    """Each covered row whose ladder predecessor is covered too, compared with it at both best rates (chosen on
    sweep.seeds, the first look, and fixed there), judged at the grid's looks (`design`; off: once, on every seed both ran)
    on every seed both cells ran; and at train.lr for both, alike."""
    by_slug = {r.row.slug: r for r in rows}
    out = []
    for above, below in zip(ladder, ladder[1:]):
        if above.slug in by_slug and below.slug in by_slug and below.vs is not None:
            mine, theirs = by_slug[below.slug], by_slug[above.slug]
            main = judge_looks(*(losses(next(c for c in r.cells if c.main)) for r in (mine, theirs)), design)
            if mine.best is None or theirs.best is None:
                out.append(SweepPair(mine, theirs, None, main.comparison))
                continue
            look = judge_looks(losses(mine.best), losses(theirs.best), design)
            out.append(SweepPair(mine, theirs, look.comparison, main.comparison, look if design.on else None))
    return out


def losses(cell: SweepCell) -> dict[int, float | None]:
    """seed → val loss of every run of a cell, past sweep.seeds too (None: diverged)."""
    return {r.seed: r.val_loss for r in (*cell.runs, *cell.later)}


def selection_bias(rows: Sequence[SweepRow]) -> float | None:
    """How far picking the best of k rates on the seeds that judge it can lower a row's mean by luck alone, at
    most (all rates equally good): E[max of k normals] x (pooled seed sd) / sqrt(seeds)."""
    cells = [c for r in rows for c in r.cells if c.val.sd is not None]
    if not cells:
        return None
    pooled = pooled_sd(*(c.val for c in cells))
    k = max(len(r.cells) for r in rows)
    n = min(c.val.n_finite for c in cells)
    return expected_max(k) * pooled / math.sqrt(n)
