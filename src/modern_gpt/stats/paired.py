"""Spread-aware verdicts over seeds (pure functions; the t distribution from scipy.stats).

The rule: "Three seeds, and report the spread. If your effect is smaller than the
spread, you do not have an effect." The spread is a threshold that does not grow with
the number of seeds: SPREAD_SDS pooled seed sds, what three seeds of one row typically
span. Losses are lower-is-better; a seed whose value is None, NaN or +/-inf counts as
diverged: it is excluded from every statistic but always counted and shown, never
silently dropped. compare() decides one comparison; stats.calibration judges many at
once by the same rule, to measure how often the rule is wrong (its docstring says why the
rule's arithmetic is written twice, and which test holds the two equal).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from statistics import NormalDist
from typing import Optional, Sequence


from ..config.sections import BAND_SDS, CONFIDENCE


class Verdict(StrEnum):
    """A comparison's outcome, a value (its text is what the CSV and metrics hold); verdict_text() words it."""
    BETTER = "better"
    WORSE = "worse"
    NOISE = "noise"
    BORDERLINE = "borderline"
    NA = "n/a (1 seed)"


class NoiseKind(StrEnum):
    """The two kinds of noise: the (2 x confidence - 1) interval inside +- the spread (two one-sided tests), or not."""
    NO_EFFECT = "no effect larger than the spread"
    NOT_SHOWN = "not shown either way"


# The seed spread, in pooled seed sds of the two rows: d2(3) = 1.693, the expected range of three seeds of one
# row. A fixed multiple, so that more seeds sharpen the verdict instead of widening the spread they must clear.
SPREAD_SDS = 1.69
NO_EFFECT, NOT_SHOWN = NoiseKind.NO_EFFECT, NoiseKind.NOT_SHOWN
SEEDS_CAP = 100
SPREAD_WORDS = "smaller than the seed-to-seed spread"
# The borderline band: BAND_SDS (config/sections.py; report.borderline) × the pooled seed sd of the two rows compared,
# `band_sds` where it goes into compare() and judge(), `band_loss` (in loss units) where it comes out.
# calibration.simulate() sizes it with SPREAD_SDS for 5 seeds (tests/test_stats.py): at calibration.RERUN_SD at most
# 5% of settled verdicts flip on a rerun at any effect size and 1% are contradicted, while A/A stays under 1% and
# 3-sigma effects are found 78-88% of the time or more.
_RULE = (
    "A change is called better or worse only when its mean paired effect over seeds (row minus reference, lower "
    "loss is better) is larger in size than the seed spread ({sds:g} × the pooled seed sd of the two rows, what "
    "three seeds of one row typically span) and its {ci} paired t-interval excludes zero; anything else is noise: "
    "\"" + NO_EFFECT + "\" when the {eq} interval lies inside ± the spread, \"" + NOT_SHOWN + "\" otherwise. "
    "A row whose smaller margin (how far the effect clears the spread, or the interval's nearer end clears zero) "
    "lies within the band is borderline."
)


def pct(level: float) -> str:
    """A level as the reports print it: '95%', '98.9%' (a calibrated level keeps its digit)."""
    return f"{100.0 * level:.4g}%"


def rule(confidence: float = CONFIDENCE) -> str:
    """RULE at another confidence: the t-interval's, and the (2 x confidence - 1) interval of the noise kinds."""
    return _RULE.format(sds=SPREAD_SDS, ci=pct(confidence), eq=pct(2.0 * confidence - 1.0))


RULE = rule()
SEEDS_NEEDED_METHOD = (
    "Seeds needed: the smallest total seed count n (above the seeds already run, at most "
    f"{SEEDS_CAP}) at which an effect of the observed size would clear both tests by more than the band if the "
    f"noise stays as observed: |effect| - band > {SPREAD_SDS:g} × sigma (the spread; sigma = pooled sd of the two "
    "rows) and t(1-alpha/2, n-1) * sd_diff / sqrt(n) < |effect| - band. The spread does not depend on n, so an "
    "effect that does not clear it by the band never will: no number of seeds would make it a change (more "
    "seeds may still show that there is no effect larger than the spread)."
)


# ----------------------------------------------------------------------------- t quantile
@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student-t quantile: the t with P(T <= t) = p, for 0 < p < 1 and any df > 0 (inf: the normal)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df > 0:
        raise ValueError(f"df must be > 0, got {df}")
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    from scipy.stats import t as student_t       # here: what reads params (the plan's check of the levels) needs no scipy
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


