"""How often the rule is wrong, simulated (docs/statistics.md, "How honest the rule is"): paired.compare's rule
judged on many simulated comparisons at once, and the measured rerun noise the simulation is held to.

judge() is compare()'s rule on (comparisons, seeds) arrays, each verdict an index into VERDICTS (code;
Judged.verdicts gives the Verdicts), so that a chunk of trials is decided by array operations at once; simulate()
draws row/ref pairs, and reruns of them, and counts the verdicts, as transfer.simulate_transfer() does for the
transfer verdicts. The report itself judges with compare() alone, transfer.changes() included.

Why the rule is written twice. compare() decides one printed comparison of a few seeds: in Python floats summed
with math.fsum, so a row's figures do not depend on the order numpy adds in, and with what only a printed
comparison needs (both rows' summaries, the seeds needed by bisection). A simulation decides tens of thousands of
comparisons per chunk, where compare() in a loop is some 30 times slower than judge() (20 µs a comparison against
0.7 µs, five seeds). compare() built on judge() would move the report's figures by the last bit of a sum, enough to
tip a verdict lying on a margin. So each keeps its own arithmetic, and tests/test_stats.py holds the two equal
(test_compare_and_the_calibrations_judge_agree_on_random_comparisons: the same verdicts, kinds of noise and seeds
needed, every number within 1e-9, on random rows with diverged seeds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..config.sections import BAND_SDS, CONFIDENCE
from .paired import SPREAD_SDS, Verdict, t_quantile

VERDICTS = tuple(Verdict)                                # judge()'s codes index this
CODE = {v: i for i, v in enumerate(VERDICTS)}            # a Verdict -> its code
SETTLED = (Verdict.BETTER, Verdict.WORSE, Verdict.NOISE)  # the verdicts outside the band
# Another CPU, measured: the same commit (409261d), configs and tokens trained on an Intel Xeon (family 6, model 167)
# and on an AMD EPYC (family 25, model 17), one thread per run; run by run, the rms of (Xeon - EPYC) final val loss
# in units of the pooled seed sd of the EPYC's rows, per stage family (tests/fixtures/runs-409261d-*.csv,
# tests/test_review.py): the main ladder 0.00106 / 0.00545, the learning-rate grid 0.0533 / 0.0698 (its x32 rows
# spike). The simulation's rerun noise is the main ladder's; review's rerun band is each family's.
RERUN_SD_BY_FAMILY = {"run": 0.19, "sweep": 0.76}
RERUN_SD = RERUN_SD_BY_FAMILY["run"]
# The stand-in measured before on one machine: every initial weight perturbed by 1e-7 relative (0.00072 / 0.00544),
# and earlier at two threads and 3 seeds (0.00139 / 0.00464): the tests hold the rule to these too.
RERUN_SD_PERTURBED = 0.13
RERUN_SD_EARLIER = 0.30


# ----------------------------------------------------------------------------- the rule, on arrays
@dataclass(frozen=True, eq=False)
class Judged:
    """judge()'s numbers: one entry per comparison (NaN where undefined), what compare() gives for one."""
    n_pairs: np.ndarray          # seeds finite in both rows
    effect: np.ndarray           # mean paired difference row - ref (NaN with no pair)
    sd_diff: np.ndarray          # sd of the paired differences (NaN with fewer than two pairs)
    half: np.ndarray             # half-width of the paired t interval
    pooled: np.ndarray           # pooled seed sd of the two rows, each over its own finite seeds
    spread: np.ndarray           # SPREAD_SDS x pooled
    range: np.ndarray            # the larger of the two rows' max - min (shown, not used by the rule)
    margin_spread: np.ndarray    # |effect| - spread
    margin_interval: np.ndarray  # |effect| - half
    band_loss: np.ndarray        # the band in loss units: band_sds x pooled
    code: np.ndarray             # the verdict's code (CODE)
    unbanded: np.ndarray         # the code without the band: better, worse, noise or n/a
    no_effect: np.ndarray        # noise whose (2 x confidence - 1) interval lies inside +- the spread

    @property
    def verdicts(self) -> np.ndarray:
        """The verdicts themselves, an array of Verdict (code looked up in VERDICTS): what transfer.classify reads."""
        return np.asarray(VERDICTS, dtype=object)[self.code]


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


