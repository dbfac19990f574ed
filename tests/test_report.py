"""The report as a function of run results: verdicts, warnings and tables, on cases built here."""

import math

import pytest

from modern_gpt.report import RowRuns, Settings, build, memorised, overfitting

LABELS = ["Step 1 baseline", "+ RMSNorm", "+ RoPE"]


def run(seed: int, val: float | None, train: float | None = None, params: int = 100_000,
        curve: list[float] | None = None) -> dict:
    diverged = val is None
    points = curve if curve is not None else ([] if diverged else [3.0, 2.0, val])
    return {
        "seed": seed, "diverged": diverged, "val_loss": val, "train_loss": None if diverged else (train or val),
        "val_bpc": None if diverged else val / math.log(2), "params": params, "params_non_embedding": params - 5000,
        "secs": 10.0, "curve": [{"iter": 100 * i, "train": v, "val": v} for i, v in enumerate(points)],
    }


def ladder(vals: list[list[float | None]], params: list[int] | None = None, **kw) -> list[RowRuns]:
    params = params or [100_000] * len(vals)
    return [RowRuns({"row": f"r{i}", "label": LABELS[i]}, [run(s, v, params=p, **kw) for s, v in enumerate(row)])
            for i, (row, p) in enumerate(zip(vals, params))]


def table(markdown: str) -> list[list[str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("|") and ":--" not in line and "--:" not in line]
    start = next(i for i, line in enumerate(lines) if line.replace(" ", "").startswith("|#|"))
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[start + 1:]]


def test_clear_effects_are_called_and_noise_is_not():
    rows = ladder([[2.00, 2.01, 2.02], [2.005, 2.012, 2.018], [1.80, 1.81, 1.82]])
    report = build(rows, {"corpus": "x"}, Settings(), "plot.png")
    body = table(report.markdown)
    assert [r[1] for r in body] == LABELS
    assert body[1][10].startswith("noise") and body[2][10] == "**better**"
    assert body[2][7] == "-0.2017" and body[2][8] == "0.0200"              # paired effect, larger range
    assert "**Rule.**" in report.markdown and "seeds won't resolve" in report.markdown   # rule and footnote
    assert report.metrics["r2"] == {"val_mean": 1.81, "val_sd": 0.01, "n": 3}


def test_a_noise_row_says_how_many_seeds_would_resolve_it():
    rows = ladder([[2.00, 2.03, 2.06], [1.95, 1.99, 2.02], [1.95, 1.99, 2.02]])
    c = build(rows, {}, Settings(), "p.png").table[1]
    assert c["verdict"] == "noise"
    body = table(build(rows, {}, Settings(), "p.png").markdown)
    assert body[1][10] in ("noise (seeds won't resolve)", f"noise (~{c['seeds_needed']} seeds)")


def test_one_seed_gives_no_verdicts_and_says_so():
    report = build(ladder([[2.0], [1.5], [1.4]]), {}, Settings(), "p.png")
    assert "**One seed: no verdicts.**" in report.markdown
    assert {r[10] for r in table(report.markdown)[1:]} == {"n/a (1 seed)"}


def test_a_diverged_seed_is_counted_excluded_and_marked():
    rows = ladder([[2.0, 2.01, 2.02], [2.0, None, 2.02], [1.5, 1.51, 1.52]])
    report = build(rows, {}, Settings(), "p.png")
    body = table(report.markdown)
    assert body[1][5] == "2.0100 ± 0.0141 (1/3 diverged)"                  # mean of the finite seeds, marked
    assert "**Diverged:** + RMSNorm (1/3)" in report.markdown
    assert " nan" not in report.markdown.lower()
    all_diverged = build(ladder([[2.0, 2.1], [None, None], [1.5, 1.6]]), {}, Settings(), "p.png")
    assert table(all_diverged.markdown)[1][5] == "2/2 diverged"


def test_memorising_runs_are_flagged():
    rows = ladder([[0.05, 0.06], [0.04, 0.05], [0.04, 0.05]])
    assert memorised(rows, Settings()) == LABELS
    assert "**Memorised:**" in build(rows, {}, Settings(), "p.png").markdown
    healthy = ladder([[1.2, 1.21], [1.1, 1.12], [1.0, 1.01]])
    assert memorised(healthy, Settings()) == []
    # below the corpus's entropy on the training text: memorised, whatever the threshold
    assert memorised(healthy, Settings(floor=1.05)) == ["+ RoPE"]
    # per character, not per token: 0.3 nats per token over 2 characters per token is 0.15 per character
    assert memorised(ladder([[0.3, 0.3]]), Settings(train_chars_per_token=2, val_chars_per_token=2)) == [LABELS[0]]


