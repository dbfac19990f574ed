"""Spread-aware verdicts over seeds (pure functions; the t distribution from scipy.stats).

The rule: "Three seeds, and report the spread. If your effect is smaller than the
spread, you do not have an effect." Losses are lower-is-better; a seed whose value
is None, NaN or +/-inf counts as diverged: it is excluded from every statistic but
always counted and shown, never silently dropped.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Optional, Sequence

from scipy.stats import t as student_t

NA_VERDICT = "n/a (1 seed)"
RULE = (
    "A change is called better or worse only when its mean paired effect over seeds "
    "(row minus reference, lower loss is better) is larger in size than the seed spread "
    "(the larger max-min range of the two rows) and its 95% paired t-interval excludes "
    "zero; anything else is noise."
)
SEEDS_NEEDED_METHOD = (
    "Seeds needed: the smallest total seed count n (above the seeds already run, at most "
    "100) at which an effect of the observed size would pass both tests if the noise stays "
    "as observed: |effect| > E[max of two n-seed ranges] (sigma = pooled sd of the two rows; "
    "expected range of the larger of two independent normal samples, by numerical "
    "integration) and t(1-alpha/2, n-1) * sd_diff / sqrt(n) < |effect|. Because the expected "
    "range grows with n, \"seeds won't resolve\" means that no number of extra seeds would."
)
SEEDS_CAP = 100


# ----------------------------------------------------------------------------- t quantile
def t_cdf(t: float, df: float) -> float:
    """Student-t cumulative distribution function P(T <= t) for df > 0 (scipy.stats)."""
    return float(student_t.cdf(t, df))


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student-t quantile: the t with P(T <= t) = p, for 0 < p < 1 and any df > 0 (inf: the normal)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df > 0:
        raise ValueError(f"df must be > 0, got {df}")
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    return float(student_t.ppf(p, df))


# ----------------------------------------------------------------------------- summaries
def _finite(v) -> bool:
    return v is not None and math.isfinite(v)


def _mean_sd(xs: Sequence[float]) -> tuple[Optional[float], Optional[float]]:
    if not xs:
        return None, None
    mean = math.fsum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None
    return mean, math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


@dataclass(frozen=True)
class Summary:
    """Per-seed values of one row: statistics over the finite values only."""
    n: int                  # seeds run
    n_finite: int
    n_diverged: int         # None / NaN / inf
    mean: Optional[float]   # None only if no seed is finite
    sd: Optional[float]     # sample sd (ddof=1); None with fewer than 2 finite values
    range: Optional[float]  # max - min; 0.0 with one finite value, None with none

    def label(self, digits: int = 4) -> str:
        """'2.4311 ± 0.0123', '2.4311 (1 seed)', '... (1/3 diverged)', '3/3 diverged'."""
        div = f"{self.n_diverged}/{self.n} diverged"
        if self.mean is None:
            return div
        text = f"{self.mean:.{digits}f}"
        text += f" ± {self.sd:.{digits}f}" if self.sd is not None else ""
        if self.n_diverged:
            return f"{text} ({div})"
        return text if self.sd is not None else f"{text} (1 seed)"


def summarize(values: Sequence[Optional[float]]) -> Summary:
    """Summarize one row's per-seed values; non-finite seeds are counted, not used."""
    xs = [float(v) for v in values if _finite(v)]
    mean, sd = _mean_sd(xs)
    return Summary(n=len(values), n_finite=len(xs), n_diverged=len(values) - len(xs),
                   mean=mean, sd=sd, range=(max(xs) - min(xs)) if xs else None)


# ----------------------------------------------------------------------------- expected ranges
@lru_cache(maxsize=None)
def expected_range(n: int, rows: int = 1) -> float:
    """E[max of `rows` independent ranges of n standard-normal draws], in units of sigma.

    rows=1 is the classical d2(n) (1.128 at n=2, 1.693 at 3, 3.078 at 10). Computed by
    the trapezoid rule on F_R(w) = n * integral phi(x) [Phi(x+w) - Phi(x)]^(n-1) dx and
    E[max] = integral_0^inf (1 - F_R(w)^rows) dw. Deterministic, ~1e-6 accurate.
    """
    if n < 2:
        return 0.0
    h, x_lo, x_n, w_n = 0.05, -8.5, 341, 301          # x in [-8.5, 8.5], w in [0, 15]
    cdf = [0.5 * (1.0 + math.erf((x_lo + k * h) / math.sqrt(2.0))) for k in range(x_n + w_n)]
    pdf = [math.exp(-0.5 * (x_lo + k * h) ** 2) / math.sqrt(2.0 * math.pi) for k in range(x_n)]
    total = 0.0
    for j in range(w_n):
        f_r = n * h * sum(pdf[k] * (cdf[k + j] - cdf[k]) ** (n - 1) for k in range(x_n))
        integrand = 1.0 - min(1.0, f_r) ** rows
        total += integrand * (0.5 if j == 0 else 1.0)
    return total * h


# ----------------------------------------------------------------------------- comparisons
def seeds_needed(effect: float, sigma: float, sd_diff: float, *, n_start: int = 2,
                 confidence: float = 0.95, cap: int = SEEDS_CAP) -> Optional[int]:
    """Smallest total seed count n in [n_start, cap] that would resolve |effect|.

    Needs both |effect| > expected_range(n, rows=2) * sigma (spread test; grows with n)
    and t(1-alpha/2, n-1) * sd_diff / sqrt(n) < |effect| (interval test; shrinks with n).
    Returns None when no n in range passes (the spread outgrows the effect first, or
    the cap is reached). A bigger |effect| never needs more seeds. See SEEDS_NEEDED_METHOD.
    """
    size = abs(effect)
    if size == 0.0 or not math.isfinite(size):
        return None
    q = 0.5 + confidence / 2.0
    for n in range(max(2, n_start), cap + 1):
        if size <= expected_range(n, 2) * sigma:
            return None                      # the expected spread only grows from here
        if t_quantile(q, n - 1) * sd_diff / math.sqrt(n) < size:
            return n
    return None


