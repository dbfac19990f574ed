"""Does a verdict hold at another size? Each change of the main ladder at every size of the scale ladders, the trend
of its effect from the smallest size to the largest, and its transfer verdict (docs/scale.md).

The per-seed effect of change k at one size is d = L(k) - L(k-1), paired by seed as in the main table. Where the
corpus has a floor (the generated one's entropy), every size approaches the same floor, so raw effects must shrink
as the losses do; there the measure is r = d / (L(k-1) - floor), the share of the loss above the floor that the
change removes (negative) or adds. The trend is the main table's rule (stats.compare) applied to the per-seed
effect at the largest size against the smallest, paired by seed, its spread included: the rule's calibration
carries over. The middle sizes are shown, not tested.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Optional, Sequence

import numpy as np

from ..config.sections import BAND_SDS, CONFIDENCE
from ..records.stages import Size
from .results import RowResult
from .calibration import CHUNK, judge
from ..settling.looks import Look, judge_looks
from .stats import Comparison, Verdict, compare, summarize, t_quantile


class Transfer(StrEnum):
    """A change's verdicts across sizes, decided in this order (the first that applies)."""
    FLIPS = "flips"                          # settled better at one size and settled worse at another
    HOLDS = "holds at every size"            # the same settled verdict (better, or worse) at every size
    APPEARS = "appears with size"            # trend settled away from zero; largest settled, smallest noise
    FADES = "fades with size"                # trend settled toward zero; smallest settled, largest noise
    NOISE = "noise at every size"            # noise everywhere, and the trend noise too
    OPEN = "open"                            # anything else: a borderline end or trend included


def classify(verdicts, trend, trend_effect, small_effect, large_effect) -> np.ndarray:
    """The transfer verdicts of many changes at once: an array of Transfer, one per change. verdicts: (changes,
    sizes) of Verdict, smallest size first; trend: the trend's Verdict per change; trend_effect: its contrast
    (largest minus smallest); small_effect, large_effect: the mean effect at the two ends. One implementation for
    the report (transfer(), one change) and the calibration (simulate_transfer(), a chunk of trials)."""
    verdicts = np.atleast_2d(np.asarray(verdicts, dtype=object))
    trend = np.atleast_1d(np.asarray(trend, dtype=object))
    trend_effect, small_effect, large_effect = (np.atleast_1d(np.asarray(x, dtype=float))
                                                for x in (trend_effect, small_effect, large_effect))
    better, worse, noise = (verdicts == v for v in (Verdict.BETTER, Verdict.WORSE, Verdict.NOISE))
    called = better | worse
    small, large = called[:, 0], called[:, -1]
    settled = (trend == Verdict.BETTER) | (trend == Verdict.WORSE)
    # "not settled" is noise: a borderline end (or trend), which another machine could tip, leaves the change open
    rules = {
        Transfer.FLIPS: better.any(axis=1) & worse.any(axis=1),
        Transfer.HOLDS: small & (verdicts == verdicts[:, :1]).all(axis=1),
        Transfer.APPEARS: settled & large & noise[:, 0] & (np.sign(trend_effect) == np.sign(large_effect)),
        Transfer.FADES: settled & small & noise[:, -1] & (np.sign(trend_effect) == -np.sign(small_effect)),
        Transfer.NOISE: noise.all(axis=1) & (trend == Verdict.NOISE),
    }
    # np.full would turn the fill into its text (a str array, then object): a list of the member keeps the member
    out = np.array([Transfer.OPEN] * len(verdicts), dtype=object)
    for found, applies in reversed(rules.items()):       # the first that applies wins: it is written last
        out[applies] = found
    return out


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


# ------------------------------------------------------------------------------------------------ calibration

@dataclass(frozen=True)
class TransferCalibration:
    trials: int
    counts: dict                         # Transfer → trials so classified

    def rate(self, *classes: Transfer) -> float:
        return sum(self.counts.get(c, 0) for c in classes) / self.trials


def simulate_transfer(effect_sd: float, n_seeds: int, trials: int, seed: int, *, n_sizes: int = 3,
                      pair_correlation: float = 0.0, size_correlation: float = 0.0, confidence: float = CONFIDENCE,
                      band_sds: float = BAND_SDS) -> TransferCalibration:
    """Transfer verdicts for a change whose effect is the same at every size (effect_sd, in seed sds; positive:
    worse), deterministic from seed. At each size, each seed's loss is normal with sd 1 for the row above and the
    row, correlated pair_correlation within a seed (same batches); size_correlation correlates a seed's per-seed
    effects across sizes (the same seed's batches at every size). Each size is judged by calibration.judge, the
    trend by calibration.judge on the per-seed effects at the largest size against the smallest, and classify()
    decides: every APPEARS or FADES counted is a false one."""
    rng = np.random.default_rng(seed)
    shared, own = math.sqrt(pair_correlation), math.sqrt(1.0 - pair_correlation)
    across, alone = math.sqrt(size_correlation), math.sqrt(1.0 - size_correlation)
    counts = dict.fromkeys(Transfer, 0)
    for start in range(0, trials, CHUNK):
        n = min(CHUNK, trials - start)
        seed_part = rng.standard_normal((n, 1, n_seeds))                     # the same seed, at every size
        common, own_ref, own_row = rng.standard_normal((3, n, n_sizes, n_seeds))
        common = across * seed_part + alone * common
        ref = shared * common + own * own_ref
        row = effect_sd + shared * common + own * own_row
        verdicts = np.stack([judge(row[:, i], ref[:, i], confidence=confidence, band_sds=band_sds).verdicts
                             for i in range(n_sizes)], axis=1)
        d = row - ref
        trend = judge(d[:, -1], d[:, 0], confidence=confidence, band_sds=band_sds)
        found = classify(verdicts, trend.verdicts, trend.effect, d[:, 0].mean(axis=1), d[:, -1].mean(axis=1))
        for t in Transfer:
            counts[t] += int((found == t).sum())
    return TransferCalibration(trials, counts)
