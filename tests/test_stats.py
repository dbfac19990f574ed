"""Tests for modern_gpt.reporting.stats: t quantiles, seed summaries, spread-aware verdicts."""

import math

import pytest

from modern_gpt.reporting.stats import (
    NA_VERDICT, RULE, SEEDS_NEEDED_METHOD, Summary, compare, expected_range,
    seeds_needed, simulate, summarize, t_cdf, t_quantile,
)

NAN, INF = float("nan"), float("inf")
TRIALS = 4000


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
    assert t_cdf(t_quantile(p, 4.5), 4.5) == pytest.approx(p, abs=1e-12)


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
    assert s.label() == "3.0000 ± 1.0000 (4/7 diverged)"


def test_summarize_small_and_all_diverged():
    one = summarize([NAN, 2.5, NAN])
    assert one.mean == 2.5 and one.sd is None and one.range == 0.0
    assert not math.isnan(one.mean)
    assert one.label() == "2.5000 (2/3 diverged)"
    assert summarize([2.5]).label() == "2.5000 (1 seed)"
    none = summarize([NAN, INF, NAN])
    assert none.mean is None and none.sd is None and none.range is None
    assert none.label() == "3/3 diverged"
    assert summarize([2.4311, 2.4311]).label() == "2.4311 ± 0.0000"
    assert summarize([]) == Summary(0, 0, 0, None, None, None)


# ----------------------------------------------------------------------------- compare
def test_compare_hand_computed_better():
    c = compare([2.40, 2.42, 2.44], [2.50, 2.51, 2.53])
    # diffs -0.10, -0.09, -0.09: mean -0.28/3, sd sqrt(1/3)/100
    assert c.n_pairs == 3
    assert c.effect == pytest.approx(-0.28 / 3)
    assert c.sd_diff == pytest.approx(math.sqrt(1 / 3) / 100)
    assert c.spread == pytest.approx(0.04)                    # max(0.04, 0.03)
    half = 4.302653 * (math.sqrt(1 / 3) / 100) / math.sqrt(3)
    assert c.ci_low == pytest.approx(-0.28 / 3 - half, abs=1e-6)
    assert c.ci_high == pytest.approx(-0.28 / 3 + half, abs=1e-6)
    assert c.verdict == "better" and c.seeds_needed == 0
    assert c.row.mean == pytest.approx(2.42) and c.confidence == 0.95


def test_compare_effect_within_spread_is_noise():
    c = compare([2.43, 2.41, 2.45], [2.44, 2.45, 2.47])
    assert c.effect == pytest.approx(-0.07 / 3)
    assert c.spread == pytest.approx(0.04)
    assert c.verdict == "noise"


def test_compare_interval_decides_when_effect_beats_spread():
    # diffs 1, 2, 3: effect 2 > spread 1, but 2 +- 4.303 * 1 / sqrt(3) includes zero.
    c = compare([4.0, 4.0, 5.0], [3.0, 2.0, 2.0])
    assert c.effect == pytest.approx(2.0) and c.spread == pytest.approx(1.0)
    assert c.ci_low < 0 < c.ci_high and c.verdict == "noise"
    pooled = math.sqrt(1 / 3)
    assert c.seeds_needed == seeds_needed(2.0, pooled, 1.0, n_start=4) == 4
    assert compare([4.0, 4.0, 5.0], [3.0, 2.0, 2.0], confidence=0.5).verdict == "worse"


def test_compare_one_finite_pair_is_na():
    c = compare([2.0, NAN, 2.1], [3.0, 3.0, INF])              # a huge effect, one pair
    assert c.n_pairs == 1 and c.verdict == NA_VERDICT == "n/a (1 seed)"
    assert c.effect == pytest.approx(-1.0) and c.ci_low is None and c.seeds_needed is None
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
    assert c.spread == pytest.approx(0.03)                      # ref range over its finite seeds
    assert not any(isinstance(v, float) and math.isnan(v)
                   for v in (c.effect, c.spread, c.sd_diff, c.ci_low, c.ci_high))


