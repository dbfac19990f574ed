"""The sweep (the learning-rate grid): spikes and divergence counted, the best rate per row, the comparison at the
best rates and the report's section, on run records built here; and the training loop's divergence stop on a real
run."""

import dataclasses
import math

import pytest
import torch

from fakes import run_record
from md_tables import cells
from modern_gpt.records.run_record import RunRecord
from modern_gpt.config import ModelConfig, TrainConfig
from modern_gpt.reporting.plots import sweep_plot, sweep_table
from modern_gpt.reporting.pages import build_main
from modern_gpt.reporting.results import Ladder, Results, SweepRow, ladder_results
from modern_gpt.settling.looks import Design
from modern_gpt.reporting.settings import Settings
from modern_gpt.settling.asked import Asked, asked_seeds
from modern_gpt.stats.paired import pct
from modern_gpt.reporting.sweep import expected_max, selection_bias, spikes, sweep_cell, sweep_pairs
from modern_gpt.training.loop import Watch, train

SMOOTH = [3.0, 2.5, 2.2, 2.0, 1.9, 1.85, 1.8]


@pytest.mark.parametrize("losses, threshold, count", [
    (SMOOTH, 0.5, 0),
    ([3.0, 2.0, 2.4, 2.0], 0.5, 0),                  # a rise of 0.4: under the threshold
    ([3.0, 2.0, 2.6, 2.0], 0.5, 1),                  # 0.6 above the running minimum
    ([3.0, 2.0, 2.6, 2.7, 2.8, 2.0], 0.5, 1),        # consecutive steps above it: one spike
    ([3.0, 2.0, 2.6, 2.0, 2.7, 1.5, 2.1], 0.5, 3),   # three episodes; the minimum moves to 1.5
    ([3.0, 2.0, 2.6], 1.0, 0),
    ([], 0.5, 0),
])
def test_spikes_are_episodes_above_the_running_minimum(losses, threshold, count):
    assert spikes(losses, threshold) == count


def test_spikes_count_from_the_end_of_warm_up_against_the_minimum_since_step_0():
    losses = [3.0, 2.0, 2.9, 2.0, 1.9, 2.6, 1.8]     # a spike at step 2 (in warm-up) and one at step 5
    assert spikes(losses, 0.5) == 2 and spikes(losses, 0.5, start=3) == 1 and spikes(losses, 0.5, start=6) == 0


def test_expected_max_of_normals_matches_known_values():
    assert expected_max(1) == 0.0
    assert expected_max(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-4)   # 0.5642
    assert expected_max(3) == pytest.approx(0.8463, abs=1e-3)
    assert expected_max(5) == pytest.approx(1.1630, abs=1e-3)


def test_watch_stops_non_finite_and_clearly_worse_than_uniform_after_warm_up_only():
    w = Watch(uniform=math.log(50), warmup_iters=5)                  # ln 50 = 3.912; x 1.1 = 4.303
    assert not w.diverges(0, 3.95)                         # a fresh model starts a little above ln V
    assert not w.diverges(3, 4.5)                          # in warm-up
    assert not w.diverges(6, 4.2)                          # above ln V, within its 10%: the noise of no learning
    assert w.diverges(7, 4.4) and w.stopped
    assert Watch(math.log(50), 0).diverges(0, float("nan"))
    assert Watch(math.log(50), 0).diverges(0, float("inf"))


def test_a_huge_learning_rate_diverges_and_the_run_records_every_step_loss():
    torch.set_num_threads(1)
    cfg = ModelConfig(vocab_size=16, n_layer=1, n_head=2, n_kv_head=2, n_embd=16, block_size=8)
    data = torch.randint(0, 16, (2000,), generator=torch.Generator().manual_seed(0))
    calm = TrainConfig(iters=30, batch_size=4, lr=3e-3, min_lr=3e-4, warmup_iters=3, eval_interval=10, eval_iters=1)
    _, trained = train(cfg, calm, data, data, seed=0, progress=False)
    assert not trained.diverged and len(trained.losses) == 30 and trained.losses[0] > trained.losses[-1]
    wild = dataclasses.replace(calm, lr=50.0, min_lr=5.0, grad_clip=0.0)
    _, trained = train(cfg, wild, data, data, seed=0, progress=False)
    assert trained.diverged and trained.steps < 30 and len(trained.losses) == trained.steps


ONE_LOOK = Design((3,), (0, 1, 2), 0.95, 0.25)         # settle off: the grid judged once, on its 3 seeds


