"""Settling an open verdict: seed counts fixed in advance at which a comparison is judged, and more seeds only where
a verdict is open (params.yaml settle:, `modern-gpt settle`; docs/statistics.md, "Settling an open verdict").

A design names its looks, e.g. 5, 8, 12, 20 seeds: the first is seeds:'s count, the last the cap. At each look a
comparison is judged by stats.compare()'s rule, spread, band and words unchanged, on the first n seeds of the seed
order both rows ran (seeds:, then the next free integers), with one interval level at every look: a repeated
confidence interval, its level calibrated (look_level) by simulating the whole procedure, so that looking again
does not inflate the error that looking again would inflate. A comparison settled at a look (better, worse, or
noise of the kind "no effect larger than the spread") is final, judged on the seeds it had then, however many
seeds its rows gain later for another comparison; an open one (borderline, or "not shown either way") asks for the
next look's seeds on both sides, and at the cap it stays open. The spread is re-estimated at each look from the
seeds judged there, as compare() does; the simulation covers that.

simulate_looks() runs the whole adaptive procedure for many comparisons at once with calibration.judge() (the
report's rule on arrays; a test holds it to compare()), a rerun on another machine replaying the recorded looks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Optional, Sequence

import numpy as np

from ..config.sections import BAND_SDS, CONFIDENCE
from ..records.stages import Plan
from .order import seed_order, sweep_looks, sweep_seed_order
from ..reporting.calibration import CHUNK, CODE, Rates, judge
from ..reporting.stats import NO_EFFECT, SPREAD_SDS, Comparison, Verdict, compare, t_quantile, verdict_text

CALIBRATION_TRIALS = 20_000      # per evaluation of look_level's bisection: the level is deterministic from them
CALIBRATION_SEED = 20261205
CALIBRATION_CORRELATIONS = (0.0, 0.5)   # seed correlations the level must hold at (the larger level is taken)
# Each design's level, computed once by look_level's simulation and committed: (looks, confidence, band_sds,
# trials) → the level. The designs of the committed params: a report reads its level here, and simulates only a
# design this lacks (tests/test_settle.py simulates each entry again: slow, about 3 minutes here).
LEVELS = {
    ((5, 8, 12, 20), 0.95, 0.4, CALIBRATION_TRIALS): 0.992,      # settle.looks: the main and second ladders, the star
    ((5, 8, 12), 0.95, 0.4, CALIBRATION_TRIALS): 0.987,          # up to settle.scale_cap: the scale ladders
    ((3, 5, 8, 12, 20), 0.95, 0.4, CALIBRATION_TRIALS): 0.999,   # sweep.seeds' 3, then settle.looks: the grid
}


def settles(c: Comparison) -> bool:
    """Whether a verdict ends its comparison: better, worse, or noise of the kind no effect larger than the spread."""
    return c.verdict in (Verdict.BETTER, Verdict.WORSE) or (c.verdict == Verdict.NOISE and c.noise_kind == NO_EFFECT)


@dataclass(frozen=True)
class Design:
    """The looks of params.yaml's settle: (records.stages.Plan.looks), and the one-look rule they keep."""
    looks: tuple[int, ...]           # seed counts, increasing: the first is seeds:'s count, the last the cap
    order: tuple[int, ...] = ()      # the seed order the looks take (order.seed_order), at least the cap's
    confidence: float = CONFIDENCE         # report.confidence: what one look alone would use
    band_sds: float = BAND_SDS       # report.borderline: the band, in pooled seed sds

    @property
    def on(self) -> bool:
        return len(self.looks) > 1

    @property
    def cap(self) -> int:
        return self.looks[-1]

    @property
    def level(self) -> float:
        """The interval level at every look: report.confidence with one look, else the committed table's (LEVELS),
        else look_level's simulation."""
        if not self.on:
            return self.confidence
        committed = LEVELS.get((self.looks, self.confidence, self.band_sds, CALIBRATION_TRIALS))
        return committed if committed is not None else look_level(self.looks, self.confidence, self.band_sds)

    def after(self, n: int) -> Optional[int]:
        """The next look after n seeds (None: n is at or past the cap)."""
        return next((k for k in self.looks if k > n), None)


@dataclass(frozen=True)
class Look:
    """Where one comparison stands: its verdict at the look that settled it, or at the last look both rows' seeds
    allow (open: `next` is the seed count it asks for, None at the cap)."""
    comparison: Comparison
    seeds: tuple[int, ...]           # the seeds judged, paired, in seed order
    settled: bool
    next: Optional[int]
    design: Design

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def at_cap(self) -> bool:
        return not self.settled and self.next is None


