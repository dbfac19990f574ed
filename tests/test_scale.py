"""The ladder at several sizes: plan's checks of scale:, the transfer verdict of each change on tables made here
(one per class), its calibration by simulation, and reports/scale.md from hand-made results."""

import math
import re
from pathlib import Path

import pytest

from fakes import ladder
from md_tables import cells, tables
from modern_gpt.core.errors import ConfigError
from modern_gpt.config.params import read_yaml
from modern_gpt.records.stages import Size
from modern_gpt.pipeline.ladder_params import parse
from modern_gpt.reporting import wording as W
from modern_gpt.reporting.write import write_report
from modern_gpt.reporting.results import Ladder, Results
from modern_gpt.reporting.pages import build_scale
from modern_gpt.reporting.settings import Settings
from modern_gpt.stats.paired import Verdict
from modern_gpt.reporting.transfer import changes, effects
from modern_gpt.stats.across_sizes import Transfer, simulate_transfer

ROOT = Path(__file__).resolve().parents[1]

XS = {"n_layer": 2, "n_embd": 48, "n_head": 4}
L = {"n_layer": 5, "n_embd": 160, "n_head": 4}


def with_sizes(sizes: dict, **scale) -> dict:
    raw = read_yaml(ROOT / "params.yaml")
    raw["scale"] = {**raw.get("scale", {}), "sizes": sizes, **scale}
    return raw


# ------------------------------------------------------------------------------------------------ plan's checks

def test_each_size_trains_the_main_ladder_on_the_same_seeds_and_the_default_size_is_the_main_tables():
    p = parse(with_sizes({"xs": XS, "l": L}))
    found = p.size_ladders(vocab_size=50)
    assert [s.size.name for s in found] == ["xs", None, "l"]                        # smallest N first
    assert [r.slug for r in found[1].rows] == [r.slug for r in p.rows(50)]          # model:'s: the main runs
    assert [r.slug for r in found[0].rows] == [f"scale_xs_{r.slug}" for r in p.rows(50)]
    assert [r.label for r in found[2].rows] == [r.label for r in p.rows(50)]
    xs = found[0]
    assert (xs.rows[0].config.n_kv_head, xs.rows[-1].config.n_kv_head) == (4, 2)   # MHA baseline, model:'s GQA
    assert {r.config.n_layer for r in xs.rows} == {2} and xs.rows[-1].config.head_dim == 12
    assert xs.rows[-1].config.pos == "rope" and xs.rows[0].config.pos == "learned"  # the flags stay the ladder's
    assert [s.size.non_embedding for s in found] == [50_976, 787_840, 1_461_360]    # the 0.05/0.79/1.46 M
    assert {s.train for s in found} == {p.train}                                    # budget steps: the same recipe
    assert parse(read_yaml(ROOT / "params.yaml")).size_ladders(50) == []                   # off by default


def test_tokens_per_parameter_scales_steps_warmup_and_evaluation_and_refuses_too_few_steps():
    p = parse(with_sizes({"l": L}, budget="tokens_per_param"))
    default, large = p.size_ladders(50)
    ratio = large.size.non_embedding / default.size.non_embedding
    assert large.train.iters == round(500 * ratio) == 927
    assert (large.train.warmup_iters, large.train.eval_interval) == (round(50 * ratio), round(100 * ratio))
    assert math.isclose(large.size.tokens / large.size.non_embedding,
                        default.size.tokens / default.size.non_embedding, rel_tol=1e-3)
    with pytest.raises(ConfigError) as e:
        parse(with_sizes({"xs": XS}, budget="tokens_per_param"))
    assert str(e.value).startswith("scale.sizes.xs: would train 32 steps at model:'s 0.487 tokens per ")
    assert "fewer than scale.min_iters=100" in str(e.value)


