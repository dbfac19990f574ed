"""The learning-rate grid: val loss against learning rate for each covered row, each row's best rate, the
comparison of neighbouring rows at their best rates, and loss spikes and divergence per row and rate.

A row's runs at train.lr are the main table's; the grid adds the other multiples (params: sweep).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..records.run import RunRecord
from .results import RowResult
from .stats import Comparison, Summary, compare, pooled_sd, summarize


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


@dataclass(frozen=True)
class RowAtRate:
    """One row at one learning rate: its seeds' runs."""
    multiple: float                 # of train.lr
    lr: float
    runs: tuple[RunRecord, ...]
    val: Summary
    spikes: tuple[int, ...]         # per seed
    main: bool                      # the main table's runs (multiple 1)

    @property
    def seeds_spiked(self) -> int:
        return sum(s > 0 for s in self.spikes)

    @property
    def unstable(self) -> bool:
        return self.seeds_spiked > 0 or self.val.n_diverged > 0


def row_at_rate(multiple: float, lr: float, runs: Sequence[RunRecord], threshold: float) -> RowAtRate:
    runs = tuple(runs)
    return RowAtRate(multiple, lr, runs, summarize([r.val_loss for r in runs]),
                tuple(spikes(r.losses, threshold, r.train.warmup_iters) for r in runs), multiple == 1)


@dataclass(frozen=True)
class SweepRow:
    """A covered ladder row across the grid, its cells in order of learning rate."""
    row: RowResult                  # the main table's row
    cells: tuple[RowAtRate, ...]

    @property
    def best(self) -> RowAtRate | None:
        """The cell with the lowest mean val loss among those where no seed diverged (None: none such)."""
        ok = [c for c in self.cells if c.val.mean is not None and c.val.n_diverged == 0]
        return min(ok, key=lambda c: c.val.mean) if ok else None


@dataclass(frozen=True)
class AtBest:
    """A covered row against the covered row above it, each at its own best learning rate."""
    row: SweepRow
    ref: SweepRow
    vs: Comparison | None           # None: a row had no rate without a diverged seed
    main: Comparison                # both at train.lr, on the grid's seeds (the main table's runs)


def at_best(rows: Sequence[SweepRow], ladder: Sequence[RowResult], *, confidence: float,
            band_sds: float) -> list[AtBest]:
    """Each covered row whose ladder predecessor is covered too, compared with it at both best rates."""
    by_slug = {r.row.slug: r for r in rows}
    out = []
    for above, below in zip(ladder, ladder[1:]):
        if above.slug in by_slug and below.slug in by_slug and below.vs is not None:
            mine, theirs = by_slug[below.slug], by_slug[above.slug]
            def vs(a: RowAtRate | None, b: RowAtRate | None) -> Comparison | None:
                return None if a is None or b is None else compare(
                    [r.val_loss for r in a.runs], [r.val_loss for r in b.runs], confidence=confidence, band=band_sds)

            main = vs(*(next(c for c in r.cells if c.main) for r in (mine, theirs)))
            out.append(AtBest(mine, theirs, vs(mine.best, theirs.best), main))
    return out


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
