"""The book's quick ablation: train each ladder row on each seed and print one table."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import torch

from .config import Row, TrainConfig
from .stats import compare, summarize
from .train import train


@dataclass
class RowResult:
    row: Row
    runs: list[dict] = field(default_factory=list)   # one train() result per seed, in seed order

    def losses(self, key: str) -> list[float]:
        """Per-seed losses; NaN for a diverged seed, so positions still pair by seed."""
        return [math.nan if r[key] is None else r[key] for r in self.runs]


def run(rows: list[Row], train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
        seeds: list[int], progress: bool = True, on_row=None) -> list[RowResult]:
    results = []
    for row in rows:
        result = RowResult(row)
        for seed in seeds:
            label = f"{row.label} (seed {seed})" if len(seeds) > 1 else row.label
            _, r = train(row.config, train_cfg, train_data, val_data, seed, label=label, progress=progress)
            result.runs.append(r)
        results.append(result)
        if on_row is not None:
            on_row(result)
    return results


COLUMNS = f"{'variant':<22}{'params':>8}{'train':>9}{'val':>9}{'Δ val':>9}{'secs':>7}"


def format_row(result: RowResult, prev: RowResult | None) -> str:
    """One line of the table. With several seeds a loss reads mean±range, Δ val is paired by seed,
    and a last column says whether |Δ val| is larger than the spread across seeds (the larger of
    the two rows' seed ranges)."""
    params = f"{result.runs[0]['params'] / 1e6:.2f}M"
    secs = f"{statistics.mean(r['secs'] for r in result.runs):.0f}s"
    n_seeds = len(result.runs)
    train_s, val_s = summarize(result.losses("train_loss")), summarize(result.losses("val_loss"))

    def cell(s) -> str:
        if s.mean is None:
            return "diverged"
        return f"{s.mean:.4f}" if n_seeds == 1 else f"{s.mean:.4f}±{s.range:.4f}"

    delta, verdict = "", ""
    if prev is not None:
        c = compare(result.losses("val_loss"), prev.losses("val_loss"))
        delta = "" if c.effect is None else f"{c.effect:+.4f}"
        if n_seeds > 1 and c.effect is not None:
            verdict = "yes" if abs(c.effect) > c.spread else "no (noise)"
    width = 9 if n_seeds == 1 else 16
    line = f"{result.row.label:<22}{params:>8}{cell(train_s):>{width}}{cell(val_s):>{width}}{delta:>9}{secs:>7}"
    if verdict:
        line += f"  {verdict}"
    if val_s.n_diverged:
        line += f"  ({val_s.n_diverged}/{n_seeds} diverged)"
    return line


def header(n_seeds: int) -> str:
    if n_seeds == 1:
        head = COLUMNS
    else:
        head = f"{'variant':<22}{'params':>8}{'train (±range)':>16}{'val (±range)':>16}{'Δ val':>9}{'secs':>7}  |Δ|>spread?"
    return head + "\n" + "-" * len(head)