def swept(rows: dict[str, dict[float, list[float | None]]], curves: dict | None = None,
          threshold: float = 0.5) -> tuple[list, list[SweepRow]]:
    """A two-row ladder (r0, r1) and its sweep: {row: {multiple: per-seed val}}; multiple 1 is the ladder's."""
    curves = curves or {}

    def records(slug, m, vals):
        return [dataclasses.replace(run_record(seed, v, slug=slug), losses=tuple(curves.get((slug, m, seed), SMOOTH)),
                                    diverged=v is None, train=TrainConfig(warmup_iters=1, lr=0.002 * m,
                                                                             min_lr=0.0002 * m))
                for seed, v in enumerate(vals)]

    ladder = ladder_results([(slug, label, records(slug, 1.0, rows[slug][1.0]))
                             for slug, label in (("r0", "+ GQA"), ("r1", "+ QK-norm"))])
    sweep = [SweepRow(r, tuple(sweep_cell(r.slug if m == 1.0 else f"sweep_{r.slug}_x{m:g}", m, 0.002 * m,
                                          r.runs if m == 1.0 else records(r.slug, m, vals), threshold)
                               for m, vals in sorted(rows[r.slug].items()))) for r in ladder]
    return ladder, sweep


def test_the_best_rate_is_the_lowest_mean_among_rates_where_no_seed_diverged():
    ladder, sweep = swept({"r0": {0.5: [1.10, 1.12, 1.11], 1.0: [1.00, 1.02, 1.01], 4.0: [0.90, None, 0.80]},
                           "r1": {0.5: [1.00, 1.01, 1.02], 1.0: [0.97, 0.98, 0.99], 4.0: [0.95, 0.96, 0.94]}})
    assert sweep[0].best.multiple == 1.0             # x4 has the lowest mean of its finite seeds, but one diverged
    assert sweep[1].best.multiple == 4.0
    assert sweep[1].best.val.mean == pytest.approx(0.95)


def test_the_comparison_at_the_best_rates_says_when_the_verdict_changes():
    # at train.lr r1 is no better than r0; at their best rates (r0 at x1, r1 at x4) it clearly is
    ladder, sweep = swept({"r0": {1.0: [1.000, 1.010, 1.005], 4.0: [1.100, 1.110, 1.105]},
                           "r1": {1.0: [1.004, 1.006, 1.008], 4.0: [0.900, 0.905, 0.910]}})
    [pair] = sweep_pairs(sweep, ladder, ONE_LOOK)
    assert pair.main.verdict in ("noise", "borderline") and pair.vs.verdict == "better"
    text = build_main(Results([Ladder("main", ladder, sweep=sweep, pairs=[pair])], Settings(), uniform=3.9)).markdown
    assert "## Learning rate" in text and "![validation loss against learning rate" in text
    assert "**+ QK-norm at lr 0.008 against + GQA at lr 0.002** (each at its best rate)" in text
    assert "The verdict changes: at lr 0.002 for both it was" in text
    assert "chosen on the seeds that judge it" in text


def test_at_the_sweeps_looks_the_best_rates_stay_the_first_looks_and_later_seeds_settle_the_pair():
    """Open at the grid's 3 seeds, the pair at the best rates (r0 at x1, r1 at x4) is judged again on the seeds
    settle added to those two cells (the table and the best rates stay on the first 3), and settles at 5; the open
    pair asks for the two best-rate runs' next seeds, and the report says where it settled."""
    ladder, sweep = swept({"r0": {1.0: [1.00, 1.03, 1.00], 4.0: [1.10, 1.11, 1.12]},
                           "r1": {1.0: [1.02, 1.03, 1.04], 4.0: [0.99, 1.00, 0.96]}})
    design = Design((3, 5), (0, 1, 2, 3, 4), 0.95, 0.25)
    [first] = sweep_pairs(sweep, ladder, design)
    assert not first.look.settled and first.look.next == 5 and first.look.seeds == (0, 1, 2)
    assert asked_seeds([Asked("grid", first.look, ("r0", "sweep_r1_x4"))], {"r0": 3, "sweep_r1_x4": 3}) == {
        "r0": (3, 4), "sweep_r1_x4": (3, 4)}
    later = {"r0": [run_record(s, v, slug="r0") for s, v in ((3, 1.01), (4, 1.02))],
             "r1": [run_record(s, v, slug="sweep_r1_x4") for s, v in ((3, 0.97), (4, 0.98))]}
    grown = [SweepRow(r.row, tuple(dataclasses.replace(c, later=tuple(later[r.row.slug])) if c is r.best else c
                                   for c in r.cells)) for r in sweep]
    assert [r.best.multiple for r in grown] == [1.0, 4.0]
    [pair] = sweep_pairs(grown, ladder, design)
    assert pair.look.settled and pair.look.seeds == (0, 1, 2, 3, 4) and pair.vs.verdict == "better"
    assert pair.vs.confidence == design.level and pair.vs.n_pairs == 5
    text = build_main(Results([Ladder("main", ladder, sweep=grown, pairs=[pair])], Settings(), uniform=3.9)).markdown
    assert "**+ QK-norm at lr 0.008 against + GQA at lr 0.002** (each at its best rate)" in text
    assert ": **better**, settled at 5 seeds." in text
    assert f"fixed there; the comparison at the best rates is judged at the grid's looks (3, 5 seeds, a " \
           f"{pct(design.level)} interval at each" in text
    assert "1.0100 ± 0.0173" in text                      # r0's cell at x1: its mean on the first 3 seeds alone


