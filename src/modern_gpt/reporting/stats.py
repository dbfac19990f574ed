"""Spread-aware verdicts over seeds (pure functions; numpy, and the t distribution from scipy.stats).

The rule: "Three seeds, and report the spread. If your effect is smaller than the
spread, you do not have an effect." The spread is a threshold that does not grow with
the number of seeds: SPREAD_SDS pooled seed sds, what three seeds of one row typically
span. Losses are lower-is-better; a seed whose value is None, NaN or +/-inf counts as
diverged: it is excluded from every statistic but always counted and shown, never
silently dropped. judge() decides many comparisons at once; compare() is judge() on one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from statistics import NormalDist
from typing import Optional, Sequence

import numpy as np
from scipy.stats import t as student_t

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


NA_VERDICT = Verdict.NA
VERDICTS = tuple(Verdict)                                # judge()'s codes index this
BETTER, WORSE, NOISE, BORDERLINE, NA = range(len(VERDICTS))
# The seed spread, in pooled seed sds of the two rows: d2(3) = 1.693, the expected range of three seeds of one
# row. A fixed multiple, so that more seeds sharpen the verdict instead of widening the spread they must clear.
SPREAD_SDS = 1.69
NO_EFFECT, NOT_SHOWN = NoiseKind.NO_EFFECT, NoiseKind.NOT_SHOWN
SEEDS_CAP = 100
SPREAD_WORDS = "smaller than the seed-to-seed spread"
# The borderline band, in units of the pooled seed sd of the two rows compared. simulate() sizes it with SPREAD_SDS
# for 5 seeds (tests/test_stats.py): at RERUN_SD at most 5% of settled verdicts flip on a rerun at any effect
# size and 1% are contradicted, while A/A stays under 1% and 3-sigma effects are found 78-88% of the time or more.
BAND = 0.4
# A rerun on another machine, measured here: the rms of (rerun - original) final val loss of one run, over
# the 7 ladder rows x 5 seeds, one thread each, with every initial weight perturbed by 1e-7 relative, in units
# of the pooled seed sd of the rows (0.00072 / 0.00544).
RERUN_SD = 0.13
# The same measure before, at two threads and 3 seeds (0.00139 / 0.00464): the tests hold the rule to it too.
RERUN_SD_EARLIER = 0.30
_RULE = (
    "A change is called better or worse only when its mean paired effect over seeds (row minus reference, lower "
    "loss is better) is larger in size than the seed spread ({sds:g} × the pooled seed sd of the two rows, what "
    "three seeds of one row typically span) and its {ci} paired t-interval excludes zero; anything else is noise: "
    "\"" + NO_EFFECT + "\" when the {eq} interval lies inside ± the spread, \"" + NOT_SHOWN + "\" otherwise. "
    "A row whose smaller margin (how far the effect clears the spread, or the interval's nearer end clears zero) "
    "lies within the band is borderline."
)


def rule(confidence: float = 0.95) -> str:
    """RULE at another confidence: the t-interval's, and the (2 x confidence - 1) interval of the noise kinds."""
    return _RULE.format(sds=SPREAD_SDS, ci=f"{confidence:.0%}", eq=f"{2.0 * confidence - 1.0:.0%}")


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


# ----------------------------------------------------------------------------- seeds needed
def seeds_needed(effect: float, sigma: float, sd_diff: float, *, n_start: int = 2,
                 confidence: float = 0.95, cap: int = SEEDS_CAP, band: float = 0.0) -> Optional[int]:
    """Smallest total seed count n in [n_start, cap] that would resolve |effect| clear of the band.

    Needs both |effect| - band > SPREAD_SDS * sigma (spread test; the same for every n) and
    t(1-alpha/2, n-1) * sd_diff / sqrt(n) < |effect| - band (interval test; shrinks with n);
    `band` is in loss units. Returns None when the spread test fails (no n helps) or no n up
    to the cap passes the interval test. A bigger |effect| never needs more seeds.
    See SEEDS_NEEDED_METHOD.
    """
    size = abs(effect) - band
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


