"""Settling an open verdict (params.yaml settle:, settling/, `modern-gpt settle`): the design's checks, the
rule at the looks, the seeds asked for, its calibration rerun small, and the command on the shared smoke build."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from e2e import DVC, ONE_THREAD, ran, sh, status
from fakes import ROOT, default, plan_files, refused

from modern_gpt.settling.order import seed_order, sweep_looks, sweep_seed_order
from modern_gpt.pipeline.ladder_params import check_all
from modern_gpt.settling.looks import Design, judge_looks, look_text, settles
from modern_gpt.stats.sequential import (CALIBRATION_TRIALS, LEVELS_FILE, add_level, committed_levels, look_level,
                                         miscall, simulate_looks)
from modern_gpt.core.errors import ConfigError
from modern_gpt.settling.asked import Asked, asked_seeds
from modern_gpt.stats.paired import SPREAD_SDS, Verdict

LOOKS = (5, 8, 12, 20)


def settle(**values) -> dict:
    raw = default()
    raw["settle"] = {**raw["settle"], **values}
    return raw


# ------------------------------------------------------------------------------------------------ the design
@pytest.mark.parametrize("values, message", [
    ({"looks": [5, 12, 8]}, "settle.looks=[5, 12, 8]: must list seed counts in increasing order"),
    ({"looks": [3, 8], "scale_cap": None}, "settle.looks=[3, 8]: the first look must be the base seeds' count, 5"),
    ({"looks": [5, 8], "scale_cap": 12}, "settle.scale_cap=12: must be one of looks after the first (8)"),
    ({"runs": {"bias-5": {"slug": "bias", "seed": 6}}}, "settle.runs.bias-5: must be {slug: <slug>, seed: <seed>}"),
])
def test_a_bad_design_is_refused_in_one_line_before_any_run(values, message):
    refused(lambda: check_all(settle(**values)), message)


def test_a_design_without_a_committed_level_is_refused_naming_the_command_that_adds_it_and_that_command_adds_it(
        tmp_path):
    """The plan refuses a design stats/levels.csv lacks (the report never simulates one), the main ladder's and the
    grid's alike; the command it names adds the simulated level to the table, after which the design reads it (here
    on a copy of the table)."""
    lacking = settle(looks=[5, 9], scale_cap=None, runs={})
    grid = settle(looks=[5, 8], scale_cap=None, runs={})      # 5, 8 is committed; the grid's 4, 5, 8 is not
    grid["sweep"]["seeds"] = grid["seeds"][:4]
    for raw, field, n in ((lacking, "settle.looks", [5, 9]),
                          (grid, "the grid's looks (sweep.seeds' count, then settle.looks)", [4, 5, 8])):
        with pytest.raises(ConfigError) as e:
            check_all(raw)
        looks = " ".join(map(str, n))
        assert str(e.value) == (f"{field}={n}: no committed level for confidence 0.95, band 0.4; add it: "
                                f"modern-gpt levels {looks} --confidence 0.95 --band 0.4")
    table = tmp_path / "levels.csv"
    table.write_bytes(LEVELS_FILE.read_bytes())
    before = table.read_text(encoding="utf-8")
    level = add_level([5, 9], 0.95, 0.4, "a test", table)
    assert committed_levels(table)[((5, 9), 0.95, 0.4)] == level == look_level((5, 9)) and 0.95 < level < 1
    assert table.read_text(encoding="utf-8") == before + f"5 9,0.95,0.4,{CALIBRATION_TRIALS},{level:g},a test\n"
    assert add_level([5, 9], 0.95, 0.4, "again", table) == level and len(committed_levels(table)) == len(
        before.splitlines())


@pytest.mark.parametrize("runs, message", [
    ({"bias-5": {"slug": "bias", "seed": 5}}, "bias's seeds [5] are not the seed order's next ones up to a look"),
    ({f"bias-{s}": {"slug": "bias", "seed": s} for s in range(5, 21)}, "bias has 21 seeds, past its cap of 20"),
    ({f"nope-{s}": {"slug": "nope", "seed": s} for s in (5, 6, 7)}, "nope is no row of a ladder planned now"),
])
def test_added_runs_must_be_a_planned_rows_next_seeds_up_to_a_look_within_the_cap(runs, message):
    refused(lambda: plan_files(settle(runs=runs)), message)


def test_the_plan_lists_each_rows_added_seeds_and_the_order_skips_the_aa_copys_seeds():
    _, planned = plan_files(settle(runs={f"bias-{s}": {"slug": "bias", "seed": s} for s in (5, 6, 7)}))
    assert planned.looks == LOOKS and planned.seeds_of("bias") == (0, 1, 2, 3, 4, 5, 6, 7)
    assert planned.seeds_of("mlp") == (0, 1, 2, 3, 4)
    assert seed_order([0, 1, 2], [3, 4, 6], 6) == (0, 1, 2, 5, 7, 8)


def test_looks_off_is_one_setting_on_the_committed_params_its_runs_kept_each_comparison_judged_once_on_them_all():
    """`-S settle.looks=[]` alone on the committed params: scale_cap unused, settle.runs kept (their stages exist and
    have trained: the configs are the same, so nothing trains), and each comparison judged once, at
    report.confidence, on every seed both its rows ran."""
    from modern_gpt.reporting.collect import design
    on_configs, on = plan_files(default())
    off_configs, off = plan_files(settle(looks=[]))
    assert off_configs == on_configs and off.looks == () and off.added == on.added
    assert off.seeds_of("bias") == on.seeds_of("bias") and len(off.seeds_of("bias")) > len(off.seeds)
    d = design(off, False, 0.95, 0.4)
    assert not d.on and d.level == 0.95 and set(off.seeds_of("bias")) <= set(d.order)
    row = {s: 1.0 + 0.01 * s for s in off.seeds_of("bias")}
    ref = {s: 1.0 + 0.011 * s for s in off.seeds_of("mlp")}
    look = judge_looks(row, ref, d)
    assert look.seeds == tuple(sorted(set(row) & set(ref))) and look.comparison.confidence == 0.95


def test_the_sweeps_runs_take_seeds_from_sweep_seeds_then_the_main_tables_order_at_its_looks():
    """The grid's looks: sweep.seeds' count (3), then settle.looks past it; its runs' added seeds: seeds 3, 4 (the
    main table's, which its rows at train.lr have) and on; anything else is refused in one line."""
    sweep_runs = {f"sweep_qk_norm_x4-{s}": {"slug": "sweep_qk_norm_x4", "seed": s} for s in (3, 4)}
    _, planned = plan_files(settle(runs=sweep_runs))
    assert planned.seeds_of("sweep_qk_norm_x4") == (0, 1, 2, 3, 4) and planned.seeds_of("sweep_qk_norm_x32") == (0, 1, 2)
    assert sweep_looks(LOOKS, 3) == (3, 5, 8, 12, 20) and sweep_looks((), 3) == (3,)
    assert sweep_seed_order([0, 2, 4], [0, 1, 2, 3, 4], [5], 8) == (0, 2, 4, 1, 3, 6, 7, 8)
    refused(lambda: plan_files(settle(runs={"sweep_qk_norm_x4-3": {"slug": "sweep_qk_norm_x4", "seed": 3}})),
            "sweep_qk_norm_x4's seeds [3] are not the seed order's next ones up to a look ([3] would give 4; looks "
            "[3, 5, 8, 12, 20])")
    refused(lambda: plan_files(settle(runs={"sweep_qk_norm_x8-3": {"slug": "sweep_qk_norm_x8", "seed": 3}})),
            "sweep_qk_norm_x8 is no row of a ladder planned now, nor a run of its learning-rate grid")


