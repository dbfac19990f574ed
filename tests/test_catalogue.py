"""The catalogue (params.yaml catalogue:, reports/catalogue.md): a star, each change alone on the book's design,
each compared with row 0 by the main table's rule at the looks; its plan, its comparisons and the seeds settle asks
for, its words beside each paper's claim, and the simulation that a star comparison errs as a lone one does."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import one_line, run_record
from modern_gpt.changes import Claim
from modern_gpt.changes.builtin import every
from modern_gpt.config.params import read_yaml
from modern_gpt.core.errors import ConfigError
from modern_gpt.pipeline.ladder_params import parse
from modern_gpt.pipeline.plan import plan
from modern_gpt.records.inputs import CorpusFile, CorpusMeta, SplitSize
from modern_gpt.records.stages import LadderName
from modern_gpt.reporting.catalogue import here
from modern_gpt.settling.looks import Design, judge_looks
from modern_gpt.stats.sequential import simulate_looks
from modern_gpt.reporting.results import Ladder, ladder_results
from modern_gpt.reporting.comparisons import comparisons
from modern_gpt.settling.asked import asked_seeds
from modern_gpt.stats.star import simulate_star
from modern_gpt.stats.paired import NO_EFFECT, SPREAD_SDS, Verdict, t_quantile

ROOT = Path(__file__).resolve().parents[1]

META = CorpusMeta(CorpusFile("corpus.txt", 110_000, "", 110_000), 0.1, "char", 48, SplitSize(100_000, 100_000),
                  SplitSize(10_000, 10_000))
CATALOGUE = ["sandwich_norm", "value_embeds", "partial_rope", "diff_attn", "gated_attn", "smear", "mtp", "z_loss",
             "moe"]


def catalogue_on(ladder=CATALOGUE) -> dict:
    raw = read_yaml(ROOT / "params.yaml")
    raw["catalogue"]["ladder"] = list(ladder)
    return raw


def test_the_committed_catalogue_lists_six_or_more_published_changes_each_with_its_claim_using_every_plug_point():
    raw = read_yaml(ROOT / "params.yaml")
    assert raw["catalogue"]["ladder"] == []                              # off by default, as the second ladder
    changes = {c.name: c for c in every()}
    listed = [changes[name] for name in raw["catalogue"]["model"]]
    assert len(listed) >= 6 and all(isinstance(c.claim, Claim) and c.claim.paper and c.claim.scale for c in listed)
    assert not set(raw["catalogue"]["model"]) & set(raw["beyond"]["model"])    # past the second ladder's seven


def test_each_catalogue_row_is_the_books_design_with_one_change_alone_and_carries_its_claim():
    configs, planned = plan(parse(catalogue_on()), META)
    book = configs["qk_norm"].model.to_dict()
    lp = planned.ladder(LadderName.CATALOGUE)
    assert lp.star and [r.slug for r in lp.rows] == ["qk_norm", *(f"catalogue_{c}" for c in CATALOGUE)]
    for row, name in zip(lp.rows[1:], CATALOGUE):
        mine = configs[row.slug].model.to_dict()
        assert {k: v for k, v in mine.items() if book.get(k) != v} == {name: catalogue_on()["catalogue"]["model"][name]}
        assert row.claim == next(c for c in every() if c.name == name).claim
    assert planned.ladder(LadderName.BEYOND) is None                 # the second ladder stays off: beyond.md alone


def test_a_bad_catalogue_value_is_one_line_on_or_off():
    raw = catalogue_on(["partial_rope"])
    raw["catalogue"]["model"]["partial_rope"] = 0.3
    assert "catalogue.model.partial_rope=0.3: allowed values are 0.0, 0.25, 0.5" in one_line(lambda: parse(raw),
                                                                                              ConfigError)
    raw["catalogue"]["ladder"] = []
    assert "partial_rope=0.3" in one_line(lambda: parse(raw), ConfigError)
    raw = catalogue_on(["nope"])
    assert "ladder=['nope']: must list flags given a value" in one_line(lambda: parse(raw), ConfigError)


DESIGN = Design((3, 5, 8), tuple(range(8)), 0.95, 0.4)


def star(values: dict[str, list[float]]) -> Ladder:
    """A catalogue ladder of fake runs: row 0 'qk_norm', then each row, its val loss per seed."""
    rows = [(slug, slug, [run_record(seed=s, val=v, slug=slug) for s, v in enumerate(vals)])
            for slug, vals in values.items()]
    return Ladder(LadderName.CATALOGUE, ladder_results(rows, DESIGN, star=True), design=DESIGN)


def test_each_star_row_is_judged_against_row_0_and_settle_adds_seeds_to_row_0_and_the_open_rows_only():
    base = [1.00, 1.01, 0.99, 1.00, 1.02]
    ladder = star({"qk_norm": base,
                   "catalogue_a": [v - 0.05 for v in base],                      # clearly better: settles at 3
                   "catalogue_b": [v + d for v, d in zip(base, [0.03, -0.02, 0.025, -0.03, 0.02])],   # open
                   "catalogue_c": [v + 0.05 for v in base]})                     # clearly worse
    a, b, c = ladder.rows[1:]
    for row in (a, b, c):                                   # against row 0, not the row above
        assert row.look.comparison == judge_looks({r.seed: r.val_loss for r in row.runs},
                                                  {r.seed: r.val_loss for r in ladder.rows[0].runs}, DESIGN).comparison
    assert a.look.settled and c.look.settled and a.look.n == 3
    found = comparisons(type("R", (), {"ladders": [ladder], "sizes": ()})())
    assert [f.slugs for f in found] == [("qk_norm", "catalogue_a"), ("qk_norm", "catalogue_b"),
                                        ("qk_norm", "catalogue_c")]
    opened = [f for f in found if not f.look.settled]
    assert opened and {s for f in opened for s in f.slugs} == {"qk_norm", "catalogue_b"}
    asked = asked_seeds(found, {r.slug: len(r.runs) for r in ladder.rows})
    assert asked == {"qk_norm": (5, 6, 7), "catalogue_b": (5, 6, 7)}   # row 0 and the open row; never a or c


@pytest.mark.parametrize("effect, rows, claim", [
    ("lower", -0.05, "claim holds here"),
    ("higher", -0.05, "the opposite here"),
    ("none", -0.05, "lower val loss here, where it claims none"),
    ("speed", -0.05, "not tested here"),
    ("lower", 0.0, "no effect larger than ±{bound} here"),
    ("none", 0.0, "claim holds here: no effect larger than ±{bound} here"),
])
def test_a_verdict_is_set_against_its_claim_in_words(effect, rows, claim):
    """The whole phrase, the bound included: the far end of the interval the verdict "no effect larger than the
    spread" read (ruled_out), at the look that settled it."""
    base = [1.00, 1.01, 0.99, 1.00, 1.02, 1.0, 1.01, 0.995]
    other = [v + rows + (0.0002 * (-1) ** i if rows == 0 else 0) for i, v in enumerate(base)]
    row = star({"qk_norm": base, "catalogue_x": other}).rows[1]
    c = row.look.comparison
    assert row.look.settled and (c.verdict == Verdict.BETTER if rows else c.noise_kind == NO_EFFECT)
    bound = abs(c.effect) + t_quantile(c.confidence, c.n_pairs - 1) * c.sd_diff / c.n_pairs ** 0.5
    assert here(row.look, Claim("Someone 2025", effect, "1B params")) == claim.format(bound=f"{bound:.4f}")