def ruled_out(c: Comparison) -> Optional[float]:
    """The smallest |effect| the comparison rules out: the far end of its (2 x level - 1) interval, the one the
    kind "no effect larger than the spread" reads (None with fewer than two pairs)."""
    if c.sd_diff is None or c.effect is None:
        return None
    return abs(c.effect) + t_quantile(c.confidence, c.n_pairs - 1) * c.sd_diff / math.sqrt(c.n_pairs)


def look_text(look: Look) -> str:
    """A verdict under the design, as the reports print it: 'better, settled at 8 seeds'; 'borderline, open at 5
    seeds: next look at 8'; 'noise (not shown either way), open at the cap (20 seeds): rules out |Δ| > 0.0123'.
    With the design off, verdict_text()'s words alone."""
    c = look.comparison
    if not look.design.on:
        return verdict_text(c)
    if c.verdict == Verdict.NA:
        return verdict_text(c)
    word = f"noise ({c.noise_kind})" if c.verdict == Verdict.NOISE else str(c.verdict.value)
    if look.settled:
        return f"{word}, settled at {look.n} seeds"
    if look.next is not None:
        return f"{word}, open at {look.n} seeds: next look at {look.next}"
    bound = ruled_out(c)
    return f"{word}, open at the cap ({look.n} seeds)" + (f": rules out effects beyond ±{bound:.4f}" if bound is not None else "")


def design(plan: Plan, scale: bool, confidence: float, band_sds: float) -> Design:
    """A ladder's looks: settle.looks (a scale ladder's up to settle.scale_cap); off, one look on every seed a row
    ran (the base seeds, and those settle.runs lists), its seed order long enough for them all."""
    most = len(plan.seeds) + max((len(a.seeds) for a in plan.added), default=0)
    return ladder_design(plan.looks, plan.seeds, plan.aa_seeds, most, confidence, band_sds,
                         plan.scale_cap if scale else None)


def ladder_design(looks: Sequence[int], seeds: Sequence[int], aa_seeds: Sequence[int], most: int, confidence: float,
                  band_sds: float, cap: Optional[int] = None) -> Design:
    """design() from the plan's pieces (review --check builds them from params.yaml): `looks` empty is off, one look
    on up to `most` seeds (seeds: and the most settle.runs gave one slug); `cap` a scale ladder's last look."""
    if not looks:
        return Design((len(seeds),), seed_order(seeds, aa_seeds, most), confidence, band_sds)
    looks = tuple(k for k in looks if cap is None or k <= cap)
    return Design(looks, seed_order(seeds, aa_seeds, looks[-1]), confidence, band_sds)


def sweep_design(plan: Plan, confidence: float, band_sds: float) -> Design:
    """The learning-rate grid's looks: sweep.seeds' count, then settle.looks past it (off: one look, on every seed a
    pair's runs have, its seed order long enough for them all)."""
    looks = sweep_looks(plan.looks, len(plan.sweep.seeds))
    most = looks[-1] if plan.looks else len(plan.seeds) + max((len(a.seeds) for a in plan.added), default=0)
    return Design(looks, sweep_seed_order(plan.sweep.seeds, plan.seeds, plan.aa_seeds, most), confidence, band_sds)


def judge_looks(row: Mapping[int, Optional[float]], ref: Mapping[int, Optional[float]], design: Design) -> Look:
    """One comparison under the design: row and ref map each seed they ran to its loss; the looks take the first n
    seeds of design.order. The seeds both ran form a prefix of it (the plan's rule); each look inside that prefix
    is judged in turn until one settles. With fewer paired seeds than the first look, the one look is what they
    have (a smoke build's single seed: n/a); with the design off, one look on every seed both ran."""
    prefix: list[int] = []
    for s in design.order:
        if s not in row or s not in ref:
            break
        prefix.append(s)
    looks = [n for n in design.looks if n <= len(prefix)] if design.on else []
    looks = looks or [len(prefix)]                   # off: once, on every seed both ran
    level = design.level
    c = None
    for n in looks:
        c = compare([row[s] for s in prefix[:n]], [ref[s] for s in prefix[:n]], confidence=level,
                    band_sds=design.band_sds)
        if settles(c):
            return Look(c, tuple(prefix[:n]), True, None, design)
    return Look(c, tuple(prefix[:looks[-1]]), False, design.after(looks[-1]), design)