@dataclass(frozen=True)
class Comparison:
    """A row against its reference, paired by seed (effect = row - ref; < 0 is better)."""
    n_pairs: int
    effect: Optional[float]         # mean of paired differences; None with no pair
    spread: Optional[float]         # larger of the two rows' ranges over finite values
    sd_diff: Optional[float]        # sd of the paired differences (ddof=1)
    ci_low: Optional[float]         # paired t interval for the effect
    ci_high: Optional[float]
    verdict: str                    # "better" | "worse" | "noise" | NA_VERDICT
    seeds_needed: Optional[int]     # 0 resolved; n total seeds; None see compare()
    n_diverged_row: int
    n_diverged_ref: int
    confidence: float
    row: Summary
    ref: Summary


def compare(row: Sequence[Optional[float]], ref: Sequence[Optional[float]], *,
            confidence: float = 0.95) -> Comparison:
    """Compare per-seed losses of `row` with `ref` (index i = seed i) under RULE.

    Only seeds finite in both rows are paired; diverged seeds are counted per row.
    Verdict: "better"/"worse" iff |effect| > spread and the paired t-interval excludes
    zero; "noise" otherwise; NA_VERDICT with fewer than two finite pairs.
    Zero variance of the differences: the interval collapses to the point `effect`, so
    a constant nonzero shift excludes zero and the spread test alone decides; an A/A
    with identical values has effect 0 and is therefore always "noise".
    seeds_needed: 0 if already better/worse; for "noise", the total seed count from
    seeds_needed() with sigma = pooled sd of the two rows and n_start = n_pairs + 1;
    None if no count up to SEEDS_CAP would do, or if fewer than two pairs exist.
    """
    if len(row) != len(ref):
        raise ValueError(f"row has {len(row)} seeds, ref has {len(ref)}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    s_row, s_ref = summarize(row), summarize(ref)
    diffs = [float(a) - float(b) for a, b in zip(row, ref) if _finite(a) and _finite(b)]
    effect, sd_diff = _mean_sd(diffs)
    spread = None
    if s_row.range is not None or s_ref.range is not None:
        spread = max(r for r in (s_row.range, s_ref.range) if r is not None)
    ci_low = ci_high = needed = None
    if len(diffs) < 2:
        verdict = NA_VERDICT
    else:
        half = t_quantile(0.5 + confidence / 2.0, len(diffs) - 1) * sd_diff / math.sqrt(len(diffs))
        ci_low, ci_high = effect - half, effect + half
        excludes_zero = ci_low > 0.0 or ci_high < 0.0
        if abs(effect) > spread and excludes_zero:
            verdict, needed = ("better" if effect < 0 else "worse"), 0
        else:
            verdict = "noise"
            dof = (s_row.n_finite - 1) + (s_ref.n_finite - 1)
            pooled = math.sqrt(((s_row.n_finite - 1) * s_row.sd ** 2
                                + (s_ref.n_finite - 1) * s_ref.sd ** 2) / dof)
            needed = seeds_needed(effect, pooled, sd_diff, n_start=len(diffs) + 1,
                                  confidence=confidence)
    return Comparison(n_pairs=len(diffs), effect=effect, spread=spread, sd_diff=sd_diff,
                      ci_low=ci_low, ci_high=ci_high, verdict=verdict, seeds_needed=needed,
                      n_diverged_row=s_row.n_diverged, n_diverged_ref=s_ref.n_diverged,
                      confidence=confidence, row=s_row, ref=s_ref)


# ----------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class Calibration:
    """Verdict counts of simulate(); rate = share of trials called better or worse."""
    trials: int
    better: int
    worse: int

    @property
    def rate(self) -> float:
        return (self.better + self.worse) / self.trials


def simulate(effect_sd: float, n_seeds: int, trials: int, seed: int, *,
             pair_correlation: float = 0.0, confidence: float = 0.95) -> Calibration:
    """Rate of better/worse verdicts for simulated row/ref pairs, deterministic from seed.

    Each seed's loss is normal with sd 1 (sigma); ref has mean 0 and row mean effect_sd
    (positive = row worse). A shared per-seed component gives the two values of a seed
    correlation pair_correlation (same batches), leaving each row's sd at 1.
    """
    if not 0.0 <= pair_correlation <= 1.0:
        raise ValueError("pair_correlation must be in [0, 1]")
    rng = random.Random(seed)
    shared_w, own_w = math.sqrt(pair_correlation), math.sqrt(1.0 - pair_correlation)
    better = worse = 0
    for _ in range(trials):
        common = [rng.gauss(0.0, 1.0) for _ in range(n_seeds)]
        ref = [shared_w * c + own_w * rng.gauss(0.0, 1.0) for c in common]
        row = [effect_sd + shared_w * c + own_w * rng.gauss(0.0, 1.0) for c in common]
        verdict = compare(row, ref, confidence=confidence).verdict
        better += verdict == "better"
        worse += verdict == "worse"
    return Calibration(trials=trials, better=better, worse=worse)


def verdict_text(c: Optional[Comparison]) -> str:
    """The verdict as every front end prints it: 'better', 'worse', 'noise (~8 seeds)',
    "noise (seeds won't resolve)" or 'n/a (1 seed)'; '' with nothing to compare against."""
    if c is None:
        return ""
    if c.verdict == "noise":
        return f"noise (~{c.seeds_needed} seeds)" if c.seeds_needed else "noise (seeds won't resolve)"
    return c.verdict
