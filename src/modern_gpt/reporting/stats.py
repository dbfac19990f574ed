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
    "zero; anything else is noise. A row whose smaller margin (how far the effect clears "
    "the spread, or the interval's nearer end clears zero) lies within the band is borderline."
)
SEEDS_NEEDED_METHOD = (
    "Seeds needed: the smallest total seed count n (above the seeds already run, at most "
    "100) at which an effect of the observed size would clear both tests by more than the band "
    "if the noise stays as observed: |effect| - band > E[max of two n-seed ranges] (sigma = "
    "pooled sd of the two rows; expected range of the larger of two independent normal samples, "
    "by numerical integration) and t(1-alpha/2, n-1) * sd_diff / sqrt(n) < |effect| - band. The "
    "expected range grows with n, so an effect smaller than the seed-to-seed spread stays so: "
    "no number of seeds would make it a change."
)
SEEDS_CAP = 100
SPREAD_WORDS = "smaller than the seed-to-seed spread"
# The borderline band, in units of the pooled seed sd of the two rows compared: calibrated by simulate()
# against RERUN_SD (tests/test_stats.py: outside the band a rerun flips at most 5% of verdicts).
BAND = 0.5
# A rerun on another machine, measured: the sd of (rerun - original) final val loss of one run, in units of
# the seed sd of its row (README: "Verdicts another machine reproduces"; the report's rerun check).
RERUN_SD = 0.5


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
                 confidence: float = 0.95, cap: int = SEEDS_CAP, band: float = 0.0) -> Optional[int]:
    """Smallest total seed count n in [n_start, cap] that would resolve |effect| clear of the band.

    Needs both |effect| - band > expected_range(n, rows=2) * sigma (spread test; grows with
    n) and t(1-alpha/2, n-1) * sd_diff / sqrt(n) < |effect| - band (interval test; shrinks
    with n); `band` is in loss units. Returns None when no n in range passes (the spread
    outgrows the effect first, or the cap is reached). A bigger |effect| never needs more
    seeds. See SEEDS_NEEDED_METHOD.
    """
    size = abs(effect) - band
    if abs(effect) == 0.0 or not math.isfinite(size) or size <= 0.0:
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
    verdict: str                    # "better" | "worse" | "noise" | "borderline" | NA_VERDICT
    seeds_needed: Optional[int]     # 0 resolved; n total seeds; None see compare()
    margin_spread: Optional[float]  # |effect| - spread: > 0 clears the spread test
    margin_interval: Optional[float]  # |effect| - CI half-width: > 0 the interval excludes zero
    band: Optional[float]           # borderline half-width in loss units (band x pooled seed sd)
    n_diverged_row: int
    n_diverged_ref: int
    confidence: float
    row: Summary
    ref: Summary

    @property
    def unbanded(self) -> str:
        """The verdict without the band: better, worse or noise (or NA_VERDICT)."""
        if self.margin_spread is None:
            return self.verdict
        if min(self.margin_spread, self.margin_interval) > 0.0:
            return "better" if self.effect < 0 else "worse"
        return "noise"