# ----------------------------------------------------------------------------- the whole procedure, simulated
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


NOISES = ("normal", "t3")            # seed noise: normal, or Student t with 3 degrees of freedom (unit variance)


def _noise(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    if kind == "normal":
        return rng.standard_normal(shape)
    if kind == "t3":
        return rng.standard_t(3, shape) / math.sqrt(3.0)
    raise ValueError(f"noise {kind!r}: allowed are {', '.join(NOISES)}")


def simulate_looks(effect_sd: float, looks: Sequence[int], trials: int, seed: int, *, pair_correlation: float = 0.0,
                   confidence: float = CONFIDENCE, band_sds: float = BAND_SDS, noise: str = "normal",
                   rerun_sd: Optional[float] = None) -> LooksCalibration:
    """The adaptive procedure on simulated row/ref pairs (calibration.simulate's model: sd 1, a shared per-seed
    part correlating a seed's two values, the row's mean effect_sd): each pair is judged at the first look, and only
    a pair still open is judged at the next, on more seeds, until it settles or reaches the last look. `confidence`
    is the level at every look. rerun_sd: each run rerun on another machine (the same seeds, its own part partly
    redrawn, rerun - original of sd rerun_sd), judged at the look the original settled at."""
    looks = tuple(looks)
    cap = looks[-1]
    own_var = 1.0 - pair_correlation
    keep = 1.0 if rerun_sd is None else 1.0 - rerun_sd ** 2 / (2.0 * own_var)
    rng = np.random.default_rng(seed)
    shared_w, own_w, fresh_w = math.sqrt(pair_correlation), math.sqrt(own_var), math.sqrt(max(0.0, 1.0 - keep ** 2))
    counts = dict(better=0, worse=0, no_effect=0, open_at_cap=0, seeds=0, flips=0, contradictions=0)
    settled_codes = np.array([CODE[v] for v in (Verdict.BETTER, Verdict.WORSE, Verdict.NOISE)])
    for start in range(0, trials, CHUNK):
        m = min(CHUNK, trials - start)
        common, own_ref, own_row = (_noise(rng, noise, (m, cap)) for _ in range(3))
        ref = shared_w * common + own_w * own_ref
        row = effect_sd + shared_w * common + own_w * own_row
        if rerun_sd is not None:
            fresh_ref, fresh_row = (_noise(rng, noise, (m, cap)) for _ in range(2))
            again_ref = ref + own_w * ((keep - 1.0) * own_ref + fresh_w * fresh_ref)
            again_row = row + own_w * ((keep - 1.0) * own_row + fresh_w * fresh_row)
        active = np.ones(m, dtype=bool)
        for i, n in enumerate(looks):
            j = judge(row[:, :n], ref[:, :n], confidence=confidence, band_sds=band_sds)
            better, worse = j.code == CODE[Verdict.BETTER], j.code == CODE[Verdict.WORSE]
            done = active & (better | worse | j.no_effect)
            counts["better"] += int((done & better).sum())
            counts["worse"] += int((done & worse).sum())
            counts["no_effect"] += int((done & j.no_effect).sum())
            counts["seeds"] += n * int(done.sum())
            if rerun_sd is not None and done.any():
                a = judge(again_row[done, :n], again_ref[done, :n], confidence=confidence, band_sds=band_sds)
                code = j.code[done]
                counts["flips"] += int((a.unbanded != code).sum())
                counts["contradictions"] += int((np.isin(a.code, settled_codes) & (a.code != code)).sum())
            active &= ~done
            if i == len(looks) - 1:
                counts["open_at_cap"] += int(active.sum())
                counts["seeds"] += n * int(active.sum())
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
    Deterministic:
    the simulation's draws are fixed (CALIBRATION_SEED), the same at every level tried."""
    if len(looks) < 2:
        return confidence
    levels = []
    for noise in NOISES:
        for rho in CALIBRATION_CORRELATIONS:
            target = miscall(looks[:1], confidence, band_sds, rho, noise=noise)
            lo, hi = confidence, 0.9995
            if miscall(looks, lo, band_sds, rho, noise=noise) <= target:
                levels.append(lo)
                continue
            for _ in range(11):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if miscall(looks, mid, band_sds, rho, noise=noise) <= target else (mid, hi)
            levels.append(hi)
    return min(0.9995, math.ceil(max(levels) * 1000.0 - 1e-9) / 1000.0)