def judge(row, ref, *, confidence: float = CONFIDENCE, band_sds: float = BAND_SDS) -> Judged:
    """RULE for many comparisons at once: row and ref are (comparisons, seeds) arrays, seed i paired with seed i;
    a non-finite value (NaN, inf) is a diverged seed. The rule's arithmetic is stats.compare()'s, on arrays (a test
    holds the two equal): see compare() for what each verdict means."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not band_sds >= 0.0:
        raise ValueError(f"band_sds must be >= 0, got {band_sds}")
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
    band_loss = band_sds * pooled
    margin = np.minimum(m_spread, m_interval)
    na = n < 2
    called = np.where(effect < 0, CODE[Verdict.BETTER], CODE[Verdict.WORSE])
    unbanded = np.where(na, CODE[Verdict.NA], np.where(margin > 0.0, called, CODE[Verdict.NOISE]))
    code = np.where(~na & (np.abs(margin) < band_loss), CODE[Verdict.BORDERLINE], unbanded)
    no_effect = (code == CODE[Verdict.NOISE]) & (size + half_eq <= spread)
    return Judged(n_pairs=n, effect=effect, sd_diff=sd_diff, half=half, pooled=pooled, spread=spread,
                  range=np.fmax(range_row, range_ref), margin_spread=m_spread, margin_interval=m_interval,
                  band_loss=band_loss, code=code, unbanded=unbanded, no_effect=no_effect)


# ----------------------------------------------------------------------------- the simulation
class Rates:
    """The shares a simulation's counts give (Calibration, looks.LooksCalibration): of the trials, those called better
    or worse; of the settled ones, those a rerun flips, and those a rerun settles the other way."""
    trials: int
    better: int
    worse: int
    settled: int
    flips: int
    contradictions: int

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


@dataclass(frozen=True)
class Calibration(Rates):
    """Verdict counts of simulate(); rate = share of trials called better or worse."""
    trials: int
    better: int
    worse: int
    borderline: int = 0
    no_effect: int = 0        # noise of the kind NO_EFFECT
    settled: int = 0          # trials called better, worse or noise (outside the band)
    flips: int = 0            # ... whose rerun, without a band, gave another of those three
    contradictions: int = 0   # ... whose rerun settled too, on another of those three


CHUNK = 50_000   # trials drawn and judged at once: bounded memory; part of what makes a seed's stream


def simulate(effect_sd: float, n_seeds: int, trials: int, seed: int, *,
             pair_correlation: float = 0.0, row_sd: float = 1.0, confidence: float = CONFIDENCE,
             band_sds: float = BAND_SDS, rerun_sd: Optional[float] = None) -> Calibration:
    """Verdicts for simulated row/ref pairs, and how often a rerun flips them; deterministic from seed.

    Each seed's loss is normal: ref with mean 0 and sd 1 (sigma), row with mean effect_sd
    (positive = row worse) and sd row_sd. A shared per-seed component gives the two values
    of a seed correlation pair_correlation (same batches). Every trial is judged by judge(),
    compare()'s rule on arrays.
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
    settles = np.array([CODE[v] for v in SETTLED])
    for start in range(0, trials, CHUNK):
        common, own_ref, own_row = rng.standard_normal((3, min(CHUNK, trials - start), n_seeds))
        ref = shared_w * common + own_w * own_ref
        row = effect_sd + row_sd * (shared_w * common + own_w * own_row)
        j = judge(row, ref, confidence=confidence, band_sds=band_sds)
        settled = np.isin(j.code, settles)
        counts["better"] += int((j.code == CODE[Verdict.BETTER]).sum())
        counts["worse"] += int((j.code == CODE[Verdict.WORSE]).sum())
        counts["borderline"] += int((j.code == CODE[Verdict.BORDERLINE]).sum())
        counts["no_effect"] += int(j.no_effect.sum())
        counts["settled"] += int(settled.sum())
        if rerun_sd is not None:
            fresh_ref, fresh_row = rng.standard_normal((2,) + common.shape)
            again = judge(row + row_sd * own_w * ((keep - 1.0) * own_row + fresh_w * fresh_row),
                          ref + own_w * ((keep - 1.0) * own_ref + fresh_w * fresh_ref),
                          confidence=confidence, band_sds=band_sds)
            counts["flips"] += int((settled & (again.unbanded != j.code)).sum())
            counts["contradictions"] += int((settled & np.isin(again.code, settles) & (again.code != j.code)).sum())
    return Calibration(trials=trials, **counts)
