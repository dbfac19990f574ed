"""The report as a function of run records: verdicts, warnings and tables, on cases built here.

Table cells are read by their column's header (reporting.table.COLUMNS), never by position, so a
moved or added column cannot silently point a check at the wrong cell.
"""

import math
import re
import statistics

import pytest

import md_tables
from fakes import LABELS, ladder, run_record
from modern_gpt.reporting.findings import memorised, overfitting
from modern_gpt.reporting.pages import build_main
from modern_gpt.reporting.results import Ladder, Results, row_result
from modern_gpt.reporting.settings import Settings, report_settings
from modern_gpt.stats.paired import NO_EFFECT, NOT_SHOWN, SPREAD_SDS, verdict_text
from modern_gpt.reporting.table import TABLE as COLUMNS, markdown_table


def report_of(vals, s: Settings = Settings(), params=None, info=None, **kw):
    return build_main(Results([Ladder("main", ladder(vals, params, s), info or {})], s, **kw))


def headers(confidence: float = 0.95) -> list[str]:
    return [c.header.replace("{confidence}", f"{confidence:.0%}") for c in COLUMNS if not c.looks_only]


def tables(markdown: str, confidence: float = 0.95) -> list[list[dict[str, str]]]:
    """Every table with the COLUMNS header, each as a list of {header: cell} rows (each row has every column)."""
    want = headers(confidence)
    out = []
    for lines in md_tables.tables(markdown):
        head, body = md_tables.rows(lines)
        if head == want:
            for line in lines[2:]:
                assert len(md_tables.cells(line)) == len(want), line
            out.append(body)
    return out


def table(markdown: str, confidence: float = 0.95) -> list[dict[str, str]]:
    """The ladder's table (the first with the COLUMNS header)."""
    found = tables(markdown, confidence)
    assert found, "no table with the COLUMNS header"
    return found[0]


CI = "95% CI of Δ"


def spread(*rows: list[float]) -> float:
    """SPREAD_SDS x the pooled seed sd of rows with equal seed counts, by hand."""
    return SPREAD_SDS * math.sqrt(sum(statistics.variance(r) for r in rows) / len(rows))


def test_clear_effects_are_called_and_noise_is_not():
    vals = [[2.00, 2.01, 2.02], [2.005, 2.012, 2.018], [1.80, 1.81, 1.82]]
    report = report_of(vals, info={"corpus": "x"})
    body = table(report.markdown)
    assert [r["variant"] for r in body] == LABELS[:3]
    assert [r["#"] for r in body] == ["0", "1", "2"]
    # row 1: diffs +0.005, +0.002, -0.002, its 90% interval +0.0017 +- 0.0059 inside +- the spread 0.0143
    assert body[1]["verdict"] == f"noise ({NO_EFFECT})" and report.table[1]["noise_kind"] == NO_EFFECT
    assert body[2]["verdict"] == "**better**" and report.table[2]["noise_kind"] is None
    assert body[2]["Δ val"] == "-0.2017" and body[2]["range"] == "0.0200"   # paired effect, larger range
    assert body[2]["spread"] == f"{spread(vals[1], vals[2]):.4f}" == "0.0143"    # 1.69 x pooled sd: the threshold
    assert report.table[2]["spread"] == pytest.approx(spread(vals[1], vals[2]))
    assert report.table[2]["range"] == pytest.approx(0.02)
    assert body[0]["Δ val"] == "" and body[0]["verdict"] == "" and body[0][CI] == ""
    assert body[0]["range"] == "0.0200" and body[0]["spread"] == ""           # the baseline has no comparison
    assert report.table[0]["spread"] is None and report.table[0]["range"] == pytest.approx(0.02)
    assert "**Rule.**" in report.markdown and f"**{NO_EFFECT}** when the 90% interval" in report.markdown
    assert "range is the larger of the two rows' seed ranges" in report.markdown
    assert "larger max-min range" not in report.markdown and "grows with" not in report.markdown
    assert report.metrics["r2"] == {"val_mean": 1.81, "val_sd": 0.01, "n": 3}


