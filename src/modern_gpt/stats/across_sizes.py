"""The transfer verdict: a change's verdicts at every size and the trend of its effect from the smallest size to the
largest, classified in one order (Transfer; classify(), one implementation for the report's one change,
reporting/transfer.py, and for a simulated chunk of them), and how often it is wrong, simulated (simulate_transfer:
docs/scale.md's error rates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from ..config.sections import BAND_SDS, CONFIDENCE
from .calibration import CHUNK, judge
from .paired import Verdict


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
