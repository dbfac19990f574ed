"""The book's quick ablation: train each ladder row on each seed and print one table.

Verdicts come from the same rule and the same function as the report's (reporting.stats.compare).
"""

from __future__ import annotations

from typing import Callable

import torch

from ..pipeline.ladder import Row
from ..reporting.results import RowResult, row_result
from ..reporting.stats import verdict_text
from ..config import TrainConfig
from ..training.run import run, run_seeds


def run_ladder(rows: list[Row], train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
               seeds: list[int], val_chars: int, progress: bool = True,
               on_row: Callable[[RowResult], None] | None = None, batch_seeds: bool = False) -> list[RowResult]:
    """Every row on every seed, each row compared with the one above it. batch_seeds: a row's seeds train
    as one batched model (training.batched), the same numbers to rounding."""
    results: list[RowResult] = []
    for row in rows:
        if batch_seeds:
            runs = [r for _, r in run_seeds(row.slug, row.config, train_cfg, train_data, val_data, seeds,
                                            val_chars=val_chars, label=row.label, progress=progress)]
        else:
            runs = [run(row.slug, row.config, train_cfg, train_data, val_data, seed, val_chars=val_chars,
                        label=f"{row.label} (seed {seed})" if len(seeds) > 1 else row.label, progress=progress)[1]
                    for seed in seeds]
        results.append(row_result(row.slug, row.label, runs, results[-1] if results else None))
        if on_row is not None:
            on_row(results[-1])
    return results


def header(n_seeds: int) -> str:
    if n_seeds == 1:
        head = f"{'variant':<22}{'params':>8}{'train':>9}{'val':>9}{'Δ val':>9}{'secs':>7}"
    else:
        head = (f"{'variant':<22}{'params':>8}{'train (±range)':>16}{'val (±range)':>16}{'Δ val':>9}{'secs':>7}"
                "  verdict")
    return head + "\n" + "-" * len(head)


def format_row(r: RowResult) -> str:
    """One line of the table. With several seeds a loss reads mean±range, Δ val is paired by seed, and the
    verdict is the report's: better or worse only past both the seed spread and the t-interval."""
    n_seeds = len(r.runs)

    def cell(s) -> str:
        if s.mean is None:
            return "diverged"
        return f"{s.mean:.4f}" if n_seeds == 1 else f"{s.mean:.4f}±{s.range:.4f}"

    delta = "" if r.vs is None or r.vs.effect is None else f"{r.vs.effect:+.4f}"
    width = 9 if n_seeds == 1 else 16
    line = (f"{r.label:<22}{r.params / 1e6:>7.2f}M{cell(r.train):>{width}}{cell(r.val):>{width}}{delta:>9}"
            f"{r.secs:>6.0f}s")
    if n_seeds > 1 and r.vs is not None:
        line += f"  {verdict_text(r.vs)}"
    if r.val.n_diverged:
        line += f"  ({r.val.n_diverged}/{n_seeds} diverged)"
    return line