def test_a_noise_row_not_shown_either_way_says_how_many_seeds_would_resolve_it():
    # diffs -0.07, -0.23, -0.16: effect -0.1533 clears the spread 0.0889 by more than the band 0.0210, but its
    # 95% interval +-0.1993 includes zero; at 4 seeds t(0.975, 3) x 0.0802 / 2 = 0.128 would be under 0.1323
    vals = [[2.00, 2.03, 2.06], [1.93, 1.80, 1.90], [1.93, 1.80, 1.90]]
    report = report_of(vals)
    c = report.table[1]
    assert c["verdict"] == "noise" and c["noise_kind"] == NOT_SHOWN and c["seeds_needed"] == 4
    assert c["spread"] == pytest.approx(spread(vals[0], vals[1]))
    assert table(report.markdown)[1]["verdict"] == "noise (not shown either way; ~4 seeds)"


def test_one_seed_gives_no_verdicts_and_says_so():
    report = report_of([[2.0], [1.5], [1.4]])
    assert "**One seed: no verdicts.**" in report.markdown
    assert {r["verdict"] for r in table(report.markdown)[1:]} == {"n/a (1 seed)"}


def test_a_diverged_seed_is_counted_excluded_and_marked():
    report = report_of([[2.0, 2.01, 2.02], [2.0, None, 2.02], [1.5, 1.51, 1.52]])
    body = table(report.markdown)
    assert body[1]["val"] == "2.0100 ± 0.0141 (1/3 diverged)"              # mean of the finite seeds, marked
    assert "**Diverged:** + RMSNorm (1/3)" in report.markdown
    assert " nan" not in report.markdown.lower()
    all_diverged = report_of([[2.0, 2.1], [None, None], [1.5, 1.6]])
    assert table(all_diverged.markdown)[1]["val"] == "2/2 diverged"


def test_a_diverged_seed_is_counted_in_the_csv_rows():
    report = report_of([[2.0, 2.01, 2.02], [2.0, None, 2.02], [1.5, 1.51, 1.52]])
    base, norm, rope = report.table
    assert (base["row"], base["n"], base["diverged"]) == ("r0", 3, 0)
    assert (norm["row"], norm["n"], norm["diverged"]) == ("r1", 2, 1)
    assert (rope["row"], rope["n"], rope["diverged"]) == ("r2", 3, 0)
    assert norm["val_mean"] == pytest.approx(2.01) and norm["val_sd"] == pytest.approx(math.sqrt(2) / 100)
    assert norm["d_val"] == pytest.approx(0.0)                               # paired on seeds 0 and 2 only
    assert report.metrics["r1"] == {"val_mean": 2.01, "val_sd": 0.01414, "n": 2}
    # every seed diverged: counted, no mean, no verdict against it
    none = report_of([[2.0, 2.1], [None, None], [1.5, 1.6]]).table[1]
    assert (none["n"], none["diverged"], none["val_mean"], none["d_val"]) == (0, 2, None, None)
    assert none["verdict"] == "n/a (1 seed)"


def test_memorising_runs_are_flagged():
    rows = ladder([[0.05, 0.06], [0.04, 0.05], [0.04, 0.05]])
    assert memorised(rows, Settings()) == LABELS[:3]
    assert "**Memorised:**" in build_main(Results([Ladder("main", rows)], Settings())).markdown
    healthy = ladder([[1.2, 1.21], [1.1, 1.12], [1.0, 1.01]])
    assert memorised(healthy, Settings()) == []
    # below the corpus's entropy on the training text: memorised, whatever the threshold
    assert memorised(healthy, Settings(floor=1.05)) == ["+ RoPE"]
    # per character, not per token: 0.3 nats per token over 2 characters per token is 0.15 per character
    assert memorised(ladder([[0.3, 0.3]]), Settings(train_chars_per_token=2, val_chars_per_token=2)) == [LABELS[0]]


def test_an_overfitting_curve_is_flagged():
    rows = ladder([[1.5, 1.5], [1.5, 1.5]], curve=[3.0, 1.2, 1.5])          # min 1.2, ends 25% above
    assert overfitting(rows, Settings()) == ["Step 1 baseline (seed 0, 1)", "+ RMSNorm (seed 0, 1)"]
    assert "**Overfitting:**" in build_main(Results([Ladder("main", rows)], Settings())).markdown
    assert overfitting(ladder([[1.2, 1.2]], curve=[3.0, 1.2, 1.21]), Settings()) == []