def test_an_overfitting_curve_is_flagged():
    rows = ladder([[1.5, 1.5], [1.5, 1.5]], curve=[3.0, 1.2, 1.5])          # min 1.2, ends 25% above
    assert overfitting(rows, Settings()) == ["Step 1 baseline (seed 0, 1)", "+ RMSNorm (seed 0, 1)"]
    assert "**Overfitting:**" in build(rows, {}, Settings(), "p.png").markdown
    assert overfitting(ladder([[1.2, 1.2]], curve=[3.0, 1.2, 1.21]), Settings()) == []


def test_unequal_parameters_are_marked():
    rows = ladder([[2.0, 2.1], [1.9, 2.0], [1.8, 1.9]], params=[100_000, 101_000, 120_000])
    report = build(rows, {}, Settings(), "p.png")
    body = table(report.markdown)
    assert body[1][3] == "+1,000" and body[2][3] == "+19,000 ≠"
    assert "**Unequal parameters** (marked ≠): + RoPE" in report.markdown


def test_no_warning_on_a_healthy_ladder():
    report = build(ladder([[1.2, 1.21, 1.22], [1.1, 1.11, 1.12], [1.0, 1.01, 1.02]]), {}, Settings(), "p.png")
    for word in ("Memorised", "Overfitting", "Unequal", "Diverged", "One seed"):
        assert word not in report.markdown


def test_floor_row_and_aa_and_leave_one_out_sections():
    rows = ladder([[1.2, 1.21, 1.22], [1.1, 1.11, 1.12], [1.0, 1.01, 1.02]])
    aa = RowRuns({"row": "baseline", "label": "Step 1 baseline"}, [run(s, v) for s, v in zip((10, 11, 12), (1.205, 1.215, 1.2))])
    loo = [RowRuns({"row": "loo_norm", "label": "− RMSNorm"}, [run(s, v) for s, v in enumerate((1.2, 1.21, 1.22))])]
    report = build(rows, {}, Settings(floor=0.8), "p.png", aa=aa, loo=loo)
    body = table(report.markdown)
    assert body[3][1] == "floor (entropy of the corpus process)" and body[3][6] == f"{0.8 / math.log(2):.3f}"
    assert "## A/A check" in report.markdown and "As it must be" in report.markdown
    assert "## Leave one out" in report.markdown
    assert {e["row"] for e in report.extra} == {"aa", "loo_norm"}
    loo_row = next(e for e in report.extra if e["row"] == "loo_norm")
    assert loo_row["verdict"] == "worse"                                     # reverting RMSNorm hurts: it helps


def test_an_aa_check_that_finds_a_difference_says_to_distrust_the_verdicts():
    rows = ladder([[1.2, 1.21, 1.22], [1.1, 1.11, 1.12], [1.0, 1.01, 1.02]])
    aa = RowRuns({"row": "baseline", "label": "Step 1 baseline"}, [run(s, v) for s, v in zip((10, 11, 12), (1.5, 1.51, 1.52))])
    assert "treat every verdict above with suspicion" in build(rows, {}, Settings(), "p.png", aa=aa).markdown


def test_the_same_results_give_the_same_bytes():
    rows = ladder([[2.0, 2.01, 2.02], [2.005, 2.012, 2.018], [1.8, 1.81, 1.82]])
    assert build(rows, {"a": "b"}, Settings(), "p.png").markdown == build(rows, {"a": "b"}, Settings(), "p.png").markdown


@pytest.mark.parametrize("confidence", [0.9, 0.99])
def test_the_stated_confidence_is_the_one_used(confidence):
    report = build(ladder([[2.0, 2.01, 2.02], [1.8, 1.81, 1.83], [1.8, 1.81, 1.82]]), {}, Settings(confidence=confidence), "p.png")
    assert f"{confidence:.0%} CI of Δ" in report.markdown and f"its {confidence:.0%} paired t-interval" in report.markdown
