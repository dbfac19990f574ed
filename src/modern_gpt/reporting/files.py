"""The report's files: reports/ablation.md, its metrics, CSVs and plots, from the results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.files import write_bytes, write_json
from .plots import LR_COLUMNS, curves, lr_plot, lr_rows, plot
from .report import CURVES_PLOT, SWEEP_PLOT, build, build_beyond
from .results import Results


def csv_bytes(table: list[dict], columns: list[str] | None = None) -> bytes:
    return pd.DataFrame(table, columns=columns).to_csv(index=False, float_format="%.6g").encode()


def write_report(results: Results, out: Path) -> None:
    """ablation.md, metrics.json and ablation.csv; the validation curves and the learning-rate grid, each as a
    plot and a CSV; beyond.md when the second ladder is on (off, a beyond.md already there stays)."""
    report = build(results)
    s = results.settings
    lr_table = lr_rows([*results.sweep, *results.beyond_sweep])
    lr_plot(lr_table, out / SWEEP_PLOT)
    write_bytes(out / "lr_sweep.csv", csv_bytes(lr_table, LR_COLUMNS))
    curve_rows = curves(results.rows)
    plot(curve_rows, out / CURVES_PLOT, s.floor * s.val_chars_per_token if s.floor is not None else None)
    write_bytes(out / "ablation.md", report.markdown.encode())
    write_json(out / "metrics.json", report.metrics)
    write_bytes(out / "ablation.csv", csv_bytes(report.table))
    write_bytes(out / "val_curves.csv", csv_bytes(curve_rows))
    if results.beyond:
        write_bytes(out / "beyond.md", build_beyond(results).encode())
