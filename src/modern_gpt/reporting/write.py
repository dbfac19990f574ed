"""The report's files: reports/ablation.md, its metrics, CSVs and plots, from the results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.files import write_bytes, write_json
from ..records.stages import LadderName
from .catalogue import build_catalogue
from .outputs import (BEYOND, CATALOGUE, CSV_FLOAT, CURVES, CURVES_PLOT, MAIN, METRICS, RUNS, SCALE, SCALE_PLOT, SCALE_TABLE,
                      SWEEP, SWEEP_PLOT, TABLE)
from .pages import build_beyond, build_main, build_scale
from .plots import SWEEP_COLUMNS, curves, curves_plot, scale_plot, sweep_plot, sweep_table
from .results import Results
from .runs_csv import REPORT_FIELDS, RunLine, to_csv


def csv_bytes(table: list[dict], columns: list[str] | None = None) -> bytes:
    return pd.DataFrame(table, columns=columns).to_csv(index=False, float_format=CSV_FLOAT).encode()


# The ladders past the main one, each with its own report beside ablation.md: its file and how it is built.
LADDER_REPORTS = {LadderName.BEYOND: (BEYOND, build_beyond), LadderName.CATALOGUE: (CATALOGUE, build_catalogue)}


def write_report(results: Results, out: Path, runs: dict[str, list[RunLine]] | None = None) -> None:
    """ablation.md, metrics.json and ablation.csv; runs.csv and each further ladder's run list (`runs`: {file: its
    lines}, runs_csv.run_lines); the validation curves and the learning-rate grid, each as a
    plot and a CSV; each further ladder's report where it is on, and the scale ladders' (scale.md, .csv, .png)
    while sizes are listed (off, a report already there stays: git tracks it)."""
    report = build_main(results)
    s = results.settings
    sweep_points = sweep_table([r for ladder in results.ladders for r in ladder.sweep])
    sweep_plot(sweep_points, out / SWEEP_PLOT)
    write_bytes(out / SWEEP, csv_bytes(sweep_points, SWEEP_COLUMNS))
    curve_rows = curves(results.main.rows)
    curves_plot(curve_rows, out / CURVES_PLOT, s.floor_per_token)
    write_bytes(out / MAIN, report.markdown.encode())
    write_json(out / METRICS, report.metrics)
    write_bytes(out / TABLE, csv_bytes(report.table))
    write_bytes(out / CURVES, csv_bytes(curve_rows))
    for name, lines in (runs or {RUNS: []}).items():          # runs.csv; each further ladder's own list
        write_bytes(out / name, to_csv(lines) if name == RUNS else to_csv(lines, REPORT_FIELDS))
    for ladder in results.ladders[1:]:
        if ladder.name in LADDER_REPORTS:
            name, build_ladder = LADDER_REPORTS[ladder.name]
            write_bytes(out / name, build_ladder(results, ladder).encode())
    if results.sizes:
        text, table = build_scale(results)
        scale_plot(table, out / SCALE_PLOT, s.floor is not None)
        write_bytes(out / SCALE_TABLE, csv_bytes(table))
        write_bytes(out / SCALE, text.encode())