def summarize(values: Sequence[Optional[float]]) -> Summary:
    """Summarize one row's per-seed values; non-finite seeds are counted, not used."""
    xs = [float(v) for v in values if _finite(v)]
    mean, sd = _mean_sd(xs)
    return Summary(n=len(values), n_finite=len(xs), n_diverged=len(values) - len(xs),
                   mean=mean, sd=sd, range=(max(xs) - min(xs)) if xs else None)


def pooled_sd(*rows: Summary) -> Optional[float]:
    """The pooled sd of rows, each over its own finite seeds: sqrt(sum (n_i - 1) sd_i^2 / sum (n_i - 1)); None when
    no row has two finite seeds."""
    rows = tuple(r for r in rows if r.sd is not None)
    dof = sum(r.n_finite - 1 for r in rows)
    return math.sqrt(sum((r.n_finite - 1) * r.sd ** 2 for r in rows) / dof) if dof else None


# ----------------------------------------------------------------------------- seeds needed
def seeds_needed(effect: float, sigma: float, sd_diff: float, *, n_start: int = 2,
                 confidence: float = CONFIDENCE, cap: int = SEEDS_CAP, band_loss: float = 0.0) -> Optional[int]:
    """Smallest total seed count n in [n_start, cap] that would resolve |effect| clear of the band.

    Needs both |effect| - band > SPREAD_SDS * sigma (spread test; the same for every n) and
    t(1-alpha/2, n-1) * sd_diff / sqrt(n) < |effect| - band (interval test; shrinks with n);
    `band_loss` is the band in loss units (compare()'s band_sds x pooled sd). Returns None when the spread
    test fails (no n helps) or no n up to the cap passes the interval test. A bigger |effect| never needs more seeds.
    See SEEDS_NEEDED_METHOD.
    """
    size = abs(effect) - band_loss
    if abs(effect) == 0.0 or not math.isfinite(size) or size <= SPREAD_SDS * sigma:
        return None
    q = 0.5 + confidence / 2.0
    clears = lambda n: t_quantile(q, n - 1) * sd_diff / math.sqrt(n) < size      # noqa: E731
    lo, hi = max(2, n_start), cap
    if lo > hi or not clears(hi):
        return None
    while lo < hi:                           # t(q, n-1) / sqrt(n) falls with n: bisect for the first n that clears
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if clears(mid) else (mid + 1, hi)
    return lo


# ----------------------------------------------------------------------------- comparisons
@dataclass(frozen=True)
class Comparison:
    """A row against its reference, paired by seed (effect = row - ref; < 0 is better)."""
    n_pairs: int
    effect: Optional[float]         # mean of paired differences; None with no pair
    spread: Optional[float]         # the threshold: SPREAD_SDS x pooled seed sd of the two rows
    range: Optional[float]          # larger of the two rows' max - min over finite values (shown, not judged)
    sd_diff: Optional[float]        # sd of the paired differences (ddof=1)
    ci_low: Optional[float]         # paired t interval for the effect
    ci_high: Optional[float]
    verdict: Verdict
    unbanded: Verdict               # the verdict without the band: BETTER, WORSE or NOISE (or NA)
    noise_kind: Optional[NoiseKind]  # for a noise verdict, else None
    seeds_needed: Optional[int]     # 0 resolved; n total seeds; None see compare()
    margin_spread: Optional[float]  # |effect| - spread: > 0 clears the spread test
    margin_interval: Optional[float]  # |effect| - CI half-width: > 0 the interval excludes zero
    band_loss: Optional[float]      # borderline half-width in loss units (band_sds x pooled seed sd)
    n_diverged_row: int
    n_diverged_ref: int
    confidence: float
    row: Summary
    ref: Summary