def test_unequal_parameters_are_marked():
    report = report_of([[2.0, 2.1], [1.9, 2.0], [1.8, 1.9]], params=[100_000, 101_000, 120_000])
    body = table(report.markdown)
    assert body[0]["Δ params"] == "" and body[0]["params"] == "0.100M"
    assert body[1]["Δ params"] == "+1,000" and body[2]["Δ params"] == "+19,000 ≠"
    assert body[2]["params"] == "0.120M"
    assert "**Unequal parameters** (marked ≠): + RoPE" in report.markdown
    assert [r["d_params"] for r in report.table] == [None, 1000, 19000]


def test_no_warning_on_a_healthy_ladder():
    report = report_of([[1.2, 1.21, 1.22], [1.1, 1.11, 1.12], [1.0, 1.01, 1.02]])
    for word in ("Memorised", "Overfitting", "Unequal", "Diverged", "One seed"):
        assert word not in report.markdown


def test_floor_row_and_aa_and_leave_one_out_sections():
    rows = ladder([[1.2, 1.21, 1.22], [1.1, 1.11, 1.12], [1.0, 1.01, 1.02]])
    aa = row_result("baseline", "Step 1 baseline", [run_record(s, v) for s, v in zip((10, 11, 12), (1.205, 1.215, 1.2))],
                    rows[0])
    loo = [row_result("loo_norm", "− RMSNorm", [run_record(s, v) for s, v in enumerate((1.2, 1.21, 1.22))], rows[-1])]
    report = build_main(Results([Ladder("main", rows)], Settings(floor=0.8), aa=aa, loo=loo))
    body = table(report.markdown)
    assert body[3]["variant"] == "floor (entropy of the corpus process)"
    assert body[3]["bpc"] == f"{0.8 / math.log(2):.3f}" and body[3]["val"] == "0.8000" and body[3]["#"] == ""
    assert "## A/A check" in report.markdown and "As it must be" in report.markdown
    assert "## Leave one out" in report.markdown
    assert [e["row"] for e in report.table] == ["r0", "r1", "r2", "aa", "loo_norm"]
    loo_row = next(e for e in report.table if e["row"] == "loo_norm")
    assert loo_row["verdict"] == "worse"                                     # reverting RMSNorm hurts: it helps
    ladder_table, loo_table = tables(report.markdown)
    assert ladder_table == body
    assert [r["variant"] for r in loo_table] == ["full model", "− RMSNorm"]
    assert loo_table[0]["verdict"] == "" and loo_table[1]["verdict"] == "**worse**"


def test_an_aa_check_that_finds_a_difference_says_to_distrust_the_verdicts():
    rows = ladder([[1.2, 1.21, 1.22], [1.1, 1.11, 1.12], [1.0, 1.01, 1.02]])
    aa = row_result("baseline", "Step 1 baseline", [run_record(s, v) for s, v in zip((10, 11, 12), (1.5, 1.51, 1.52))],
                    rows[0])
    assert "treat every verdict above with suspicion" in build_main(Results([Ladder("main", rows)], Settings(), aa=aa)).markdown


def test_the_same_results_give_the_same_bytes():
    vals = [[2.0, 2.01, 2.02], [2.005, 2.012, 2.018], [1.8, 1.81, 1.82]]
    assert report_of(vals, info={"a": "b"}).markdown == report_of(vals, info={"a": "b"}).markdown


@pytest.mark.parametrize("confidence", [0.9, 0.99])
def test_the_stated_confidence_is_the_one_used(confidence):
    report = report_of([[2.0, 2.01, 2.02], [1.8, 1.81, 1.83], [1.8, 1.81, 1.82]], Settings(confidence=confidence))
    assert f"{confidence:.0%} CI of Δ" in report.markdown and f"its {confidence:.0%} paired t-interval" in report.markdown
    assert table(report.markdown, confidence)                             # the header is COLUMNS' at this confidence


