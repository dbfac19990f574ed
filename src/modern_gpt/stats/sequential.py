"""Looking again, simulated: the adaptive procedure of settling an open verdict (docs/statistics.md, "Settling an
open verdict") on many simulated comparisons at once, and the interval level every look uses, calibrated by it.

A design's looks are seed counts fixed in advance (5, 8, 12, 20); a comparison is judged at the first, and only one
still open (borderline, or "not shown either way") is judged again at the next, on more seeds, until it settles or
reaches the last. settle_at() is that loop on arrays, with calibration.judge() (the report's rule; a test holds it to
paired.compare()); simulate_looks() draws row/ref pairs for it, star.simulate_star() a star of them. look_level() is
the level that keeps looking again from inflating the error it would inflate; each design's level is computed once
and committed (levels.csv, beside this file: `modern-gpt levels` adds a design), and committed_level() reads it:
a design missing from it is refused, never simulated at report time.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..config.sections import BAND_SDS, CONFIDENCE
from ..core.errors import ConfigError
from .calibration import CHUNK, CODE, Rates, judge
from .paired import SPREAD_SDS, Verdict

CALIBRATION_TRIALS = 20_000      # per evaluation of look_level's bisection: the level is deterministic from them
CALIBRATION_SEED = 20261205
CALIBRATION_CORRELATIONS = (0.0, 0.5)   # seed correlations the level must hold at (the larger level is taken)
LEVELS_FILE = Path(__file__).with_name("levels.csv")     # each design's level, committed: read by committed_level
NOISES = ("normal", "t3")            # seed noise: normal, or Student t with 3 degrees of freedom (unit variance)
OPEN = -1                            # settle_at's look index for a comparison still open at the last look


def draw_noise(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """Unit-variance seed noise of `kind` (NOISES)."""
    if kind == "normal":
        return rng.standard_normal(shape)
    if kind == "t3":
        return rng.standard_t(3, shape) / math.sqrt(3.0)
    raise ValueError(f"noise {kind!r}: allowed are {', '.join(NOISES)}")


@dataclass(frozen=True)
class Settled:
    """settle_at()'s outcome per trial: the index of the look that settled it (OPEN: none did) and the verdict's
    code there (better, worse, or noise of the kind "no effect larger than the spread"; the last look's code if open)."""
    look: np.ndarray
    code: np.ndarray
    no_effect: np.ndarray            # settled as noise of the kind no effect larger than the spread

    def at(self, i: int) -> np.ndarray:
        return self.look == i

    def reached(self, last: int) -> np.ndarray:
        """The index of the look each trial ended at: its settling look, or the last one if open."""
        return np.where(self.look == OPEN, last, self.look)


def settle_at(row: np.ndarray, ref: np.ndarray, looks: Sequence[int], confidence: float, band_sds: float) -> Settled:
    """The adaptive procedure on (trials, seeds) arrays: each trial judged on its first n seeds at each look in turn
    until a verdict settles it (better, worse, or no effect larger than the spread)."""
    m = row.shape[0]
    look, code, no_effect = np.full(m, OPEN), np.zeros(m, dtype=int), np.zeros(m, dtype=bool)
    active = np.ones(m, dtype=bool)
    for i, n in enumerate(looks):
        j = judge(row[:, :n], ref[:, :n], confidence=confidence, band_sds=band_sds)
        done = active & ((j.code == CODE[Verdict.BETTER]) | (j.code == CODE[Verdict.WORSE]) | j.no_effect)
        last = active & (i == len(looks) - 1)
        look[done] = i
        code[done | last], no_effect[done] = j.code[done | last], j.no_effect[done]
        active &= ~done
    return Settled(look, code, no_effect)


@dataclass(frozen=True)
class LooksCalibration(Rates):
    """simulate_looks()'s counts over `trials` comparisons."""
    trials: int
    better: int
    worse: int
    no_effect: int                   # settled as noise of the kind no effect larger than the spread
    open_at_cap: int                 # still open at the last look
    seeds: int                       # seeds per row judged, summed over trials (the look that ended each)
    flips: int = 0                   # settled comparisons whose rerun, judged at the same look without the band,
    contradictions: int = 0          # gives another verdict; ... whose rerun is settled, on another verdict

    @property
    def settled(self) -> int:
        return self.better + self.worse + self.no_effect

    @property
    def mean_seeds(self) -> float:
        return self.seeds / self.trials


def _reruns(s: Settled, again_row: np.ndarray, again_ref: np.ndarray, looks: Sequence[int], confidence: float,
            band_sds: float) -> tuple[int, int]:
    """Each settled comparison's rerun judged at the look it settled at: (flips: another verdict without the band,
    contradictions: settled on another verdict)."""
    flips = contradictions = 0
    settled_codes = np.array([CODE[v] for v in (Verdict.BETTER, Verdict.WORSE, Verdict.NOISE)])
    for i, n in enumerate(looks):
        done = s.at(i)
        if done.any():
            a = judge(again_row[done, :n], again_ref[done, :n], confidence=confidence, band_sds=band_sds)
            flips += int((a.unbanded != s.code[done]).sum())
            contradictions += int((np.isin(a.code, settled_codes) & (a.code != s.code[done])).sum())
    return flips, contradictions


def simulate_looks(effect_sd: float, looks: Sequence[int], trials: int, seed: int, *, pair_correlation: float = 0.0,
                   confidence: float = CONFIDENCE, band_sds: float = BAND_SDS, noise: str = "normal",
                   rerun_sd: Optional[float] = None) -> LooksCalibration:
    """The adaptive procedure (settle_at) on simulated row/ref pairs (calibration.simulate's model: sd 1, a shared
    per-seed part correlating a seed's two values, the row's mean effect_sd). `confidence` is the level at every
    look. rerun_sd: each run rerun on another machine (the same seeds, its own part partly redrawn, rerun - original
    of sd rerun_sd), judged at the look the original settled at."""
    looks = tuple(looks)
    cap, own_var = looks[-1], 1.0 - pair_correlation
    keep = 1.0 if rerun_sd is None else 1.0 - rerun_sd ** 2 / (2.0 * own_var)
    rng = np.random.default_rng(seed)
    shared_w, own_w, fresh_w = math.sqrt(pair_correlation), math.sqrt(own_var), math.sqrt(max(0.0, 1.0 - keep ** 2))
    counts = dict(better=0, worse=0, no_effect=0, open_at_cap=0, seeds=0, flips=0, contradictions=0)
    for start in range(0, trials, CHUNK):
        m = min(CHUNK, trials - start)
        common, own_ref, own_row = (draw_noise(rng, noise, (m, cap)) for _ in range(3))
        ref = shared_w * common + own_w * own_ref
        row = effect_sd + shared_w * common + own_w * own_row
        s = settle_at(row, ref, looks, confidence, band_sds)
        settled = s.look != OPEN
        counts["better"] += int((settled & (s.code == CODE[Verdict.BETTER])).sum())
        counts["worse"] += int((settled & (s.code == CODE[Verdict.WORSE])).sum())
        counts["no_effect"] += int(s.no_effect.sum())
        counts["open_at_cap"] += int((~settled).sum())
        counts["seeds"] += int(np.asarray(looks)[s.reached(len(looks) - 1)].sum())
        if rerun_sd is not None:
            fresh_ref, fresh_row = (draw_noise(rng, noise, (m, cap)) for _ in range(2))
            again_ref = ref + own_w * ((keep - 1.0) * own_ref + fresh_w * fresh_ref)
            again_row = row + own_w * ((keep - 1.0) * own_row + fresh_w * fresh_row)
            flips, contradictions = _reruns(s, again_row, again_ref, looks, confidence, band_sds)
            counts["flips"] += flips
            counts["contradictions"] += contradictions
    return LooksCalibration(trials=trials, **counts)


def miscall(looks: Sequence[int], confidence: float, band_sds: float, pair_correlation: float,
            trials: int = CALIBRATION_TRIALS, noise: str = "normal") -> float:
    """The share of comparisons whose true effect is as large as the spread that the procedure calls "no effect
    larger than the spread": the error that looking again inflates (the spread keeps false changes flat)."""
    return simulate_looks(SPREAD_SDS, looks, trials, CALIBRATION_SEED, pair_correlation=pair_correlation,
                          confidence=confidence, band_sds=band_sds, noise=noise).no_effect / trials


@lru_cache(maxsize=64)
def look_level(looks: tuple[int, ...], confidence: float = CONFIDENCE, band_sds: float = BAND_SDS) -> float:
    """The level of every look's interval: the lowest (bisected, then rounded up to 0.1%) at which the whole
    procedure over `looks` calls a true effect as large as the spread "no effect larger than the spread" no more
    often than one look at looks[0] seeds and `confidence` does under the same noise, at each seed correlation of
    CALIBRATION_CORRELATIONS and each noise of NOISES (normal, and heavy-tailed); the highest of those levels.
    Deterministic: the simulation's draws are fixed (CALIBRATION_SEED), the same at every level tried."""
    if len(looks) < 2:
        return confidence
    levels = []
    for kind in NOISES:
        for rho in CALIBRATION_CORRELATIONS:
            target = miscall(looks[:1], confidence, band_sds, rho, noise=kind)
            lo, hi = confidence, 0.9995
            if miscall(looks, lo, band_sds, rho, noise=kind) <= target:
                levels.append(lo)
                continue
            for _ in range(11):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if miscall(looks, mid, band_sds, rho, noise=kind) <= target else (mid, hi)
            levels.append(hi)
    return min(0.9995, math.ceil(max(levels) * 1000.0 - 1e-9) / 1000.0)


# ------------------------------------------------------------------------------------------ the committed levels
def _key(looks: Sequence[int], confidence: float, band_sds: float) -> tuple:
    return tuple(int(k) for k in looks), round(float(confidence), 6), round(float(band_sds), 6)


def committed_levels(path: Path = LEVELS_FILE) -> dict[tuple, float]:
    """levels.csv: (looks, confidence, band_sds) → the level look_level gave at CALIBRATION_TRIALS."""
    with path.open(encoding="utf-8", newline="") as f:
        return {_key(r["looks"].split(), r["confidence"], r["band_sds"]): float(r["level"])
                for r in csv.DictReader(f) if int(r["trials"]) == CALIBRATION_TRIALS}


def level_command(looks: Sequence[int], confidence: float, band_sds: float) -> str:
    """The command that computes a design's level and commits it to levels.csv."""
    return f"modern-gpt levels {' '.join(map(str, looks))} --confidence {confidence:g} --band {band_sds:g}"


def committed_level(looks: Sequence[int], confidence: float, band_sds: float, field: str = "settle.looks") -> float:
    """The committed level of a design of two looks or more; a design levels.csv lacks is refused in one line naming
    it (`field`: the params it comes from) and the command that adds it."""
    level = committed_levels().get(_key(looks, confidence, band_sds))
    if level is None:
        raise ConfigError(f"{field}={list(looks)}: no committed level for confidence {confidence:g}, band "
                          f"{band_sds:g}; add it: {level_command(looks, confidence, band_sds)}")
    return level


def add_level(looks: Sequence[int], confidence: float, band_sds: float, why: str, path: Path = LEVELS_FILE) -> float:
    """look_level() of a design, simulated now, written to levels.csv (a design it has is left as it is)."""
    looks = tuple(int(k) for k in looks)
    if len(looks) < 2 or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] < 2:
        raise ConfigError(f"looks={list(looks)}: must be two seed counts or more, increasing, the first at least 2")
    if (have := committed_levels(path).get(_key(looks, confidence, band_sds))) is not None:
        return have
    level = look_level(looks, confidence, band_sds)
    with path.open("a", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow([" ".join(map(str, looks)), f"{confidence:g}", f"{band_sds:g}",
                                                     CALIBRATION_TRIALS, f"{level:g}", why])
    return level
