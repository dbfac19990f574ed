"""The book's quick ablation: train each ladder row on each seed and print one table.

Verdicts come from the same rule and the same function as the report's (reporting.stats.compare).
"""

from __future__ import annotations

from typing import Callable

import torch

from ..pipeline.ladder import Row
from ..reporting.results import RowResult, row_result
from ..config import TrainConfig
from ..training.batched import run_seeds
from ..training.run import run


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