def test_the_full_model_line_states_the_numbers_of_report_full():
    # diffs from the baseline -0.20, -0.20, -0.19: mean -0.59/3, sd sqrt(1/3)/100, t(0.975, 2) = 4.302653
    report = report_of([[2.00, 2.01, 2.02], [1.90, 1.92, 1.93], [1.80, 1.81, 1.83]],
                       params=[100_000, 101_000, 120_000])
    line = next(x for x in report.markdown.splitlines() if x.startswith("**Full model against the baseline:**"))
    assert line == ("**Full model against the baseline:** Δ val -0.1967 (spread 0.0218, range 0.0300, 95% CI "
                    "[-0.2110, -0.1823]): **better**; params 0.100M → 0.120M.")
    full = report.full
    half = 4.302653 * (math.sqrt(1 / 3) / 100) / math.sqrt(3)
    assert full.spread == pytest.approx(spread([2.00, 2.01, 2.02], [1.80, 1.81, 1.83]))     # 1.69 x 0.0129
    assert full.effect == pytest.approx(-0.59 / 3) and full.range == pytest.approx(0.03)
    assert full.ci_low == pytest.approx(-0.59 / 3 - half, abs=1e-6)
    assert full.ci_high == pytest.approx(-0.59 / 3 + half, abs=1e-6)
    assert full.verdict == "better" and full.confidence == 0.95 and full.n_pairs == 3
    # the line is report.full, formatted
    assert (f"Δ val {full.effect:+.4f} (spread {full.spread:.4f}, range {full.range:.4f}, 95% CI "
            f"[{full.ci_low:+.4f}, {full.ci_high:+.4f}]): **{full.verdict}**;") in line
    noise = report_of([[2.00, 2.01, 2.02], [2.005, 2.012, 2.018], [2.001, 2.013, 2.019]])
    assert noise.full.verdict == "noise"
    assert f"): {verdict_text(noise.full)}; params" in noise.markdown


# diffs -0.05, -0.03, -0.07 (sd 0.02): effect 0.05 > spread 1.69 x 0.0141 = 0.0239; the 90% interval is
# -0.05 ± 2.920 * 0.02 / sqrt(3) = ±0.034 (excludes zero), the 99% one ±9.925 * 0.02 / sqrt(3) = ±0.115 (does not)
BETTER_AT_90 = [[2.00, 2.01, 2.02], [1.95, 1.98, 1.95]]


@pytest.mark.parametrize("confidence, verdict", [(0.9, "better"), (0.99, "noise")])
def test_report_confidence_changes_the_verdict_itself(confidence, verdict):
    s = report_settings({"confidence": confidence})
    assert s.confidence == confidence
    report = report_of(BETTER_AT_90, s)
    row = table(report.markdown, confidence)[1]
    csv = report.table[1]
    assert csv["verdict"] == verdict and report.full.verdict == verdict
    assert csv["d_val"] == pytest.approx(-0.05) and csv["spread"] == pytest.approx(spread(*BETTER_AT_90))
    assert csv["range"] == pytest.approx(0.03)
    assert row["Δ val"] == "-0.0500" and row["spread"] == "0.0239" and row["range"] == "0.0300"
    if verdict == "better":
        assert row["verdict"] == "**better**" and csv["seeds_needed"] == 0
        assert csv["ci_high"] < 0 and row[f"{confidence:.0%} CI of Δ"] == "[-0.0837, -0.0163]"
    else:
        assert row["verdict"].startswith("noise") and csv["seeds_needed"] != 0
        assert csv["ci_low"] < 0 < csv["ci_high"] and row[f"{confidence:.0%} CI of Δ"] == "[-0.1646, +0.0646]"
    assert f"): {row['verdict']}; params" in report.markdown                  # the full-model line agrees