def test_a_comparison_open_at_the_cap_says_so():
    base = [1.00, 1.01, 0.99, 1.00, 1.02, 1.0, 1.01, 0.995]
    near = [v + 0.016 + d for v, d in zip(base, [0.003, -0.002, 0.001, -0.003, 0.002, -0.001, 0.002, -0.002])]
    row = star({"qk_norm": base, "catalogue_x": near}).rows[1]       # worse by about the spread: borderline
    assert not row.look.settled and row.look.next is None
    assert here(row.look, Claim("Someone 2025", "lower", "1B")) == "open at the cap (8 seeds)"


def test_a_star_comparison_errs_as_a_lone_comparison_and_the_family_errs_more():
    """Each comparison of a star shares row 0's seeds with the others; its verdicts' rates are a lone pair's (within
    the simulations' error), while some comparison of several without an effect is called a change more often."""
    looks, trials = (5, 8, 12, 20), 4000
    level = Design(looks, (), 0.95, 0.4).level                     # the committed table's
    effects = [0.0, 0.0, 0.0, 0.5, SPREAD_SDS, 0.0]
    s = simulate_star(effects, looks, trials, 7, pair_correlation=0.5, confidence=level)
    for k, effect in enumerate(effects):
        lone = simulate_looks(effect, looks, trials, 100 + k, pair_correlation=0.5, confidence=level)
        for mine, theirs in ((s.worse[k], lone.worse), (s.no_effect[k], lone.no_effect),
                             (s.open_at_cap[k], lone.open_at_cap)):
            p = (mine + theirs) / (2 * trials)
            assert abs(mine - theirs) / trials <= 4 * (2 * p * (1 - p) / trials) ** 0.5 + 1 / trials
    null = [k for k, e in enumerate(effects) if e == 0]
    calls = [s.better[k] + s.worse[k] for k in null]               # each comparison without an effect called a change
    assert max(calls) < s.familywise <= sum(calls)                 # some stars err on two comparisons, none on a real one
    seeds = lambda star: sum(n * c for n, c in zip(looks, star.row0_seeds)) / trials     # row 0's mean seeds
    assert seeds(s) > max(simulate_looks(e, looks, trials, 200 + k, pair_correlation=0.5,
                                         confidence=level).mean_seeds for k, e in enumerate(effects))
    one = simulate_star([SPREAD_SDS], looks, trials, 9, pair_correlation=0.5, confidence=level)
    lone = simulate_looks(SPREAD_SDS, looks, trials, 11, pair_correlation=0.5, confidence=level)
    assert abs(seeds(one) - lone.mean_seeds) < 0.5                 # alone, row 0 runs what its one comparison asks


def test_every_change_file_declares_itself_without_torch():
    """The plan and review read the declarations: each file's top level imports no torch (its model code does, in
    plugs(), when a model is built)."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['torch'] = None\n"
            "from modern_gpt.changes.builtin import every\n"
            "print(sorted(c.name for c in every() if c.plugs is not None))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert set(CATALOGUE) < set(eval(out.stdout))