# ------------------------------------------------------------------------------------------------ the rule
def test_a_comparison_stops_at_the_look_that_settles_it_and_an_open_one_asks_for_the_next():
    design = Design((2, 3, 4), (0, 1, 2, 3), 0.95, 0.4)
    ref = {s: 1.0 + 0.01 * s for s in range(4)}
    clear = judge_looks({s: v - 0.5 for s, v in ref.items()}, ref, design)       # a constant shift: better at 2
    assert clear.settled and clear.n == 2 and clear.comparison.verdict == Verdict.BETTER
    assert look_text(clear) == "better, settled at 2 seeds"
    row = {0: 1.0, 1: 1.02}                                   # open at 2 seeds (two pairs, a wide interval)
    noisy = judge_looks(row, ref, design)
    assert not settles(noisy.comparison) and noisy.next == 3 and noisy.seeds == (0, 1)
    assert look_text(noisy).endswith("open at 2 seeds: next look at 3")
    capped = judge_looks({0: 1.0, 1: 1.05, 2: 0.99, 3: 1.06}, ref, design)
    assert capped.at_cap and capped.n == 4 and "open at the cap (4 seeds): rules out effects beyond ±" in \
        look_text(capped)


def test_seeds_go_to_each_row_an_open_comparison_reads_and_to_no_other():
    design = Design((2, 3, 4), (0, 1, 2, 3), 0.95, 0.4)
    ref = {s: 1.0 + 0.01 * s for s in range(2)}
    settled = judge_looks({s: v - 0.5 for s, v in ref.items()}, ref, design)
    open_ = judge_looks({0: 1.0, 1: 1.02}, ref, design)
    found = [Asked("a: r1", settled, ("r0", "r1")), Asked("a: r2", open_, ("r1", "r2")),
             Asked("a: r3", settled, ("r2", "r3"))]
    assert asked_seeds(found, {"r0": 2, "r1": 2, "r2": 2, "r3": 2}) == {"r1": (2,), "r2": (2,)}
    assert asked_seeds(found, {"r0": 2, "r1": 3, "r2": 2, "r3": 2}) == {"r2": (2,)}    # r1 has them already
    assert asked_seeds(found[:1], {"r0": 2, "r1": 2}) == {}