def test_columns_are_declared_once_and_are_the_table_header():
    names = [c.header for c in COLUMNS]
    assert len(names) == len(set(names))
    assert {c.align for c in COLUMNS} <= {"left", "right"}
    rows = ladder([[2.0, 2.01], [1.9, 1.91]])
    for confidence in (0.9, 0.95, 0.99):
        text = markdown_table([(str(i), r) for i, r in enumerate(rows)], confidence)
        header = md_tables.cells(text.splitlines()[0])
        assert header == headers(confidence)
        assert f"{confidence:.0%} CI of Δ" in header and not any("{" in h for h in header)
        assert len(text.splitlines()) == 2 + len(rows)
    # extra rows are keyed by the same headers; a header it does not give stays blank
    text = markdown_table([], 0.95, [{"variant": "floor", "bpc": "1.000"}])
    (row,) = [dict(zip(headers(), md_tables.cells(x))) for x in text.splitlines()[2:]]
    assert row["variant"] == "floor" and row["bpc"] == "1.000"
    assert all(v == "" for k, v in row.items() if k not in ("variant", "bpc"))


def test_one_column_list_drives_the_report_table_the_csv_and_the_quick_table(monkeypatch):
    from modern_gpt.reporting import table as report
    extra = report.Column("seeds run", "right", lambda i, r: str(len(r.runs)), csv=(("seeds_run", lambda r: len(r.runs)),),
                          quick=report.Quick("seeds", 6, lambda r, n: str(n)))
    columns = [*report.COLUMNS[:3], extra, *report.COLUMNS[3:]]
    monkeypatch.setattr(report, "COLUMNS", columns)
    monkeypatch.setattr(report, "TABLE", [c for c in columns if c.report])
    rows = ladder([[2.0, 2.01], [1.9, 1.91]])
    header = md_tables.cells(markdown_table([(str(i), r) for i, r in enumerate(rows)], 0.95).splitlines()[0])
    assert header[3] == "seeds run"
    assert list(report.csv_row(rows[1]))[3] == "seeds_run" and report.csv_row(rows[1])["seeds_run"] == 2
    head = report.quick_header(2).splitlines()[0]
    assert head.index("params") < head.index("seeds") < head.index("train")
    assert report.quick_line(rows[1])[22 + 8: 22 + 8 + 6] == "     2"      # after variant (22) and params (8)


def test_the_log_x_band_template_is_the_band_template_with_a_log_x_axis():
    """DVC templates cannot inherit, so .dvc/plots/band_logx.json is a copy of band.json: kept in step here."""
    import json
    from pathlib import Path
    plots = Path(__file__).resolve().parents[1] / ".dvc" / "plots"
    band, logx = (json.loads((plots / name).read_text()) for name in ("band.json", "band_logx.json"))
    x = logx["encoding"]["x"]
    assert x.pop("scale") == {"type": "log"} and x.pop("axis")["labelOverlap"] == "greedy"
    assert logx == band


def test_the_second_ladder_gets_its_own_report_by_the_same_rule_and_off_leaves_the_last_one(tmp_path):
    from modern_gpt.reporting import wording as W
    from modern_gpt.reporting.write import write_report
    from modern_gpt.reporting.pages import build_beyond
    vals = [[2.00, 2.01, 2.02], [2.005, 2.012, 2.018], [1.80, 1.81, 1.82]]
    s = Settings()
    main, beyond = ladder(vals, s=s), ladder(vals, params=[100_000, 100_000, 120_000], s=s)
    first, second = Ladder("main", main), Ladder("beyond", beyond, {"optimizer": "Muon in + RoPE"})
    text = build_beyond(Results([first, second], s), second)
    assert text.startswith(W.BEYOND_TITLE) and "| optimizer | Muon in + RoPE |" in re.sub(" +", " ", text)
    mine, theirs = table(text), table(build_main(Results([first], s)).markdown)
    assert [r["verdict"] for r in mine] == [r["verdict"] for r in theirs]          # the main table's rule
    assert mine[2]["Δ params"] == "+20,000 ≠"                                    # 115,000 against 95,000
    assert "**Every change against the book's design:** Δ val -0.2000" in text
    assert "an untied output head" in text                                        # what the counts count
    write_report(Results([first, second], s), tmp_path)
    written = (tmp_path / "beyond.md").read_bytes()
    assert written == build_beyond(Results([first, second], s), second).encode()
    write_report(Results([first], s), tmp_path)                                   # off: the last one stays
    assert (tmp_path / "beyond.md").read_bytes() == written