@pytest.mark.parametrize("sizes, message", [
    ({"x_s": XS}, "scale.sizes.x_s: a size's name must be lowercase letters and digits, without '_'"),
    ({"xs": {"n_layer": 2, "n_embd": 48}}, "scale.sizes.xs.n_head: missing"),
    ({"xs": {**XS, "n_ctx": 8}}, "scale.sizes.xs.n_ctx: unknown key; allowed keys are n_layer, n_embd, n_head, "),
    ({"xs": {**XS, "n_layer": 0}}, "scale.sizes.xs.n_layer=0: must be an integer >= 1"),
    ({"xs": {**XS, "n_head": 5}}, "scale.sizes.xs.n_head=5: must split n_embd=48 into whole heads (allowed: 1, 2, 3"),
    ({"xs": {**XS, "n_head": 16}}, "scale.sizes.xs.n_head=16: gives heads of 3 dimensions"),
    ({"xs": {"n_layer": 2, "n_embd": 60, "n_head": 4}}, "scale.sizes.xs.n_head=4: gives heads of 15 dimensions; RoPE"),
    ({"xs": {**XS, "head_dim": 9}}, "scale.sizes.xs.head_dim=9: gives heads of 9 dimensions; RoPE rotates pairs"),
    ({"xs": {**XS, "n_kv_head": 3}}, "scale.sizes.xs.n_kv_head=3: must divide n_head=4 into equal groups (allowed: "
                                     "1, 2, 4)"),
    ({"xs": {"n_layer": 2, "n_embd": 48, "n_head": 3}}, "scale.sizes.xs.n_head=3: model.n_kv_head=2 K/V heads must "
                                                        "divide it into equal groups; give scale.sizes.xs.n_kv_head"),
    ({"m": {"n_layer": 4, "n_embd": 128, "n_head": 4}}, "scale.sizes.m: the same shape as model: (whose runs are"),
    ({"a": XS, "b": {**XS, "n_kv_head": 2}}, "scale.sizes.b: the same shape as scale.sizes.a"),
    ([], "scale.sizes: must be a mapping of name: shape"),
])
def test_a_bad_size_is_refused_before_anything_trains_in_one_line_naming_its_field(sizes, message):
    with pytest.raises(ConfigError) as e:
        parse(with_sizes(sizes))
    assert str(e.value).startswith(message) and "\n" not in str(e.value), str(e.value)


def test_a_window_the_sizes_layers_cannot_hold_is_refused_naming_the_size():
    raw = with_sizes({"xs": XS})
    raw["model"] |= {"attn_window": 16, "global_every": 4}
    with pytest.raises(ConfigError, match=r"^scale\.sizes\.xs\.n_layer=2: fewer layers than model\.global_every=4 .*allowed: 4 or more$"):
        parse(raw)


def test_scale_budget_and_min_iters_are_checked():
    with pytest.raises(ConfigError, match=r"^scale\.budget="):
        parse(with_sizes({"xs": XS}, budget="tokens"))
    with pytest.raises(ConfigError, match=r"^scale\.min_iters=0: must be an integer >= 1"):
        parse(with_sizes({"xs": XS}, min_iters=0))


# ------------------------------------------------------------------------------------------------ transfer

SEEDS = 5
BASE = [2.0, 2.004, 1.998, 2.002, 2.0]                    # the row above, per seed: a small seed spread
NS = [50_000, 200_000, 800_000]                            # non-embedding params of the three sizes (+5,000 each)


def size(name, n):
    return Size(name, 2, 32, 4, 4, 8, n, 100, 1000)


def sized(per_size: list[list[float]]):
    """(size, rows) for three sizes, the middle one the default's: row 0 BASE, row 1 BASE + the size's per-seed
    effects."""
    out = []
    for i, (name, d) in enumerate(zip(("s0", None, "s2"), per_size)):
        rows = ladder([BASE, [b + x for b, x in zip(BASE, d)]], params=[NS[i] + 5000] * 2)
        out.append((size(name, NS[i]), rows))
    return out


def one(per_size, floor=None):
    (change,) = changes(sized(per_size), floor)
    return change


JITTER = [0.001, -0.002, 0.0015, -0.001, 0.0005]


def shifted(m, jitter=JITTER, k=1.0):
    return [m + k * j for j in jitter]


@pytest.mark.parametrize("per_size, expected", [
    ([shifted(-0.05), shifted(-0.04), shifted(-0.05)], Transfer.HOLDS),
    ([shifted(0.05), shifted(0.05), shifted(0.04)], Transfer.HOLDS),               # worse at every size holds too
    ([shifted(-0.05), shifted(0.0), shifted(0.05)], Transfer.FLIPS),
    ([shifted(0.0), shifted(-0.02), shifted(-0.05)], Transfer.APPEARS),
    ([shifted(-0.05), shifted(-0.02), shifted(0.0)], Transfer.FADES),
    ([shifted(0.0), shifted(0.0005), shifted(-0.0005)], Transfer.NOISE),
])
def test_each_transfer_class_on_a_table_made_for_it(per_size, expected):
    c = one(per_size)
    assert c.transfer is expected, [x.row.vs.verdict for x in c.cells]     # the member, not its text