def compare(row: Sequence[Optional[float]], ref: Sequence[Optional[float]], *,
            confidence: float = 0.95, band: float = BAND) -> Comparison:
    """Compare per-seed losses of `row` with `ref` (index i = seed i) under RULE.

    Only seeds finite in both rows are paired; diverged seeds are counted per row.
    Two margins: spread (|effect| - spread) and interval (|effect| - the t-interval's
    half-width, i.e. how far its nearer end lies from zero). Verdict: "better"/"worse" iff
    both are > 0, "noise" otherwise; but "borderline" when the smaller margin lies within
    +-band x pooled sd of the two rows (a rerun on another machine could flip it);
    NA_VERDICT with fewer than two finite pairs.
    Zero variance of the differences: the interval collapses to the point `effect`, so
    a constant nonzero shift excludes zero and the spread test alone decides; an A/A
    with identical values has effect 0 and is therefore always "noise".
    seeds_needed: 0 if better/worse; for "noise" and "borderline", the total seed count
    from seeds_needed() with sigma = pooled sd, n_start = n_pairs + 1 and the band;
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
    if not band >= 0.0:
        raise ValueError(f"band must be >= 0, got {band}")
    ci_low = ci_high = needed = m_spread = m_interval = width = None
    if len(diffs) < 2:
        verdict = NA_VERDICT
    else:
        half = t_quantile(0.5 + confidence / 2.0, len(diffs) - 1) * sd_diff / math.sqrt(len(diffs))
        ci_low, ci_high = effect - half, effect + half
        m_spread, m_interval = abs(effect) - spread, abs(effect) - half
        dof = (s_row.n_finite - 1) + (s_ref.n_finite - 1)
        pooled = math.sqrt(((s_row.n_finite - 1) * s_row.sd ** 2 + (s_ref.n_finite - 1) * s_ref.sd ** 2) / dof)
        width = band * pooled
        margin = min(m_spread, m_interval)
        if abs(margin) < width:
            verdict = "borderline"
        elif margin > 0.0:
            verdict = "better" if effect < 0 else "worse"
        else:
            verdict = "noise"
        needed = 0 if verdict in ("better", "worse") else seeds_needed(
            effect, pooled, sd_diff, n_start=len(diffs) + 1, confidence=confidence, band=width)
    return Comparison(n_pairs=len(diffs), effect=effect, spread=spread, sd_diff=sd_diff,
                      ci_low=ci_low, ci_high=ci_high, verdict=verdict, seeds_needed=needed,
                      margin_spread=m_spread, margin_interval=m_interval, band=width,
                      n_diverged_row=s_row.n_diverged, n_diverged_ref=s_ref.n_diverged,
                      confidence=confidence, row=s_row, ref=s_ref)


# ----------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class Calibration:
    """Verdict counts of simulate(); rate = share of trials called better or worse."""
    trials: int
    better: int
    worse: int
    borderline: int = 0
    settled: int = 0        # trials called better, worse or noise (outside the band)
    flips: int = 0          # ... whose rerun, without a band, gave another of those three

    @property
    def rate(self) -> float:
        return (self.better + self.worse) / self.trials

    @property
    def flip_rate(self) -> float:
        return self.flips / self.settled if self.settled else 0.0


def simulate(effect_sd: float, n_seeds: int, trials: int, seed: int, *,
             pair_correlation: float = 0.0, confidence: float = 0.95, band: float = BAND,
             rerun_sd: Optional[float] = None) -> Calibration:
    """Verdicts for simulated row/ref pairs, and how often a rerun flips them; deterministic from seed.

    Each seed's loss is normal with sd 1 (sigma); ref has mean 0 and row mean effect_sd
    (positive = row worse). A shared per-seed component gives the two values of a seed
    correlation pair_correlation (same batches), leaving each row's sd at 1.
    rerun_sd: a rerun of every run on another machine, as measured: the same seeds and
    batches, each run's own component partly redrawn so that rerun - original has sd
    rerun_sd (each row's sd stays 1). flips counts the settled verdicts (outside the band)
    whose rerun's verdict without a band differs.
    """
    if not 0.0 <= pair_correlation <= 1.0:
        raise ValueError("pair_correlation must be in [0, 1]")
    own_var = 1.0 - pair_correlation
    keep = 1.0
    if rerun_sd is not None:
        if not 0.0 <= rerun_sd ** 2 <= 2.0 * own_var:
            raise ValueError(f"rerun_sd={rerun_sd}: must be in [0, sqrt(2 (1 - pair_correlation))]")
        keep = 1.0 - rerun_sd ** 2 / (2.0 * own_var)        # corr(own, rerun's own)
    rng = random.Random(seed)
    shared_w, own_w, fresh_w = math.sqrt(pair_correlation), math.sqrt(own_var), math.sqrt(1.0 - keep ** 2)
    counts = dict(better=0, worse=0, borderline=0, settled=0, flips=0)
    for _ in range(trials):
        common = [rng.gauss(0.0, 1.0) for _ in range(n_seeds)]
        own_ref = [rng.gauss(0.0, 1.0) for _ in range(n_seeds)]
        own_row = [rng.gauss(0.0, 1.0) for _ in range(n_seeds)]
        ref = [shared_w * c + own_w * o for c, o in zip(common, own_ref)]
        row = [effect_sd + shared_w * c + own_w * o for c, o in zip(common, own_row)]
        verdict = compare(row, ref, confidence=confidence, band=band).verdict
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict in ("better", "worse", "noise"):
            counts["settled"] += 1
            if rerun_sd is not None:
                again = [[v + own_w * (keep - 1.0) * o + own_w * fresh_w * rng.gauss(0.0, 1.0)
                          for v, o in zip(values, own)] for values, own in ((row, own_row), (ref, own_ref))]
                counts["flips"] += compare(*again, confidence=confidence, band=band).unbanded != verdict
    return Calibration(trials=trials, better=counts["better"], worse=counts["worse"],
                       borderline=counts["borderline"], settled=counts["settled"], flips=counts["flips"])


def verdict_text(c: Optional[Comparison]) -> str:
    """The verdict as every front end prints it: 'better', 'worse', 'noise (~8 seeds)',
    'noise (smaller than the seed-to-seed spread)', 'borderline (~6 seeds)',
    'borderline (no larger than the seed-to-seed spread)' or 'n/a (1 seed)'; '' with nothing
    to compare against."""
    if c is None:
        return ""
    if c.verdict == "noise":
        return f"noise (~{c.seeds_needed} seeds)" if c.seeds_needed else f"noise ({SPREAD_WORDS})"
    if c.verdict == "borderline":
        return (f"borderline (~{c.seeds_needed} seeds)" if c.seeds_needed
                else "borderline (no larger than the seed-to-seed spread)")
    return c.verdict
