"""A star of comparisons: every row against one shared row 0 (the catalogue), judged at the looks. Simulated here to
show what sharing row 0 does and does not do: each comparison follows its own looks on the seeds it and row 0 both
ran, so its error rates are a lone comparison's (sequential.simulate_looks'); the comparisons are correlated through row 0, so
the chance that at least one of them errs (the family-wise rate) grows with their number; and row 0 needs as many
seeds as the largest look any comparison reaches (docs/catalogue.md quotes the figures; tests/test_catalogue.py
holds the first against simulate_looks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..config.sections import BAND_SDS, CONFIDENCE
from .calibration import CHUNK, CODE
from .paired import Verdict
from .sequential import OPEN, draw_noise, settle_at


@dataclass(frozen=True)
class StarCalibration:
    """simulate_star()'s counts over `trials` stars, each comparison's in the order of the effects given."""
    trials: int
    better: tuple[int, ...]          # per comparison: settled better, worse, no effect; open at the cap
    worse: tuple[int, ...]
    no_effect: tuple[int, ...]
    open_at_cap: tuple[int, ...]
    familywise: int                  # stars in which some comparison without an effect was called better or worse
    row0_seeds: tuple[int, ...]      # how many stars needed row 0 at each look (the largest any comparison reached)


def simulate_star(effects_sd: Sequence[float], looks: Sequence[int], trials: int, seed: int, *,
                  pair_correlation: float = 0.0, confidence: float = CONFIDENCE, band_sds: float = BAND_SDS,
                  noise: str = "normal") -> StarCalibration:
    """The adaptive procedure on simulated stars: row 0 and one row per effect (in units of the seed sd), every row
    sharing a per-seed part with row 0 and each other (`pair_correlation`: a seed's batches are every row's). Each
    comparison follows its own looks on row 0's first n seeds and its own (sequential.settle_at, as
    simulate_looks judges a lone pair); row 0 holds the largest look any comparison reached."""
    looks, m, cap = tuple(looks), len(effects_sd), looks[-1]
    rng = np.random.default_rng(seed)
    shared_w, own_w = math.sqrt(pair_correlation), math.sqrt(1.0 - pair_correlation)
    counts = {k: np.zeros(m, dtype=int) for k in ("better", "worse", "no_effect", "open_at_cap")}
    familywise, at_look = 0, np.zeros(len(looks), dtype=int)
    for start in range(0, trials, CHUNK):
        n_ = min(CHUNK, trials - start)
        common = draw_noise(rng, noise, (n_, cap))
        ref = shared_w * common + own_w * draw_noise(rng, noise, (n_, cap))
        reached = np.zeros(n_, dtype=int)                # index of the largest look any comparison ended at
        false_call = np.zeros(n_, dtype=bool)
        for k, effect in enumerate(effects_sd):
            row = effect + shared_w * common + own_w * draw_noise(rng, noise, (n_, cap))
            s = settle_at(row, ref, looks, confidence, band_sds)
            settled = s.look != OPEN
            better, worse = settled & (s.code == CODE[Verdict.BETTER]), settled & (s.code == CODE[Verdict.WORSE])
            counts["better"][k] += int(better.sum())
            counts["worse"][k] += int(worse.sum())
            counts["no_effect"][k] += int(s.no_effect.sum())
            counts["open_at_cap"][k] += int((~settled).sum())
            if effect == 0:
                false_call |= better | worse
            reached = np.maximum(reached, s.reached(len(looks) - 1))
        familywise += int(false_call.sum())
        at_look += np.bincount(reached, minlength=len(looks))
    return StarCalibration(trials, *(tuple(int(x) for x in counts[k]) for k in ("better", "worse", "no_effect",
                                                                                  "open_at_cap")),
                           familywise=familywise, row0_seeds=tuple(int(x) for x in at_look))