def test_spikes_and_divergence_are_counted_per_row_and_rate_and_the_stability_claim_is_judged():
    spiky = [3.0, 2.0, 2.9, 2.0, 1.9]                                       # one spike of 0.9
    ladder, sweep = swept(
        {"r0": {1.0: [1.00, 1.01, 1.02], 8.0: [1.20, None, 1.25]}, "r1": {1.0: [0.99, 1.00, 1.01], 8.0: [1.0, 1.1, 1.05]}},
        curves={("r0", 8.0, 0): spiky, ("r0", 8.0, 2): spiky})
    hot = sweep[0].cells[1]
    assert hot.spikes == (1, 0, 1) and hot.seeds_spiked == 2 and hot.val.n_diverged == 1 and hot.unstable
    assert not sweep[1].cells[1].unstable
    [pair] = sweep_pairs(sweep, ladder, ONE_LOOK)
    text = build_main(Results([Ladder("main", ladder, sweep=sweep, pairs=[pair])], Settings(), uniform=3.9)).markdown
    assert ("At lr 0.016 (×8), + GQA: spikes in 2/3 seeds (2 in all), diverged 1/3; + QK-norm: spikes in 0/3 seeds "
            "(0 in all), diverged 0/3. + QK-norm removed that instability.") in text
    rows = [cells(line) for line in text[text.index("## Learning rate"):].splitlines() if line.startswith("| + ")]
    assert rows[1] == ["+ GQA", "0.016 (×8)", "1.2250 ± 0.0354 (1/3 diverged)", "2", "2/3", "1/3", ""]
    assert rows[0][-1] == "best" and rows[2][-1] == "best"
    table = sweep_table(sweep)
    assert [(r["row"], r["multiple"], r["spikes"], r["diverged"], r["best"]) for r in table] == [
        ("r0", 1.0, 0, 0, True), ("r0", 8.0, 2, 1, False), ("r1", 1.0, 0, 0, True), ("r1", 8.0, 0, 0, False)]


def test_a_stable_sweep_says_it_does_not_test_the_claim():
    ladder, sweep = swept({"r0": {1.0: [1.00, 1.01, 1.02], 2.0: [1.0, 1.0, 1.0]},
                           "r1": {1.0: [0.99, 1.00, 1.01], 2.0: [0.99, 0.99, 0.99]}})
    pairs = sweep_pairs(sweep, ladder, ONE_LOOK)
    text = build_main(Results([Ladder("main", ladder, sweep=sweep, pairs=pairs)], Settings())).markdown
    assert "+ GQA neither spiked nor diverged at any rate of the grid, so the grid does not test" in text


def test_selection_bias_is_the_expected_best_of_k_equal_means():
    ladder, sweep = swept({"r0": {1.0: [1.0, 1.1, 1.2], 2.0: [1.0, 1.1, 1.2], 4.0: [1.0, 1.1, 1.2]},
                           "r1": {1.0: [1.0, 1.1, 1.2], 2.0: [1.0, 1.1, 1.2], 4.0: [1.0, 1.1, 1.2]}})
    assert selection_bias(sweep) == pytest.approx(expected_max(3) * 0.1 / math.sqrt(3))


def test_the_plot_is_written_with_and_without_a_sweep(tmp_path):
    ladder, sweep = swept({"r0": {1.0: [1.00, 1.01, 1.02], 8.0: [None, None, None]},
                           "r1": {1.0: [0.99, 1.00, 1.01], 8.0: [1.0, 1.1, 1.05]}})
    sweep_plot(sweep_table(sweep), tmp_path / "a.png")
    sweep_plot([], tmp_path / "b.png")
    assert (tmp_path / "a.png").stat().st_size > 1000 and (tmp_path / "b.png").stat().st_size > 1000


def test_no_sweep_no_section():
    ladder, _ = swept({"r0": {1.0: [1.00, 1.01, 1.02]}, "r1": {1.0: [0.99, 1.00, 1.01]}})
    assert "## Learning rate" not in build_main(Results([Ladder("main", ladder)], Settings())).markdown


def test_run_records_keep_their_step_losses_through_json():
    record = dataclasses.replace(run_record(0, 1.0), losses=(3.0, 2.5))
    assert RunRecord.from_dict(record.to_dict()).losses == (3.0, 2.5)
