"""Each page of the report put together from its parts, top to bottom: reports/ablation.md (the main ladder,
with its A/A, leave-one-out, serving, learning-rate and rerun sections), beyond.md (the second ladder) and scale.md
(the main ladder at every size). The parts are the table (table.py), the findings (findings.py), the sections
(extra_sections.py) and the scale tables (scale.py); write.py writes the pages, their CSVs and their plots (their names:
outputs.py).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

from ..records.stages import LadderName
from .cells import interval, millions, num, verdict
from .findings import findings
from ..settling.looks import Design
from .outputs import CURVES_PLOT, SCALE_PLOT, SWEEP_PLOT
from .results import Ladder, Results, RowResult, full_look
from .scale import csv_rows, scale_changes, scale_provenance, size_name, by_size, tables
from .extra_sections import rerun_section, serving_section, sweep_section
from .settings import Settings
from ..stats.paired import NO_EFFECT, NOT_SHOWN, SEEDS_NEEDED_METHOD, SPREAD_SDS, Comparison, Verdict, compare, pct, rule
from .table import csv_row, markdown_table
from . import wording as W

LN2 = math.log(2)


@dataclass(frozen=True)
class Report:
    markdown: str
    metrics: dict                 # reports/metrics.json: per row val mean, sd, n
    table: list[dict]             # reports/ablation.csv: the ladder, then the A/A and leave-one-out rows
    full: Comparison              # the full model against the baseline




def table_note(s: Settings, level: float | None = None) -> str:
    level = s.confidence if level is None else level
    return (W.TABLE_NOTE.format(spread_sds=SPREAD_SDS, band_sds=s.borderline, no_effect=NO_EFFECT,
                                equivalence=pct(2 * level - 1), not_shown=NOT_SHOWN)
            + " " + W.PARAMS_NOTE.format(tolerance=s.param_tolerance))


def full_model(rows: list[RowResult], s: Settings) -> tuple[Comparison, dict[str, Any]]:
    """The last row of a ladder against row 0 by the main table's rule, and the figures a sentence about it states
    (the keys of wording's FULL_MODEL, BEYOND_FULL and SCALE_FULL_SIZE): one comparison for every page."""
    look = full_look(rows)
    c = look.comparison if look else compare(rows[-1].values("val_loss"), rows[0].values("val_loss"),
                                             confidence=s.confidence, band_sds=s.borderline)
    return c, dict(effect=num(c.effect, sign=True), spread=num(c.spread), range=num(c.range), confidence=pct(c.confidence),
                   interval=interval(c) or "–", verdict=verdict(c, look), params_from=millions(rows[0].params),
                   params_to=millions(rows[-1].params))


def ladder_parts(title: str, intro: str, ladder: Ladder, s: Settings, full_line: str,
                 extra: list[dict[str, str]] = ()) -> tuple[list[str], Comparison]:
    """A ladder report's head: title, provenance, warnings, the rule, the table and its note, and the last row
    against row 0 (full_line, a wording template); also that comparison."""
    rows = ladder.rows
    full, figures = full_model(rows, s)
    design = ladder.design
    level = design.level if design is not None else s.confidence
    return [
        title,
        intro,
        "## Provenance",
        tabulate(list(ladder.provenance.items()), headers=["", ""], tablefmt="pipe", disable_numparse=True),
        "## Ablation",
        *findings(rows, s).report(),
        f"**Rule.** {rule(level)}" + (" " + looks_paragraph(design, s) if design is not None and design.on else ""),
        markdown_table([(str(i), r) for i, r in enumerate(rows)], level, extra,
                       seeds=(design is not None and design.on) or len({r.val.n for r in rows}) > 1),
        table_note(s, level),
        full_line.format(**figures),
    ], full


def looks_paragraph(design: Design, s: Settings, seeds_column: bool = True) -> str:
    """The design's sentence after the rule (settle.looks on); `seeds_column`: the table beside it has one."""
    looks = ", ".join(map(str, design.looks[:-1])) + f" and {design.cap}"
    return W.LOOKS.format(looks=looks, level=pct(design.level), confidence=pct(s.confidence), first=design.looks[0],
                          cap=design.cap, seeds=W.LOOKS_SEEDS if seeds_column else ".")


def ladder_sweep(ladder: Ladder, s: Settings, plot_name: str | None, uniform: float | None) -> list[str]:
    """A ladder's rows of the learning-rate grid, and its pairs at their best rates ([] where it has none)."""
    if not ladder.sweep:
        return []
    return sweep_section(list(ladder.sweep), list(ladder.pairs), s, plot_name, ladder.rows[0].runs[0].train.lr,
                         uniform)


def ladder_serving(ladder: Ladder, s: Settings) -> list[str]:
    """A ladder's serving cost and samples ([] where none of its rows was served)."""
    return serving_section(ladder.rows, list(ladder.serve), s) if ladder.serve else []


def build_beyond(results: Results, ladder: Ladder) -> str:
    """reports/beyond.md: the second ladder (row 0 the book's design, each row against the row above), judged by
    the main table's rule and seeds."""
    s = results.settings
    parts, _ = ladder_parts(W.BEYOND_TITLE, W.BEYOND_INTRO, ladder, s, W.BEYOND_FULL)
    parts += ladder_sweep(ladder, s, None, results.uniform)     # the plot beside ablation.md draws its rows too
    parts += ladder_serving(ladder, s)
    parts.append(f"¹ {SEEDS_NEEDED_METHOD}")
    return "\n\n".join(parts) + "\n"


def build_main(results: Results) -> Report:
    """The report of the main ladder (row 0 the baseline, each row against the one above), with the optional
    A/A copy of the baseline (compared with it), leave-one-out rows (compared with the full model),
    reruns with perturbed initial weights (compared with their rows), the learning-rate grid and the
    serving cost."""
    main, s, aa, loo, reruns = results.main, results.settings, results.aa, results.loo, results.reruns
    rows = main.rows
    stated = {r.vs.confidence for r in [*rows, *loo, *([aa] if aa else [])] if r.vs is not None}
    if stated - {s.confidence, main.design.level if main.design else s.confidence}:
        raise ValueError(f"rows compared at confidence {sorted(stated)}, report states {s.confidence}")
    extra = []
    if s.floor is not None:
        extra.append({"variant": "floor (entropy of the corpus process)", "val": num(s.floor_per_token),
                      "bpc": num(s.floor / LN2, 3)})
    parts, full = ladder_parts(W.TITLE, W.INTRO, main, s, W.FULL_MODEL, extra)
    table = [csv_row(r) for r in rows]
    if aa is not None:
        c = aa.vs
        ok = c.verdict in (Verdict.NOISE, Verdict.NA)
        parts += [
            "## A/A check",
            W.AA.format(seeds=", ".join(str(r.seed) for r in aa.runs),
                        baseline_seeds=", ".join(str(r.seed) for r in rows[0].runs), effect=num(c.effect, sign=True),
                        spread=num(c.spread), range=num(c.range), interval=interval(c) or "–", verdict=verdict(c))
            + (W.AA_OK if ok else W.AA_SUSPICIOUS),
        ]
        table.append({**csv_row(aa), "row": "aa"})
    if loo:
        reference = dataclasses.replace(rows[-1], label="full model", vs=None, d_params=None, unequal=False)
        parts += [
            "## Leave one out",
            W.LEAVE_ONE_OUT,
            markdown_table([("", reference)] + [(str(i + 1), r) for i, r in enumerate(loo)], s.confidence),
        ]
        table += [csv_row(r) for r in loo]
    parts += ladder_serving(main, s)
    parts += ladder_sweep(main, s, SWEEP_PLOT, results.uniform)
    if reruns:
        parts += rerun_section(list(reruns), results.perturbation, s)
        table += [csv_row(r.again) for r in reruns]           # its row: the rerun's own slug, rerun_<row>
    parts += [
        "## Validation curves",
        f"![validation loss per row, mean and seed band]({CURVES_PLOT})",
        f"¹ {SEEDS_NEEDED_METHOD}",
    ]
    r5 = lambda x: None if x is None else round(x, 5)                      # noqa: E731
    metrics = {r.slug: {"val_mean": r5(r.val.mean), "val_sd": r5(r.val.sd), "n": r.val.n_finite} for r in rows}
    return Report("\n\n".join(parts) + "\n", metrics, table, full)


def full_lines(results: Results) -> str:
    """scale.md's line of the full model against the baseline at each size, smallest N first."""
    s = results.settings
    return W.SCALE_FULL + "; ".join(W.SCALE_FULL_SIZE.format(size=size_name(size), **full_model(rows, s)[1])
                                    for size, rows in by_size(results)) + "."


def scale_rule(results: Results) -> str:
    """scale.md's rule at each size: the sizes' looks, level and cap where settle.looks is on (the size model: is
    the main ladder, at the main table's), else the one-look rule at report.confidence."""
    s = results.settings
    design = next((x.design for x in results.ladders if x.name == LadderName.SCALE and x.design is not None), None)
    if design is None or not design.on:
        return f"**Rule at each size.** {rule(s.confidence)}"
    main = results.main.design
    text = f"**Rule at each size.** {rule(design.level)} {looks_paragraph(design, s, seeds_column=False)}"
    if main is not None and main.on and main.looks != design.looks:
        text += " " + W.SCALE_CAP.format(cap=design.cap, level=pct(design.level), main_cap=main.cap,
                                         main_level=pct(main.level))
    return text


def build_scale(results: Results) -> tuple[str, list[dict[str, Any]]]:
    """scale.md's text and scale.csv's rows."""
    s = results.settings
    floor = s.floor is not None
    found = scale_changes(results)
    parts = [
        W.SCALE_TITLE,
        W.SCALE_INTRO,
        "## Provenance",
        tabulate(list(scale_provenance(results).items()), headers=["", ""], tablefmt="pipe", disable_numparse=True),
        "## Transfer",
        W.SCALE_MEASURE_FLOOR if floor else W.SCALE_MEASURE_RAW,
        scale_rule(results),
        W.SCALE_TREND,
        *tables(found, floor),
        full_lines(results),
        f"![the effect of each change against model size]({SCALE_PLOT})",
        "## The transfer verdicts",
        W.TRANSFER_DEFINITIONS,
        f"¹ {SEEDS_NEEDED_METHOD}",
    ]
    return "\n\n".join(parts) + "\n", csv_rows(found, floor)