def test_compare_zero_variance_and_identical_rows():
    same = [2.40, 2.45, 2.43]
    for a, b in [(same, same), ([1.0] * 3, [1.0] * 3)]:
        c = compare(a, b)
        assert c.effect == 0.0 and c.verdict == "noise" and c.seeds_needed is None
    shift = compare([1.5, 1.625, 1.75], [1.0, 1.125, 1.25])     # constant +0.5, spread 0.25
    assert shift.sd_diff == 0.0 and shift.ci_low == shift.ci_high == 0.5
    assert shift.verdict == "worse"
    wide = compare([1.5, 1.75, 2.0], [1.0, 1.25, 1.5], band=0.0)  # constant +0.5, spread 0.5: no margin
    assert wide.verdict == "noise"


def test_compare_rejects_unequal_lengths():
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0])


# ----------------------------------------------------------------------------- seeds needed
@pytest.mark.parametrize("n, d2", [(2, 1.128), (3, 1.693), (4, 2.059), (5, 2.326),
                                   (6, 2.534), (10, 3.078)])
def test_expected_range_matches_d2_table(n, d2):
    assert expected_range(n) == pytest.approx(d2, abs=6e-4)
    assert expected_range(n, 2) > expected_range(n)


def test_seeds_needed_monotone_in_effect():
    for sd_diff in (0.3, 1.0, 1.4, 3.0):
        previous = math.inf
        for effect in [0.1 * k for k in range(1, 120)]:
            n = seeds_needed(effect, 1.0, sd_diff)
            n = math.inf if n is None else n
            assert n <= previous, (sd_diff, effect)
            previous = n
    assert seeds_needed(3.0, 1.0, 1.4) == 4                    # interval binds at n = 3
    assert seeds_needed(-3.0, 1.0, 1.4) == 4                   # sign does not matter


def test_seeds_needed_none_for_tiny_effects():
    assert seeds_needed(0.1, 1.0, 1.0) is None
    assert seeds_needed(0.0, 1.0, 0.0) is None
    c = compare([2.401, 2.452, 2.428], [2.400, 2.450, 2.430])   # effect ~ 0.0003, sd ~ 0.025
    assert c.verdict == "noise" and c.seeds_needed is None


def test_rule_and_method_are_quotable():
    assert "spread" in RULE and "interval" in RULE and RULE.count(".") <= 2
    assert "range" in SEEDS_NEEDED_METHOD and "t(" in SEEDS_NEEDED_METHOD


# ----------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("rho", [0.0, 0.5])
@pytest.mark.parametrize("n_seeds", [3, 5])
def test_aa_false_positive_rate_at_most_5_percent(n_seeds, rho):
    cal = simulate(0.0, n_seeds, TRIALS, seed=20240, pair_correlation=rho)
    assert cal.trials == TRIALS
    assert cal.rate <= 0.05


def test_simulate_is_deterministic():
    assert simulate(2.0, 3, 300, seed=7) == simulate(2.0, 3, 300, seed=7)


def test_detection_rate_table():
    table = {(e, n): simulate(e, n, TRIALS, seed=20241, pair_correlation=0.5)
             for e in (2.0, 3.0, 5.0) for n in (3, 5)}
    print("\ndetection rate (pair correlation 0.5):")
    for e in (2.0, 3.0, 5.0):
        print(f"  {e:.0f} sd: " + "  ".join(f"{n} seeds {table[e, n].rate:.3f}" for n in (3, 5)))
    assert table[5.0, 5].rate > 0.5
    for n in (3, 5):
        rates = [table[e, n].rate for e in (2.0, 3.0, 5.0)]
        assert rates == sorted(rates)                            # bigger effect, more detections
        assert all(table[e, n].better == 0 for e in (2.0, 3.0, 5.0))   # never the wrong sign