def compare(row: Sequence[Optional[float]], ref: Sequence[Optional[float]], *,
            confidence: float = CONFIDENCE, band_sds: float = BAND_SDS) -> Comparison:
    """Compare per-seed losses of `row` with `ref` (index i = seed i) under RULE.

    Only seeds finite in both rows are paired; diverged seeds are counted per row. The
    spread is SPREAD_SDS x the pooled seed sd of the two rows (each over its finite seeds).
    Two margins: spread (|effect| - spread) and interval (|effect| - the t-interval's
    half-width, i.e. how far its nearer end lies from zero). Verdict: "better"/"worse" iff
    both are > 0, "noise" otherwise; but "borderline" when the smaller margin lies within
    +-band_sds x pooled sd of the two rows, band_loss (a rerun on another machine could flip it);
    Verdict.NA with fewer than two finite pairs. A noise verdict has a kind: NO_EFFECT when
    the (2 x confidence - 1) paired interval lies inside +- the spread (an equivalence test:
    any effect is smaller than the spread), NOT_SHOWN otherwise.
    Zero variance of the differences: the interval collapses to the point `effect`, so
    a constant nonzero shift excludes zero and the spread test alone decides; an A/A
    with identical values has effect 0 and is therefore always "noise".
    seeds_needed: 0 if better/worse; for "noise" and "borderline", the total seed count
    from seeds_needed() with sigma = pooled sd, n_start = n_pairs + 1 and band_loss;
    None if no count up to SEEDS_CAP would do (always so for NO_EFFECT noise), or if
    fewer than two pairs exist.
    """
    if len(row) != len(ref):
        raise ValueError(f"row has {len(row)} seeds, ref has {len(ref)}")
    s_row, s_ref = summarize(row), summarize(ref)
    diffs = [float(a) - float(b) for a, b in zip(row, ref) if _finite(a) and _finite(b)]
    effect, sd_diff = _mean_sd(diffs)
    pooled = pooled_sd(s_row, s_ref)
    ranges = [s.range for s in (s_row, s_ref) if s.range is not None]
    seen = dict(n_pairs=len(diffs), effect=effect, spread=None if pooled is None else SPREAD_SDS * pooled,
                range=max(ranges, default=None), sd_diff=sd_diff, n_diverged_row=s_row.n_diverged,
                n_diverged_ref=s_ref.n_diverged, confidence=confidence, row=s_row, ref=s_ref)
    if sd_diff is None:                      # fewer than two pairs: no interval, no verdict
        return Comparison(**seen, ci_low=None, ci_high=None, verdict=Verdict.NA, unbanded=Verdict.NA,
                          noise_kind=None, seeds_needed=None, margin_spread=None, margin_interval=None, band_loss=None)
    n, size, spread, band_loss = len(diffs), abs(effect), seen["spread"], band_sds * pooled
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * sd_diff / math.sqrt(n)      # the paired t-interval's
    m_spread, m_interval = size - spread, size - half
    margin = min(m_spread, m_interval)
    unbanded = (Verdict.BETTER if effect < 0 else Verdict.WORSE) if margin > 0.0 else Verdict.NOISE
    verdict = Verdict.BORDERLINE if abs(margin) < band_loss else unbanded
    kind = None
    if verdict == Verdict.NOISE:             # the (2 confidence - 1) interval inside +- the spread: no such effect
        half_eq = t_quantile(confidence, n - 1) * sd_diff / math.sqrt(n)
        kind = NO_EFFECT if size + half_eq <= spread else NOT_SHOWN
    needed = 0 if verdict in (Verdict.BETTER, Verdict.WORSE) else seeds_needed(
        effect, pooled, sd_diff, n_start=n + 1, confidence=confidence, band_loss=band_loss)
    return Comparison(**seen, ci_low=effect - half, ci_high=effect + half, verdict=verdict, unbanded=unbanded,
                      noise_kind=kind, seeds_needed=needed, margin_spread=m_spread, margin_interval=m_interval,
                      band_loss=band_loss)


def verdict_text(c: Optional[Comparison]) -> str:
    """The verdict as every front end prints it: 'better', 'worse', 'noise (no effect larger than the spread)',
    'noise (not shown either way; ~8 seeds)', 'noise (not shown either way; smaller than the seed-to-seed
    spread)', 'noise (not shown either way; over 100 seeds)', 'borderline (~6 seeds)', 'borderline (no larger
    than the seed-to-seed spread)' or 'n/a (1 seed)'; '' with nothing to compare against."""
    if c is None:
        return ""
    # no seed count: the effect does not clear the spread by the band (no n would make it a change), or the cap
    beyond = SPREAD_WORDS if c.margin_spread is None or c.margin_spread <= c.band_loss else f"over {SEEDS_CAP} seeds"
    if c.verdict == Verdict.NOISE:
        if c.noise_kind == NO_EFFECT:
            return f"noise ({NO_EFFECT})"
        return f"noise ({NOT_SHOWN}; " + (f"~{c.seeds_needed} seeds)" if c.seeds_needed else f"{beyond})")
    if c.verdict == Verdict.BORDERLINE:
        return (f"borderline (~{c.seeds_needed} seeds)" if c.seeds_needed
                else "borderline (" + ("no larger than the seed-to-seed spread" if beyond == SPREAD_WORDS
                                       else beyond) + ")")
    return c.verdict