def test_a_borderline_end_leaves_the_change_open_where_noise_would_make_it_fade():
    c = one([shifted(-0.05), shifted(-0.05), shifted(-0.004, k=0.5)])
    assert [x.row.vs.verdict for x in c.cells][-1] == Verdict.BORDERLINE and c.trend.verdict == Verdict.WORSE
    assert c.transfer is Transfer.OPEN
    assert one([shifted(-0.05), shifted(-0.05), shifted(-0.0005)]).transfer is Transfer.FADES


def test_a_trend_past_the_spread_that_the_interval_does_not_support_is_not_a_trend():
    """Largest size settled better, smallest noise, and a contrast beyond the spread: 'appears' would follow, but
    the per-seed contrasts scatter so that the interval holds zero, so the change stays open."""
    z = [-1.26, -0.63, 0.0, 0.63, 1.26]
    small, large = [-0.005 + 0.02 * x for x in z], [-0.05 - 0.02 * x for x in z]      # opposite per-seed scatter
    c = one([small, shifted(-0.03), large])
    t = c.trend
    assert [x.row.vs.verdict for x in c.cells][::2] == [Verdict.NOISE, Verdict.BETTER]
    assert t.margin_spread > 0 and t.margin_interval < 0 and t.verdict != Verdict.BETTER
    assert c.transfer is Transfer.OPEN


def test_with_a_floor_the_effect_is_the_share_of_the_loss_above_it_and_the_slope_is_per_decade():
    per_size = [shifted(-0.05), shifted(-0.04), shifted(-0.03)]
    c = one(per_size, floor=1.5)
    first = c.cells[0]
    assert first.effect == pytest.approx([d / (b - 1.5) for d, b in zip(per_size[0], BASE)])
    assert effects(first.row, sized(per_size)[0][1][0], None) == pytest.approx(per_size[0])
    slope, low, high = c.slope
    assert slope == pytest.approx(c.trend.effect / math.log10(800_000 / 50_000))   # N from the runs' records
    assert low < slope < high


@pytest.mark.parametrize("effect_sd", [0.0, 0.3, 1.0, 2.0, 2.5, 3.0, 5.0, 12.0])
def test_an_effect_constant_across_sizes_is_rarely_called_appearing_or_fading(effect_sd):
    """effect_sd spans the committed changes (|Δ val| / pooled seed sd from 0.3 for RMSNorm to 11 for RoPE);
    measured: at most 0.6% of trials at any of them (docs/scale.md)."""
    for correlation in (0.0, 0.5):
        c = simulate_transfer(effect_sd, SEEDS, 10_000, seed=7, pair_correlation=0.5, size_correlation=correlation)
        assert c.rate(Transfer.APPEARS, Transfer.FADES) <= 0.05
    assert sum(c.counts.values()) == 10_000


def test_the_simulation_finds_a_real_trend():
    """Not a test that cannot fail: an effect growing from 0 to 3 seed sds is called appearing most of the time."""
    from modern_gpt.stats.calibration import judge
    from modern_gpt.stats.across_sizes import classify
    import numpy as np
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((2000, 2, SEEDS))
    row = ref * 0.7 + rng.standard_normal((2000, 2, SEEDS)) * 0.7 + np.array([0.0, -3.0])[None, :, None]
    verdicts = np.stack([judge(row[:, i], ref[:, i]).verdicts for i in range(2)], axis=1)
    d = row - ref
    trend = judge(d[:, 1], d[:, 0])
    found = classify(verdicts, trend.verdicts, trend.effect, d[:, 0].mean(1), d[:, 1].mean(1))
    assert (found == Transfer.APPEARS).mean() > 0.5


# ------------------------------------------------------------------------------------------------ the report

def results_of(per_size, floor=None) -> Results:
    pairs = sized(per_size)
    s = Settings(floor=floor, val_chars_per_token=1.0) if floor is not None else Settings()
    ladders = [Ladder("main", pairs[1][1], {"corpus": "`x.txt`"})] + [Ladder("scale", rows, size=sz.name)
                                                                      for sz, rows in (pairs[0], pairs[2])]
    return Results(ladders, s, sizes=tuple(sz for sz, _ in pairs))