# ----------------------------------------------------------------------------- the rule, on arrays
@dataclass(frozen=True, eq=False)
class Judged:
    """judge()'s numbers: one entry per comparison (NaN where undefined); compare() reads one of them."""
    n_pairs: np.ndarray          # seeds finite in both rows
    effect: np.ndarray           # mean paired difference row - ref (NaN with no pair)
    sd_diff: np.ndarray          # sd of the paired differences (NaN with fewer than two pairs)
    half: np.ndarray             # half-width of the paired t interval
    pooled: np.ndarray           # pooled seed sd of the two rows, each over its own finite seeds
    spread: np.ndarray           # SPREAD_SDS x pooled
    range: np.ndarray            # the larger of the two rows' max - min (shown, not used by the rule)
    margin_spread: np.ndarray    # |effect| - spread
    margin_interval: np.ndarray  # |effect| - half
    width: np.ndarray            # the band in loss units: band x pooled
    code: np.ndarray             # index into VERDICTS
    unbanded: np.ndarray         # the code without the band: BETTER, WORSE, NOISE or NA
    no_effect: np.ndarray        # noise whose (2 x confidence - 1) interval lies inside +- the spread


def _rows_stats(x: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per comparison: finite count, sum of squared deviations from the mean, and range (NaN with none)."""
    n = ok.sum(axis=1)
    mean = np.where(ok, x, 0.0).sum(axis=1) / np.maximum(n, 1)
    ss = (np.where(ok, x - mean[:, None], 0.0) ** 2).sum(axis=1)
    rng = np.where(ok, x, -np.inf).max(axis=1) - np.where(ok, x, np.inf).min(axis=1)
    return n, ss, np.where(n > 0, rng, np.nan)


def _per_df(p: float, n: np.ndarray) -> np.ndarray:
    """t_quantile(p, n - 1) for each count n >= 2 (NaN below), one scipy call per distinct n."""
    out = np.full(n.shape, np.nan)
    for k in np.unique(n[n >= 2]):
        out[n == k] = t_quantile(p, int(k) - 1)
    return out


def judge(row, ref, *, confidence: float = 0.95, band: float = BAND) -> Judged:
    """RULE for many comparisons at once: row and ref are (comparisons, seeds) arrays, seed i paired with seed i;
    a non-finite value (NaN, inf) is a diverged seed. See compare() for what each verdict means."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not band >= 0.0:
        raise ValueError(f"band must be >= 0, got {band}")
    row, ref = np.atleast_2d(np.asarray(row, dtype=float)), np.atleast_2d(np.asarray(ref, dtype=float))
    if row.shape != ref.shape:
        raise ValueError(f"row has shape {row.shape}, ref has {ref.shape}")
    ok_row, ok_ref = np.isfinite(row), np.isfinite(ref)
    both = ok_row & ok_ref
    n_row, ss_row, range_row = _rows_stats(row, ok_row)
    n_ref, ss_ref, range_ref = _rows_stats(ref, ok_ref)
    with np.errstate(invalid="ignore", divide="ignore"):     # undefined entries come out NaN, as documented
        diffs = np.where(both, row - ref, 0.0)
        n = both.sum(axis=1)
        effect = np.where(n > 0, diffs.sum(axis=1) / n, np.nan)
        sd_diff = np.sqrt((np.where(both, diffs - effect[:, None], 0.0) ** 2).sum(axis=1) / (n - 1))
        sd_diff = np.where(n >= 2, sd_diff, np.nan)
        dof = np.maximum(n_row - 1, 0) + np.maximum(n_ref - 1, 0)
        pooled = np.where(dof > 0, np.sqrt((ss_row + ss_ref) / dof), np.nan)
        root_n = np.sqrt(n)
        half = _per_df(0.5 + confidence / 2.0, n) * sd_diff / root_n
        half_eq = _per_df(confidence, n) * sd_diff / root_n            # of the (2 confidence - 1) interval
    spread = SPREAD_SDS * pooled
    size = np.abs(effect)
    m_spread, m_interval = size - spread, size - half
    width = band * pooled
    margin = np.minimum(m_spread, m_interval)
    na = n < 2
    called = np.where(effect < 0, BETTER, WORSE)
    unbanded = np.where(na, NA, np.where(margin > 0.0, called, NOISE))
    code = np.where(~na & (np.abs(margin) < width), BORDERLINE, unbanded)
    no_effect = (code == NOISE) & (size + half_eq <= spread)
    return Judged(n_pairs=n, effect=effect, sd_diff=sd_diff, half=half, pooled=pooled, spread=spread,
                  range=np.fmax(range_row, range_ref), margin_spread=m_spread, margin_interval=m_interval,
                  width=width, code=code, unbanded=unbanded, no_effect=no_effect)


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
    band: Optional[float]           # borderline half-width in loss units (band x pooled seed sd)
    n_diverged_row: int
    n_diverged_ref: int
    confidence: float
    row: Summary
    ref: Summary


def _float(v) -> float:
    return float(v) if _finite(v) else math.nan


def compare(row: Sequence[Optional[float]], ref: Sequence[Optional[float]], *,
            confidence: float = 0.95, band: float = BAND) -> Comparison:
    """Compare per-seed losses of `row` with `ref` (index i = seed i) under RULE: judge() on one comparison.

    Only seeds finite in both rows are paired; diverged seeds are counted per row. The
    spread is SPREAD_SDS x the pooled seed sd of the two rows (each over its finite seeds).
    Two margins: spread (|effect| - spread) and interval (|effect| - the t-interval's
    half-width, i.e. how far its nearer end lies from zero). Verdict: "better"/"worse" iff
    both are > 0, "noise" otherwise; but "borderline" when the smaller margin lies within
    +-band x pooled sd of the two rows (a rerun on another machine could flip it);
    NA_VERDICT with fewer than two finite pairs. A noise verdict has a kind: NO_EFFECT when
    the (2 x confidence - 1) paired interval lies inside +- the spread (an equivalence test:
    any effect is smaller than the spread), NOT_SHOWN otherwise.
    Zero variance of the differences: the interval collapses to the point `effect`, so
    a constant nonzero shift excludes zero and the spread test alone decides; an A/A
    with identical values has effect 0 and is therefore always "noise".
    seeds_needed: 0 if better/worse; for "noise" and "borderline", the total seed count
    from seeds_needed() with sigma = pooled sd, n_start = n_pairs + 1 and the band;
    None if no count up to SEEDS_CAP would do (always so for NO_EFFECT noise), or if
    fewer than two pairs exist.
    """
    if len(row) != len(ref):
        raise ValueError(f"row has {len(row)} seeds, ref has {len(ref)}")
    j = judge([[_float(v) for v in row]], [[_float(v) for v in ref]], confidence=confidence, band=band)
    get = lambda a: None if math.isnan(a[0]) else float(a[0])            # noqa: E731
    verdict, unbanded = VERDICTS[int(j.code[0])], VERDICTS[int(j.unbanded[0])]
    effect, pooled, width = get(j.effect), get(j.pooled), get(j.width)
    ci_low = ci_high = needed = m_spread = m_interval = None
    if verdict != Verdict.NA:
        ci_low, ci_high = effect - float(j.half[0]), effect + float(j.half[0])
        m_spread, m_interval = get(j.margin_spread), get(j.margin_interval)
        needed = 0 if verdict in (Verdict.BETTER, Verdict.WORSE) else seeds_needed(
            effect, pooled, get(j.sd_diff), n_start=int(j.n_pairs[0]) + 1, confidence=confidence, band=width)
    s_row, s_ref = summarize(row), summarize(ref)
    return Comparison(n_pairs=int(j.n_pairs[0]), effect=effect, spread=get(j.spread), range=get(j.range),
                      sd_diff=get(j.sd_diff), ci_low=ci_low, ci_high=ci_high, verdict=verdict, unbanded=unbanded,
                      noise_kind=(NO_EFFECT if j.no_effect[0] else NOT_SHOWN) if verdict == Verdict.NOISE else None,
                      seeds_needed=needed, margin_spread=m_spread, margin_interval=m_interval,
                      band=None if verdict == Verdict.NA else width,
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
    no_effect: int = 0        # noise of the kind NO_EFFECT
    settled: int = 0          # trials called better, worse or noise (outside the band)
    flips: int = 0            # ... whose rerun, without a band, gave another of those three
    contradictions: int = 0   # ... whose rerun settled too, on another of those three

    @property
    def rate(self) -> float:
        return (self.better + self.worse) / self.trials

    @property
    def flip_rate(self) -> float:
        return self.flips / self.settled if self.settled else 0.0

    @property
    def contradiction_rate(self) -> float:
        """Of the settled verdicts, the share a rerun's report settles the other way (both outside the band)."""
        return self.contradictions / self.settled if self.settled else 0.0


CHUNK = 50_000   # trials drawn and judged at once: bounded memory; part of what makes a seed's stream


def simulate(effect_sd: float, n_seeds: int, trials: int, seed: int, *,
             pair_correlation: float = 0.0, row_sd: float = 1.0, confidence: float = 0.95, band: float = BAND,
             rerun_sd: Optional[float] = None) -> Calibration:
    """Verdicts for simulated row/ref pairs, and how often a rerun flips them; deterministic from seed.

    Each seed's loss is normal: ref with mean 0 and sd 1 (sigma), row with mean effect_sd
    (positive = row worse) and sd row_sd. A shared per-seed component gives the two values
    of a seed correlation pair_correlation (same batches). Every trial is judged by judge(),
    the code behind compare().
    rerun_sd: a rerun of every run on another machine, as measured: the same seeds and
    batches, each run's own component partly redrawn so that rerun - original has sd
    rerun_sd x the row's sd (each row's sd unchanged). flips counts the settled verdicts
    (outside the band) whose rerun's verdict without a band differs; contradictions those
    whose rerun is settled too, on another verdict.
    """
    if not 0.0 <= pair_correlation <= 1.0:
        raise ValueError("pair_correlation must be in [0, 1]")
    if not row_sd > 0.0:
        raise ValueError(f"row_sd must be > 0, got {row_sd}")
    own_var = 1.0 - pair_correlation
    keep = 1.0
    if rerun_sd is not None:
        if not 0.0 <= rerun_sd ** 2 <= 2.0 * own_var:
            raise ValueError(f"rerun_sd={rerun_sd}: must be in [0, sqrt(2 (1 - pair_correlation))]")
        keep = 1.0 - rerun_sd ** 2 / (2.0 * own_var)        # corr(own, rerun's own)
    rng = np.random.default_rng(seed)
    shared_w, own_w, fresh_w = math.sqrt(pair_correlation), math.sqrt(own_var), math.sqrt(1.0 - keep ** 2)
    counts = dict(better=0, worse=0, borderline=0, no_effect=0, settled=0, flips=0, contradictions=0)
    settles = np.array([BETTER, WORSE, NOISE])
    for start in range(0, trials, CHUNK):
        common, own_ref, own_row = rng.standard_normal((3, min(CHUNK, trials - start), n_seeds))
        ref = shared_w * common + own_w * own_ref
        row = effect_sd + row_sd * (shared_w * common + own_w * own_row)
        j = judge(row, ref, confidence=confidence, band=band)
        settled = np.isin(j.code, settles)
        counts["better"] += int((j.code == BETTER).sum())
        counts["worse"] += int((j.code == WORSE).sum())
        counts["borderline"] += int((j.code == BORDERLINE).sum())
        counts["no_effect"] += int(j.no_effect.sum())
        counts["settled"] += int(settled.sum())
        if rerun_sd is not None:
            fresh_ref, fresh_row = rng.standard_normal((2,) + common.shape)
            again = judge(row + row_sd * own_w * ((keep - 1.0) * own_row + fresh_w * fresh_row),
                          ref + own_w * ((keep - 1.0) * own_ref + fresh_w * fresh_ref),
                          confidence=confidence, band=band)
            counts["flips"] += int((settled & (again.unbanded != j.code)).sum())
            counts["contradictions"] += int((settled & np.isin(again.code, settles) & (again.code != j.code)).sum())
    return Calibration(trials=trials, **counts)


def verdict_text(c: Optional[Comparison]) -> str:
    """The verdict as every front end prints it: 'better', 'worse', 'noise (no effect larger than the spread)',
    'noise (not shown either way; ~8 seeds)', 'noise (not shown either way; smaller than the seed-to-seed
    spread)', 'noise (not shown either way; over 100 seeds)', 'borderline (~6 seeds)', 'borderline (no larger
    than the seed-to-seed spread)' or 'n/a (1 seed)'; '' with nothing to compare against."""
    if c is None:
        return ""
    # no seed count: the effect does not clear the spread by the band (no n would make it a change), or the cap
    beyond = SPREAD_WORDS if c.margin_spread is None or c.margin_spread <= c.band else f"over {SEEDS_CAP} seeds"
    if c.verdict == Verdict.NOISE:
        if c.noise_kind == NO_EFFECT:
            return f"noise ({NO_EFFECT})"
        return f"noise ({NOT_SHOWN}; " + (f"~{c.seeds_needed} seeds)" if c.seeds_needed else f"{beyond})")
    if c.verdict == Verdict.BORDERLINE:
        return (f"borderline (~{c.seeds_needed} seeds)" if c.seeds_needed
                else "borderline (" + ("no larger than the seed-to-seed spread" if beyond == SPREAD_WORDS
                                       else beyond) + ")")
    return c.verdict
