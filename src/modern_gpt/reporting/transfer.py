"""Does a verdict hold at another size? Each change of the main ladder at every size of the scale ladders, the trend
of its effect from the smallest size to the largest, and its transfer verdict (docs/scale.md).

The per-seed effect of change k at one size is d = L(k) - L(k-1), paired by seed as in the main table. Where the
corpus has a floor (the generated one's entropy), every size approaches the same floor, so raw effects must shrink
as the losses do; there the measure is r = d / (L(k-1) - floor), the share of the loss above the floor that the
change removes (negative) or adds. The trend is the main table's rule (stats.paired.compare) applied to the per-seed
effect at the largest size against the smallest, paired by seed, its spread included: the rule's calibration
carries over (stats/across_sizes.py: the transfer verdict's rule and its simulation). The middle sizes are shown, not tested.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..config.sections import BAND_SDS, CONFIDENCE
from ..records.stages import Size
from .results import RowResult
from ..settling.looks import Look, judge_looks
from ..stats.across_sizes import Transfer, classify
from ..stats.paired import Comparison, compare, summarize, t_quantile


def effects(row: RowResult, above: RowResult, floor: Optional[float]) -> list[Optional[float]]:
    """Per seed: d = L(row) - L(above), or r = d / (L(above) - floor) with a floor (nats per token); None for a
    seed diverged in either."""
    out = []
    for a, b in zip(row.values("val_loss"), above.values("val_loss")):
        ok = all(v is not None and math.isfinite(v) for v in (a, b)) and (floor is None or b > floor)
        out.append(None if not ok else (a - b) / (b - floor if floor is not None else 1.0))
    return out


def mean_interval(values: Sequence[Optional[float]], confidence: float) -> tuple[Optional[float], ...]:
    """(mean, low, high): the t interval of the mean of the finite values (low = high = None with fewer than 2)."""
    s = summarize(values)
    if s.mean is None or s.sd is None:
        return s.mean, None, None
    half = t_quantile(0.5 + confidence / 2.0, s.n_finite - 1) * s.sd / math.sqrt(s.n_finite)
    return s.mean, s.mean - half, s.mean + half


@dataclass(frozen=True)
class ChangeAtSize:
    """One change at one size."""
    size: Size
    params: int                          # N at this size: the full model's non-embedding count, as its runs record it
    row: RowResult                       # row.vs: Δ val against the row above, judged by the main table's rule
    effect: list[Optional[float]]        # per seed both rows ran (seed order): r with a floor, d without
    mean: Optional[float]
    low: Optional[float]                 # the t interval of the mean effect
    high: Optional[float]


@dataclass(frozen=True)
class ChangeAcrossSizes:
    slug: str                            # the main ladder's row (its flag)
    label: str
    cells: list[ChangeAtSize]            # smallest size first
    trend: Comparison                    # effect at the largest size against the smallest, paired by seed
    decades: float                       # log10 of N largest / N smallest
    transfer: Transfer
    trend_look: Look | None = None       # the look (settle.looks) that judged the trend

    @property
    def slope(self) -> tuple[Optional[float], Optional[float], Optional[float]]:
        """The trend per decade of N, and its interval scaled alike (None where the ends' N are equal)."""
        t = self.trend
        return tuple(None if x is None or not self.decades else x / self.decades
                     for x in (t.effect, t.ci_low, t.ci_high))


def transfer(cells: list[ChangeAtSize], trend: Comparison) -> Transfer:
    """One change's transfer verdict, by classify()."""
    verdicts = [[c.row.vs.verdict for c in cells]]
    return classify(verdicts, trend.verdict, _nan(trend.effect), _nan(cells[0].mean), _nan(cells[-1].mean))[0]


def _nan(x: Optional[float]) -> float:
    return math.nan if x is None else x


def changes(ladders: list[tuple[Size, list[RowResult]]], floor: Optional[float], confidence: float = CONFIDENCE,
            band_sds: float = BAND_SDS) -> list[ChangeAcrossSizes]:
    """Every change (row 1 onwards) across the sizes (`ladders`: (size, its rows), smallest N first). N is the
    full model's non-embedding count as its runs record it."""
    n = [rows[-1].runs[0].params_non_embedding for _, rows in ladders]
    decades = math.log10(n[-1] / n[0])
    main = next((rows for size, rows in ladders if size.name is None), ladders[0][1])    # whose slugs are the flags
    out = []
    for k in range(1, len(main)):
        cells = []
        for (size, rows), params in zip(ladders, n):
            e = effects(rows[k], rows[k - 1], floor)
            cells.append(ChangeAtSize(size, params, rows[k], e, *mean_interval(e, confidence)))
        ends = [c.row.look.design for c in (cells[0], cells[-1]) if c.row.look is not None]
        look = None
        if ends:                                 # at the ends' looks (a scale ladder's cap, if lower)
            design = min(ends, key=lambda d: d.cap)
            seeds = [[r.seed for r in c.row.runs] for c in (cells[-1], cells[0])]
            look = judge_looks(dict(zip(seeds[0], cells[-1].effect)), dict(zip(seeds[1], cells[0].effect)), design)
            trend = look.comparison
        else:
            trend = compare(cells[-1].effect, cells[0].effect, confidence=confidence, band_sds=band_sds)
        out.append(ChangeAcrossSizes(main[k].slug, main[k].label, cells, trend, decades, transfer(cells, trend),
                                     look))
    return out
