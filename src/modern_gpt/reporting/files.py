"""The report's files: reports/ablation.md, its metrics, CSVs and plots, from the results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.files import write_bytes, write_json
from ..records.stages import LadderName
from .pages import CURVES_PLOT, SCALE_PLOT, SWEEP_PLOT, build_beyond, build_main, build_scale
from .plots import LR_COLUMNS, curves, curves_plot, lr_plot, lr_rows, scale_plot
from .results import Results
from .runs_csv import RunLine, to_csv


def csv_bytes(table: list[dict], columns: list[str] | None = None) -> bytes:
    return pd.DataFrame(table, columns=columns).to_csv(index=False, float_format="%.6g").encode()


# The ladders past the main one, each with its own report beside ablation.md: its file and how it is built.
LADDER_REPORTS = {LadderName.BEYOND: ("beyond.md", build_beyond)}
SCALE_REPORT = "scale.md"          # the scale ladders, all sizes in one report (pages.build_scale)


def write_report(results: Results, out: Path, runs: list[RunLine] = ()) -> None:
    """ablation.md, metrics.json and ablation.csv; runs.csv, one line per run (`runs`); the validation curves and the learning-rate grid, each as a
    plot and a CSV; each further ladder's report where it is on, and the scale ladders' (scale.md, .csv, .png)
    while sizes are listed (off, a report already there stays: git tracks it)."""
    report = build_main(results)
    s = results.settings
    lr_table = lr_rows([r for ladder in results.ladders for r in ladder.sweep])
    lr_plot(lr_table, out / SWEEP_PLOT)
    write_bytes(out / "lr_sweep.csv", csv_bytes(lr_table, LR_COLUMNS))
    curve_rows = curves(results.main.rows)
    curves_plot(curve_rows, out / CURVES_PLOT, s.floor_per_token)
    write_bytes(out / "ablation.md", report.markdown.encode())
    write_json(out / "metrics.json", report.metrics)
    write_bytes(out / "ablation.csv", csv_bytes(report.table))
    write_bytes(out / "val_curves.csv", csv_bytes(curve_rows))
    write_bytes(out / "runs.csv", to_csv(list(runs)))
    for ladder in results.ladders[1:]:
        if ladder.name in LADDER_REPORTS:
            name, build_ladder = LADDER_REPORTS[ladder.name]
            write_bytes(out / name, build_ladder(results, ladder).encode())
    if results.sizes:
        text, table = build_scale(results)
        scale_plot(table, out / SCALE_PLOT, s.floor is not None)
        write_bytes(out / "scale.csv", csv_bytes(table))
        write_bytes(out / SCALE_REPORT, text.encode())
