"""Tests for modern_gpt.stats.paired (t quantiles, seed summaries, spread-aware verdicts) and
modern_gpt.stats.calibration (the same rule on arrays, and how often it is wrong, simulated)."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student_t

from modern_gpt.reporting.cells import mean_sd
from modern_gpt.stats.calibration import RERUN_SD, RERUN_SD_EARLIER, VERDICTS, judge, simulate
from modern_gpt.stats.paired import (
    BAND_SDS, NO_EFFECT, NOT_SHOWN, RULE, SEEDS_CAP, SEEDS_NEEDED_METHOD, SPREAD_SDS, Summary, Verdict, compare,
    pooled_sd, rule, seeds_needed, summarize, t_quantile, verdict_text,
)

NAN, INF = float("nan"), float("inf")
T90_2 = 2.919986            # t(0.95, 2): the half-width factor of a 90% interval over three pairs
T95_2 = 4.302653            # t(0.975, 2)
TRIALS = 40_000             # per asserted rate: its standard error is at most 0.25 points
EFFECTS = [0.25 * k for k in range(29)]   # 0 to 7 sigma


# ----------------------------------------------------------------------------- t quantile
@pytest.mark.parametrize("df, expected", [
    (1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (30, 2.0423), (1e7, 1.9600),
])
def test_t_quantile_table(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("p", [0.51, 0.6, 0.75, 0.9, 0.975, 0.995, 0.9995])
def test_t_quantile_closed_forms(p):
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    # Non-integer df has no closed form: check the round trip through the cdf.
    assert student_t.cdf(t_quantile(p, 4.5), 4.5) == pytest.approx(p, abs=1e-12)


def test_t_quantile_symmetry_median_inf_and_errors():
    assert t_quantile(0.5, 3) == 0.0
    assert t_quantile(0.025, 7) == pytest.approx(-t_quantile(0.975, 7), rel=1e-12)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.975, 2.5) < t_quantile(0.975, 2)      # float df, decreasing in df
    for bad in [(0.0, 3), (1.0, 3), (0.9, 0), (0.9, -1)]:
        with pytest.raises(ValueError):
            t_quantile(*bad)


# ----------------------------------------------------------------------------- summaries
def test_summarize_excludes_and_counts_non_finite():
    s = summarize([2.0, NAN, 4.0, INF, None, -INF, 3.0])
    assert (s.n, s.n_finite, s.n_diverged) == (7, 3, 4)
    assert s.mean == pytest.approx(3.0) and s.sd == pytest.approx(1.0)
    assert s.range == pytest.approx(2.0)
    assert mean_sd(s) == "3.0000 ± 1.0000 (4/7 diverged)"


def test_summarize_small_and_all_diverged():
    one = summarize([NAN, 2.5, NAN])
    assert one.mean == 2.5 and one.sd is None and one.range == 0.0
    assert not math.isnan(one.mean)
    assert mean_sd(one) == "2.5000 (2/3 diverged)" and (one.n, one.n_finite, one.n_diverged) == (3, 1, 2)
    assert mean_sd(summarize([2.5])) == "2.5000"
    none = summarize([NAN, INF, NAN])
    assert none.mean is None and none.sd is None and none.range is None
    assert mean_sd(none) == "3/3 diverged"
    assert mean_sd(summarize([2.4311, 2.4311])) == "2.4311 ± 0.0000"
    assert summarize([]) == Summary(0, 0, 0, None, None, None)


# ----------------------------------------------------------------------------- compare
def test_compare_hand_computed_better_with_the_spread_a_multiple_of_the_pooled_sd():
    c = compare([2.40, 2.42, 2.44], [2.50, 2.51, 2.53])
    # diffs -0.10, -0.09, -0.09: mean -0.28/3, sd sqrt(1/3)/100; squared deviations 0.0008 and 0.0014/3 over 2 + 2 dof
    pooled = math.sqrt((0.0008 + 0.0014 / 3) / 4)
    assert c.n_pairs == 3
    assert c.effect == pytest.approx(-0.28 / 3)
    assert c.sd_diff == pytest.approx(math.sqrt(1 / 3) / 100)
    assert c.spread == pytest.approx(1.69 * pooled) and SPREAD_SDS == 1.69
    assert c.range == pytest.approx(0.04)                     # max(0.04, 0.03): shown, not judged
    half = T95_2 * (math.sqrt(1 / 3) / 100) / math.sqrt(3)
    assert c.ci_low == pytest.approx(-0.28 / 3 - half, abs=1e-6)
    assert c.ci_high == pytest.approx(-0.28 / 3 + half, abs=1e-6)
    assert c.margin_spread == pytest.approx(0.28 / 3 - 1.69 * pooled)
    assert c.margin_interval == pytest.approx(0.28 / 3 - half, abs=1e-6)
    assert c.band_loss == pytest.approx(BAND_SDS * pooled) and BAND_SDS == 0.4
    assert c.verdict == c.unbanded == "better" and c.seeds_needed == 0 and c.noise_kind is None
    assert c.row.mean == pytest.approx(2.42) and c.confidence == 0.95


def test_the_spread_does_not_grow_with_the_seeds_an_effect_within_the_range_can_clear_it():
    ref = [1.00, 1.01, 1.02, 1.03, 1.04]                        # 5 seeds: range 0.04, sd sqrt(0.001 / 4) = 0.0158
    row = [v + 0.035 for v in ref]                              # constant +0.035: inside the range, not the spread
    c = compare(row, ref)
    sd = math.sqrt(0.001 / 4)
    assert c.range == pytest.approx(0.04) and c.spread == pytest.approx(1.69 * sd)      # 0.0267
    assert c.margin_spread == pytest.approx(0.035 - 1.69 * sd) and c.band_loss == pytest.approx(0.4 * sd)
    assert c.range > c.effect > c.spread + c.band_loss and c.verdict == "worse"


def test_compare_effect_within_spread_is_noise_not_shown_either_way():
    c = compare([2.43, 2.41, 2.45], [2.44, 2.45, 2.47])
    # diffs -0.01, -0.04, -0.02: 90% interval -0.07/3 +- 2.920 x 0.01528 / sqrt(3) reaches past the spread
    pooled = math.sqrt((0.0008 + 0.0014 / 3) / 4)
    assert c.effect == pytest.approx(-0.07 / 3) and c.spread == pytest.approx(1.69 * pooled)
    assert 0.07 / 3 + T90_2 * c.sd_diff / math.sqrt(3) > c.spread
    assert c.verdict == "noise" and c.noise_kind == NOT_SHOWN and c.seeds_needed is None
    assert verdict_text(c) == "noise (not shown either way; smaller than the seed-to-seed spread)"


def test_noise_shows_no_effect_larger_than_the_spread_only_when_the_90_percent_interval_lies_inside_it():
    ref = [1.0, 2.0, 3.0]                                        # sd 1
    inside = compare([2.0, 1.0, 3.0], ref)                      # diffs 1, -1, 0; row sd 1: pooled 1
    assert inside.effect == pytest.approx(0.0) and inside.spread == pytest.approx(1.69)
    assert T90_2 * 1.0 / math.sqrt(3) == pytest.approx(1.68585, abs=1e-5)    # the 90% interval: +-1.686 < 1.69
    assert inside.verdict == "noise" and inside.noise_kind == NO_EFFECT == "no effect larger than the spread"
    assert verdict_text(inside) == "noise (no effect larger than the spread)" and inside.seeds_needed is None
    outside = compare([2.1, 0.9, 3.0], ref)                     # diffs 1.1, -1.1, 0; row ss 2.22: pooled 1.0271
    pooled = math.sqrt((2.22 + 2.0) / 4)
    assert outside.sd_diff == pytest.approx(1.1) and outside.spread == pytest.approx(1.69 * pooled)
    assert T90_2 * 1.1 / math.sqrt(3) > 1.69 * pooled                          # +-1.854 > 1.736
    assert outside.verdict == "noise" and outside.noise_kind == NOT_SHOWN == "not shown either way"
    # a 95% rule has a 90% equivalence interval; at 99%, a 98% one, which the same rows no longer fit
    assert compare([2.0, 1.0, 3.0], ref, confidence=0.99).noise_kind == NOT_SHOWN


def test_compare_interval_decides_when_effect_beats_spread():
    # diffs 1, 2, 3: effect 2 > spread 1.69 x sqrt(1/3), but 2 +- 4.303 * 1 / sqrt(3) includes zero.
    c = compare([4.0, 4.0, 5.0], [3.0, 2.0, 2.0])
    pooled = math.sqrt(1 / 3)
    assert c.effect == pytest.approx(2.0) and c.spread == pytest.approx(1.69 * pooled)
    assert c.ci_low < 0 < c.ci_high and c.verdict == "noise" and c.noise_kind == NOT_SHOWN
    assert c.seeds_needed == seeds_needed(2.0, pooled, 1.0, n_start=4, band_loss=BAND_SDS * pooled) == 4
    assert verdict_text(c) == "noise (not shown either way; ~4 seeds)"
    assert compare([4.0, 4.0, 5.0], [3.0, 2.0, 2.0], confidence=0.5).verdict == "worse"


def test_compare_one_finite_pair_is_na():
    c = compare([2.0, NAN, 2.1], [3.0, 3.0, INF])              # a huge effect, one pair
    assert c.n_pairs == 1 and c.verdict == Verdict.NA == "n/a (1 seed)"
    assert c.effect == pytest.approx(-1.0) and c.ci_low is None and c.seeds_needed is None
    assert c.noise_kind is None and c.band_loss is None and c.margin_spread is None
    assert compare([2.0], [3.0]).verdict == "n/a (1 seed)"
    none = compare([NAN, NAN], [1.0, 2.0])
    assert none.n_pairs == 0 and none.effect is None and none.verdict == "n/a (1 seed)"


def test_compare_diverged_seeds_excluded_and_counted():
    row = [2.40, NAN, 2.41, 2.42, None]
    ref = [2.50, 2.51, INF, 2.52, 2.53]
    c = compare(row, ref)
    assert c.n_pairs == 2                                       # seeds 0 and 3
    assert (c.n_diverged_row, c.n_diverged_ref) == (2, 1)
    assert c.effect == pytest.approx(-0.10)
    assert c.range == pytest.approx(0.03)                       # ref range over its finite seeds
    # each row's sd over its own finite seeds: squared deviations 0.0002 (2 dof) and 0.0005 (3 dof)
    assert c.spread == pytest.approx(1.69 * math.sqrt(0.0007 / 5))
    assert not any(isinstance(v, float) and math.isnan(v)
                   for v in (c.effect, c.spread, c.range, c.sd_diff, c.ci_low, c.ci_high))


def test_compare_zero_variance_and_identical_rows():
    same = [2.40, 2.45, 2.43]
    for a, b in [(same, same), ([1.0] * 3, [1.0] * 3)]:
        c = compare(a, b)
        assert c.effect == 0.0 and c.verdict == "noise" and c.seeds_needed is None
        assert c.noise_kind == NO_EFFECT                        # the interval is the point 0
    shift = compare([1.5, 1.625, 1.75], [1.0, 1.125, 1.25])     # constant +0.5, spread 1.69 x 0.125
    assert shift.sd_diff == 0.0 and shift.ci_low == shift.ci_high == 0.5
    assert shift.verdict == "worse"


def test_compare_rejects_unequal_lengths():
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0])


# ----------------------------------------------------------------------------- compare() and the rule on arrays
def _nan_none(x) -> float | None:
    return None if math.isnan(x) else float(x)


@pytest.mark.parametrize("confidence, band_sds", [(0.95, BAND_SDS), (0.9, 0.0), (0.99, 1.0)])
def test_compare_and_the_calibrations_judge_agree_on_random_comparisons(confidence, band_sds):
    """compare() (scalar arithmetic: the report's) and calibration.judge() (arrays: the simulation's) are two
    implementations of one rule. On random rows of 2 to 8 seeds (planted effects of -6 to 6 seed sds, row sds 0.5 to
    2 times the reference's, seed correlation 0 or 0.45, diverged seeds on either side) they give the same verdict,
    verdict without the band, kind of noise and seeds needed (seeds_needed() of judge()'s numbers), and the same
    numbers; every verdict and both kinds of noise occur."""
    rng = np.random.default_rng(20250)
    seen, counts = set(), set()
    for n_seeds in (2, 3, 5, 8):
        m = 150
        common = rng.choice([0.0, 0.9], (m, 1)) * rng.standard_normal((m, n_seeds))   # the seeds' shared batches
        ref = common + rng.standard_normal((m, n_seeds))
        row = common + rng.choice([0.5, 1.0, 2.0], (m, 1)) * rng.standard_normal((m, n_seeds)) \
            + rng.uniform(-6.0, 6.0, (m, 1))
        row[rng.random(row.shape) < 0.05] = NAN
        ref[rng.random(ref.shape) < 0.05] = INF
        j = judge(row, ref, confidence=confidence, band_sds=band_sds)
        for i in range(m):
            c = compare([_nan_none(v) for v in row[i]], list(ref[i]), confidence=confidence, band_sds=band_sds)
            verdict, why = VERDICTS[j.code[i]], (n_seeds, row[i], ref[i])
            assert (c.verdict, c.unbanded) == (verdict, VERDICTS[j.unbanded[i]]), why
            assert c.noise_kind == ((NO_EFFECT if j.no_effect[i] else NOT_SHOWN) if verdict == Verdict.NOISE
                                    else None), why
            settled = verdict in (Verdict.BETTER, Verdict.WORSE)
            needed = None if verdict == Verdict.NA else 0 if settled else seeds_needed(
                j.effect[i], j.pooled[i], j.sd_diff[i], n_start=int(j.n_pairs[i]) + 1, confidence=confidence,
                band_loss=j.band_loss[i])
            assert c.seeds_needed == needed, why
            assert c.n_pairs == j.n_pairs[i] and (c.n_diverged_row, c.n_diverged_ref) == (
                int(np.isnan(row[i]).sum()), int(np.isinf(ref[i]).sum()))
            numbers = [(c.effect, j.effect[i]), (c.spread, j.spread[i]), (c.range, j.range[i]),
                       (c.sd_diff, j.sd_diff[i])]
            if verdict != Verdict.NA:
                numbers += [(c.ci_high - c.effect, j.half[i]), (c.effect - c.ci_low, j.half[i]),
                            (c.margin_spread, j.margin_spread[i]), (c.margin_interval, j.margin_interval[i]),
                            (c.band_loss, j.band_loss[i])]
            for mine, theirs in numbers:
                same = mine is None if math.isnan(theirs) else math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12)
                assert same, (mine, theirs, why)
            seen.add((c.verdict, c.noise_kind))
            counts.add(c.seeds_needed)
    wanted = {(Verdict.BETTER, None), (Verdict.WORSE, None), (Verdict.NA, None), (Verdict.NOISE, NO_EFFECT),
              (Verdict.NOISE, NOT_SHOWN)} | ({(Verdict.BORDERLINE, None)} if band_sds else set())
    assert seen == wanted
    assert {0, None} < counts and len(counts - {0, None}) >= 3              # settled, never, and counts to run


def test_pooled_sd_weights_each_row_by_its_finite_seeds():
    assert pooled_sd(summarize([1.0, 2.0, 3.0]), summarize([5.0, NAN, 5.0])) == pytest.approx(math.sqrt(2.0 / 3.0))
    assert pooled_sd(summarize([1.0, NAN]), summarize([INF])) is None and pooled_sd() is None


# ----------------------------------------------------------------------------- seeds needed
def test_seeds_needed_is_the_first_count_whose_interval_clears_and_none_below_the_spread():
    assert seeds_needed(2.0, 1.0, 1.0) == 4                     # t(0.975, 3) / 2 = 1.591 < 2; at 3: 2.484
    assert seeds_needed(-2.0, 1.0, 1.0) == 4                    # sign does not matter
    assert seeds_needed(2.0, 1.0, 1.0, band_loss=0.2) == 4           # 1.8 left: still 1.591 < 1.8
    assert seeds_needed(1.75, 1.0, 1.2) == 5                    # at 4: 1.909; at 5: t(0.975, 4) 1.2 / sqrt 5 = 1.490
    assert seeds_needed(2.0, 1.0, 1.0, band_loss=0.35) is None       # 1.65 <= 1.69: the spread never gets smaller
    assert seeds_needed(1.69, 1.0, 0.0) is None                 # ... even with an exact interval
    assert seeds_needed(1.7, 1.0, 100.0) is None                # clears the spread, but not within the cap
    for effect, sd_diff in [(1.8, 0.5), (2.2, 1.4), (3.0, 3.0), (1.75, 2.0)]:
        first = next((n for n in range(6, SEEDS_CAP + 1)
                      if t_quantile(0.975, n - 1) * sd_diff / math.sqrt(n) < effect - 0.05), None)
        assert seeds_needed(effect, 1.0, sd_diff, n_start=6, band_loss=0.05) == first, (effect, sd_diff)


def test_seeds_needed_monotone_in_effect():
    for sd_diff in (0.3, 1.0, 1.4, 3.0):
        previous = math.inf
        for effect in [0.1 * k for k in range(1, 120)]:
            n = seeds_needed(effect, 1.0, sd_diff)
            n = math.inf if n is None else n
            assert n <= previous, (sd_diff, effect)
            previous = n


def test_seeds_needed_none_for_tiny_effects():
    assert seeds_needed(0.1, 1.0, 1.0) is None
    assert seeds_needed(0.0, 1.0, 0.0) is None
    c = compare([2.401, 2.452, 2.428], [2.400, 2.450, 2.430])   # effect ~ 0.0003, sd ~ 0.025
    assert c.verdict == "noise" and c.seeds_needed is None


def test_rule_and_method_are_quotable():
    assert "spread" in RULE and "interval" in RULE and "1.69 × the pooled seed sd" in RULE
    assert f'"{NO_EFFECT}" when the 90% interval' in RULE and f'"{NOT_SHOWN}"' in RULE
    assert "its 95% paired t-interval" in RULE and "range" not in RULE
    assert "its 99% paired t-interval" in rule(0.99) and "98% interval" in rule(0.99) and rule(0.95) == RULE
    assert "t(" in SEEDS_NEEDED_METHOD and "1.69 × sigma" in SEEDS_NEEDED_METHOD
    assert "grows" not in SEEDS_NEEDED_METHOD


def test_verdict_words():
    base = compare([4.0, 4.0, 5.0], [3.0, 2.0, 2.0])            # noise, not shown either way, ~4 seeds
    assert verdict_text(base) == "noise (not shown either way; ~4 seeds)"
    assert verdict_text(dataclasses.replace(base, seeds_needed=None)) == "noise (not shown either way; over 100 seeds)"
    border = dataclasses.replace(base, verdict="borderline", noise_kind=None)
    assert verdict_text(border) == "borderline (~4 seeds)"
    assert verdict_text(dataclasses.replace(border, seeds_needed=None)) == "borderline (over 100 seeds)"
    small = dataclasses.replace(border, seeds_needed=None, margin_spread=0.0)
    assert verdict_text(small) == "borderline (no larger than the seed-to-seed spread)"
    assert verdict_text(None) == "" and verdict_text(compare([1.0], [2.0])) == Verdict.NA


# ----------------------------------------------------------------------------- the borderline band
def test_the_band_turns_a_near_threshold_verdict_into_borderline_with_its_margins():
    ref = [1.0, 1.25, 1.5]                                      # sd 0.25: spread 0.4225, band 0.4 x 0.25 = 0.1
    row = [v + 0.43 for v in ref]                               # constant +0.43: clears the spread by 0.0075
    c = compare(row, ref)
    assert c.margin_spread == pytest.approx(0.0075) and c.margin_interval == pytest.approx(0.43)
    assert c.band_loss == pytest.approx(BAND_SDS * 0.25) and c.verdict == "borderline" and c.unbanded == "worse"
    assert verdict_text(c) == "borderline (no larger than the seed-to-seed spread)"   # 0.43 - 0.1 < 0.4225
    assert compare(row, ref, band_sds=0.0).verdict == "worse"         # band 0: the bare rule
    below = [v + 0.42 for v in ref]                              # misses the spread by 0.0025
    assert compare(below, ref).verdict == "borderline" and compare(below, ref, band_sds=0.0).verdict == "noise"
    clear = compare([1.0, 1.25, 1.5], [2.0, 2.25, 2.5])           # -1.0: both margins far out
    assert clear.verdict == clear.unbanded == "better" and clear.margin_spread == pytest.approx(1.0 - 0.4225)


# ----------------------------------------------------------------------------- calibration
def test_simulate_is_deterministic():
    kw = dict(pair_correlation=0.5, row_sd=2.0, rerun_sd=RERUN_SD)
    assert simulate(2.0, 5, 3000, seed=7, **kw) == simulate(2.0, 5, 3000, seed=7, **kw)
    assert simulate(2.0, 5, 3000, seed=7, **kw) != simulate(2.0, 5, 3000, seed=8, **kw)
    assert simulate(2.0, 5, 120_000, seed=7).trials == 120_000                     # more than one chunk


def test_an_exact_rerun_flips_and_contradicts_nothing():
    cal = simulate(2.5, 5, 4000, seed=1, rerun_sd=0.0)
    assert cal.settled > 0 and cal.flips == cal.contradictions == 0


@pytest.mark.parametrize("rho, row_sd, limit", [(0.0, 1.0, 0.01), (0.5, 1.0, 0.01), (0.0, 3.0, 0.05)])
def test_aa_at_5_seeds_is_called_better_or_worse_at_most_1_percent_or_5_with_unequal_sds(rho, row_sd, limit):
    cal = simulate(0.0, 5, TRIALS, seed=20240, pair_correlation=rho, row_sd=row_sd)
    assert cal.trials == TRIALS
    assert cal.rate <= limit, cal


@pytest.mark.parametrize("effect, rho, least", [(5.0, 0.0, 0.99), (5.0, 0.5, 0.99), (3.0, 0.5, 0.88),
                                                (3.0, 0.0, 0.78)])
def test_detection_at_5_seeds(effect, rho, least):
    cal = simulate(effect, 5, TRIALS, seed=20241, pair_correlation=rho)
    assert cal.rate >= least, cal
    assert cal.better == 0                                      # never the wrong sign


@pytest.mark.parametrize("rerun_sd", [RERUN_SD, RERUN_SD_EARLIER])
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.8])
def test_at_the_measured_rerun_noise_at_most_5_percent_of_settled_verdicts_flip_and_1_percent_contradict(rho, rerun_sd):
    """At RERUN_SD (and at the larger one measured before, at two threads), over effects 0 to 7 sigma in 0.25 sigma
    steps (10,000 trials each): the worst flip rate and the worst contradiction rate. Without the band more
    verdicts would flip."""
    cals = [simulate(e, 5, 10_000, seed=20244 + k, pair_correlation=rho, rerun_sd=rerun_sd)
            for k, e in enumerate(EFFECTS)]
    assert max(c.flip_rate for c in cals) <= 0.05
    assert max(c.contradiction_rate for c in cals) <= 0.01
    bare = max(simulate(e, 5, 10_000, seed=20244 + k, pair_correlation=rho, band_sds=0.0, rerun_sd=rerun_sd).flip_rate
               for k, e in enumerate(EFFECTS))
    assert bare > max(c.flip_rate for c in cals)


# ----------------------------------------------------------------------------- the docs' tables
TABLE_TRIALS = 10_000
STATISTICS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"


def test_readme_tables():
    """The tables of docs/statistics.md ("How honest the rule is") are what simulate() gives: printed with
    pytest tests/test_stats.py -k readme_tables -s, and checked against the page line for line."""
    t = TABLE_TRIALS
    pct = lambda x: f"{100 * x:.1f}%"                                              # noqa: E731
    lines = [f"(simulate(), {t:,} trials per cell, band {BAND_SDS:g}, spread {SPREAD_SDS:g} pooled sd, "
             f"RERUN_SD {RERUN_SD:g})", "",
             "| two rows drawn from the same distribution (A/A) | 3 seeds | 5 seeds |", "|---|---|---|"]
    for name, kw in [("seed correlation 0", {}), ("seed correlation 0.5", dict(pair_correlation=0.5)),
                     ("one row's sd 3 × the other's", dict(row_sd=3.0))]:
        cals = [simulate(0.0, n, t, seed=30 + n, **kw) for n in (3, 5)]
        lines.append(f"| called better or worse, {name} | " + " | ".join(pct(c.rate) for c in cals) + " |")
        lines.append(f"| called \"{NO_EFFECT}\", {name} | "
                     + " | ".join(pct(c.no_effect / c.trials) for c in cals) + " |")
    lines += ["", "| a planted effect of | 3 seeds, correlation 0.5 | 5 seeds, correlation 0.5 "
                  "| 3 seeds, correlation 0 | 5 seeds, correlation 0 |", "|---|---|---|---|---|"]
    for e in (1.0, 2.0, 3.0, 5.0):
        cals = [simulate(e, n, t, seed=40 + n, pair_correlation=rho) for rho in (0.5, 0.0) for n in (3, 5)]
        lines.append(f"| {e:g} σ | " + " | ".join(pct(c.rate) for c in cals) + " |")
    lines += ["", "| worst over effects 0 to 7 σ (flips / contradictions) | correlation 0 | 0.5 | 0.8 |",
              "|---|---|---|---|"]
    mark = " <!-- RERUN_SD -->"                   # the page: the rows to regenerate when RERUN_SD is re-measured
    for name, n, sd, band_sds in [(f"5 seeds, rerun sd {RERUN_SD:g}{mark}", 5, RERUN_SD, BAND_SDS),
                              (f"5 seeds, rerun sd {RERUN_SD:g}, no band{mark}", 5, RERUN_SD, 0.0),
                              (f"5 seeds, rerun sd {2 * RERUN_SD:g} (twice){mark}", 5, 2 * RERUN_SD, BAND_SDS),
                              (f"5 seeds, rerun sd {RERUN_SD_EARLIER:g} (measured before, at two threads)", 5,
                               RERUN_SD_EARLIER, BAND_SDS),
                              (f"3 seeds, rerun sd {RERUN_SD:g}{mark}", 3, RERUN_SD, BAND_SDS)]:
        cells = []
        for rho in (0.0, 0.5, 0.8):
            cals = [simulate(e, n, t, seed=50 + k, pair_correlation=rho, band_sds=band_sds, rerun_sd=sd)
                    for k, e in enumerate(EFFECTS)]
            cells.append(f"{pct(max(c.flip_rate for c in cals))} / {pct(max(c.contradiction_rate for c in cals))}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    print("\n" + "\n".join(lines))
    page = STATISTICS_PAGE.read_text(encoding="utf-8")
    for table in "\n".join(lines[2:]).split("\n\n"):
        assert table in page, f"docs/statistics.md does not show this table as printed:\n{table}"