def tables_of(text: str) -> list[list[list[str]]]:
    """Each table of the report as lists of cells, header then rows (md_tables; not the alignment line)."""
    return [[cells(line) for line in table if line.startswith("| ")] for table in tables(text)]


def test_the_scale_report_has_a_table_per_size_then_the_transfer_table_none_wider_than_9_columns(tmp_path):
    """Once one table of 17 columns (a column group per size, then the trend): every cell it had is still shown,
    each size's under its N, in a table a review can read without scrolling sideways."""
    per_size = [shifted(0.0), shifted(-0.02), shifted(-0.05)]
    results = results_of(per_size, floor=1.5)
    text, table = build_scale(results)
    assert text.startswith(W.SCALE_TITLE) and "**r = d / (L(k−1) − floor)**" in text
    provenance, *at_sizes, transfer = tables_of(text)
    assert all(len(row) <= 9 for t in tables_of(text) for row in t) and len(provenance[0]) == 2
    assert [t[0] for t in at_sizes] == [["change", f"{size} Δ val", "95% CI", "verdict", "mean r"]
                                        for size in ("s0 0.050M", "model: 0.200M", "s2 0.800M")]
    assert [[row[0] for row in t[1:]] for t in at_sizes] == [["+ RMSNorm"]] * 3     # a row per change
    (_, *s0), (_, *middle), (_, *s2) = (t[1] for t in at_sizes)
    assert re.fullmatch(r"[+-]0\.0000", s0[0])                                      # a mean effect of ±1e-16
    assert s0[1:] == ["[-0.0018, +0.0018]", "noise (no effect larger than the spread)", "+0.000"]
    assert middle == ["-0.0200", "[-0.0218, -0.0182]", "**better**", "-0.040"]
    assert s2 == ["-0.0500", "[-0.0518, -0.0482]", "**better**", "-0.100"]
    assert transfer == [["change", "trend of r (largest − smallest)", "95% CI", "per decade of N", "transfer"],
                        ["+ RMSNorm", "-0.100 (settled)", "[-0.100, -0.099]", "-0.083 [-0.083, -0.082]",
                         "**appears with size**"]]
    assert "**The full model against the baseline, at every size:** s0 Δ val" in text
    assert "| sizes |" in re.sub(" +", " ", text) and "N = 800,000" in text
    assert [(r["size"], r["params"]) for r in table] == [("s0", 50_000), ("model:", 200_000), ("s2", 800_000)]
    assert all(r["measure"] == "r" and r["transfer"] == "appears with size" for r in table)
    write_report(results, tmp_path)
    written = (tmp_path / "scale.md").read_bytes()
    assert written == text.encode() and (tmp_path / "scale.png").stat().st_size > 0
    assert (tmp_path / "scale.csv").read_text().splitlines()[0].startswith("row,variant,size,params,measure,effect")
    write_report(Results([Ladder("main", sized(per_size)[1][1])], Settings()), tmp_path)   # off: it stays
    assert (tmp_path / "scale.md").read_bytes() == written


def test_without_a_floor_the_report_uses_raw_d_and_says_so():
    text, table = build_scale(results_of([shifted(-0.05), shifted(-0.04), shifted(-0.05)]))
    assert "This corpus has no known floor" in text and "trend of d (largest − smallest)" in text
    assert [t[0][-1] for t in tables_of(text)[1:-1]] == ["mean d"] * 3
    assert {r["measure"] for r in table} == {"d"} and table[0]["effect"] == pytest.approx(-0.05)


def test_the_provenance_seeds_line_says_what_every_row_ran_and_each_row_that_ran_more():
    from types import SimpleNamespace as NS
    from modern_gpt.reporting.scale import seeds_line

    def row(label, n):
        return NS(label=label, runs=[NS(seed=s) for s in range(n)])
    pairs = [(NS(name="xs"), [row("Step 1 baseline", 8), row("+ RoPE", 5)]), (NS(name=None), [row("+ RoPE", 5)]),
             (NS(name="l"), [row("+ QK-norm", 12)])]
    assert seeds_line(pairs) == ("0, 1, 2, 3, 4 on every row of every size; more where settling asked for them (seeds, "
                                 "in the seed order): xs: Step 1 baseline 8; l: + QK-norm 12")
    assert seeds_line(pairs[1:2]) == "0, 1, 2, 3, 4 on every row of every size"