def test_the_calibration_rerun_small_keeps_the_one_look_error_and_the_other_targets():
    """The simulation of the whole procedure, small: at 95% at every look, an effect as large as the spread is
    called no effect more often than one look calls it; at the calibrated level no more often (within the
    simulation's noise); A/A changes stay under 1% and a 3-sigma effect is found at least 88% of the time."""
    level = Design(LOOKS, (), 0.95, 0.4).level                       # the committed table's (levels.csv)
    assert 0.95 < level < 0.9995 and level == round(level, 3)
    for rho in (0.0, 0.5):
        one = miscall(LOOKS[:1], 0.95, 0.4, rho, trials=8000)
        assert miscall(LOOKS, 0.95, 0.4, rho, trials=8000) > 1.5 * one                  # looking again inflates it
        assert miscall(LOOKS, level, 0.4, rho, trials=8000) <= one + 0.01
        aa = simulate_looks(0.0, LOOKS, 8000, 1, pair_correlation=rho, confidence=level)
        assert aa.rate <= 0.01
        found = simulate_looks(3.0, LOOKS, 8000, 2, pair_correlation=rho, confidence=level)
        assert found.rate >= 0.88 and found.mean_seeds < 12
    heavy = simulate_looks(SPREAD_SDS, LOOKS, 8000, 3, confidence=level, noise="t3")
    assert heavy.no_effect / heavy.trials <= miscall(LOOKS[:1], 0.95, 0.4, 0.0, trials=8000) + 0.02


# ------------------------------------------------------------------------------------------------ the command
@pytest.mark.slow
def test_settle_adds_seeds_only_where_a_verdict_is_open_and_dvc_repro_of_the_result_trains_nothing(options_repo,
                                                                                                tmp_path):
    """On the options build (three rows, the A/A copy on seeds 5 and 6, which the added seeds skip)."""
    repo = options_repo
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["settle"] = {"looks": [2, 3], "scale_cap": None, "runs": {}}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**ONE_THREAD, "PYTHONPATH": str(repo / "src")}
    out = sh([sys.executable, "-m", "modern_gpt", "settle"], repo, env=env).stdout
    look1 = out.split("settle, look 2")[0]
    opened = {line.split(": ", 2)[2].rsplit(" (", 1)[0] for line in look1.splitlines()
              if line.startswith("  open: main")}
    rows = json.loads((repo / "configs" / "plan.json").read_text())["ladders"][0]["rows"]
    labels = {r["label"]: (above["slug"], r["slug"]) for above, r in zip(rows, rows[1:])}
    labels[f"full model against {rows[0]['label']}"] = (rows[0]["slug"], rows[-1]["slug"])
    wanted = {slug for label in opened for slug in labels[label]}
    runs = yaml.safe_load((repo / "params.yaml").read_text())["settle"]["runs"] or {}
    assert {r["slug"] for r in runs.values()} == wanted and all(r["seed"] == 2 for r in runs.values())
    assert "settle, look 2" in out or not wanted
    assert status(repo) == set()
    again = (repo / "params.yaml").read_bytes()
    out = sh([sys.executable, "-m", "modern_gpt", "settle"], repo, env=env).stdout
    assert (repo / "params.yaml").read_bytes() == again and "training runs" not in out     # nothing more to do
    lines = [line.split(",") for line in (repo / "reports" / "runs.csv").read_text().splitlines()[1:]]
    assert {(x[5], x[4]) for x in lines if x[0] == "run" and x[4] == "2"} == {(slug, "2") for slug in wanted}
    # a clone of the result with the runs in the cache: dvc repro trains nothing, and dvc status is clean after it
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "settled"], repo)
    clone = tmp_path / "clone"
    sh(["git", "clone", "-q", str(repo), str(clone)], tmp_path)
    sh([*DVC, "config", "--local", "cache.dir", str(repo / ".dvc" / "cache")], clone)
    done = ran(sh([*DVC, "repro"], clone, env=env).stdout)
    assert not {s for s in done if s.startswith(("run@", "settle@", "aa@", "loo@"))}
    assert status(clone) == set()


@pytest.mark.slow
def test_each_committed_level_is_what_simulating_its_design_gives():
    """stats/levels.csv, the level each design of the committed params (and of the end-to-end tests) uses, simulated
    again (look_level, uncached): the report reads the table, so this is what keeps it honest. About 20 s here."""
    sweep = len(yaml.safe_load((ROOT / "params.yaml").read_text())["sweep"]["seeds"])     # the grid's own first look
    levels = committed_levels()
    assert {looks for looks, *_ in levels} >= {tuple(LOOKS), tuple(LOOKS[:3]), sweep_looks(LOOKS, sweep)}
    assert len(levels) == len(LEVELS_FILE.read_text(encoding="utf-8").splitlines()) - 1     # every line at its trials
    for (looks, confidence, band_sds), level in levels.items():
        assert look_level.__wrapped__(looks, confidence, band_sds) == level, looks


def settle_tables(trials: int = 10_000) -> str:
    """docs/statistics.md's tables of the looks (`pytest tests/test_settle.py -k settle_tables -s` prints them)."""
    level = look_level(LOOKS)
    out = [f"| looks {', '.join(map(str, LOOKS))} at {100 * level:.4g}% | normal, correlation 0 | normal, 0.5 | "
           "t (3 df), 0 | t (3 df), 0.5 |", "|---|---|---|---|---|"]

    def cells(f) -> str:
        return " | ".join(f(noise, rho) for noise in ("normal", "t3") for rho in (0.0, 0.5))

    def sim(effect, noise, rho, looks=LOOKS, conf=level, **kw):
        return simulate_looks(effect, looks, trials, 7, pair_correlation=rho, confidence=conf, noise=noise, **kw)

    out.append("| A/A called better or worse | " + cells(lambda n, r: f"{sim(0.0, n, r).rate:.1%}") + " |")
    out.append("| a 3 σ effect found | " + cells(lambda n, r: f"{sim(3.0, n, r).rate:.1%}") + " |")
    for name, args in (("one look at 5 seeds, 95%", dict(looks=LOOKS[:1], conf=0.95)),
                       ("every look at 95% (uncorrected)", dict(conf=0.95)), ("the looks as calibrated", {})):
        out.append(f"| an effect as large as the spread called no effect: {name} | "
                   + cells(lambda n, r: f"{sim(SPREAD_SDS, n, r, **args).no_effect / trials:.1%}") + " |")
    for effect in (0.0, SPREAD_SDS, 3.0):
        out.append(f"| seeds per comparison, effect {effect:g} σ (mean) | "
                   + cells(lambda n, r: f"{sim(effect, n, r).mean_seeds:.1f}") + " |")
        out.append(f"| open at the cap, effect {effect:g} σ | "
                   + cells(lambda n, r: f"{sim(effect, n, r).open_at_cap / trials:.1%}") + " |")
    for rerun in (0.19, 0.38):
        def worst(n, r):
            runs = [sim(e / 4, n, r, rerun_sd=rerun) for e in range(0, 29, 2)]
            return f"{max(x.flip_rate for x in runs):.1%} / {max(x.contradiction_rate for x in runs):.1%}"
        out.append(f"| worst flips / contradictions over effects 0 to 7 σ, rerun sd {rerun} | " + cells(worst) + " |")
    return "\n".join(out)


def test_settle_tables():
    """docs/statistics.md shows the table as the simulation prints it (deterministic from its seeds)."""
    table = settle_tables()
    print("\n" + table)
    assert table in (Path(__file__).resolve().parents[1] / "docs" / "statistics.md").read_text(encoding="utf-8")
