"""The validation curves: a table for `dvc plots` and anyone's analysis, and a PNG for the report."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .results import RowResult


def curves(rows: list[RowResult]) -> list[dict[str, Any]]:
    """Validation loss per evaluation step, mean and range over the seeds that reached it."""
    out = []
    for r in rows:
        by_iter: dict[int, list[float]] = {}
        for run in r.runs:
            for point in run.curve:
                by_iter.setdefault(point.iter, []).append(point.val)
        for it in sorted(by_iter):
            vals = by_iter[it]
            out.append({"row": r.slug, "variant": r.label, "iter": it, "seeds": len(vals),
                        "val_mean": sum(vals) / len(vals), "val_min": min(vals), "val_max": max(vals)})
    return out


def plot(curve_rows: list[dict], path: str | Path, floor_per_token: float | None = None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    order = list(dict.fromkeys(r["row"] for r in curve_rows))
    for i, slug in enumerate(order):
        pts = [r for r in curve_rows if r["row"] == slug]
        xs = [p["iter"] for p in pts]
        color = plt.cm.tab10(i % 10)
        ax.plot(xs, [p["val_mean"] for p in pts], color=color, label=pts[0]["variant"], linewidth=1.4)
        ax.fill_between(xs, [p["val_min"] for p in pts], [p["val_max"] for p in pts], color=color, alpha=0.15,
                        linewidth=0)
    if floor_per_token is not None:
        ax.axhline(floor_per_token, color="black", linestyle="--", linewidth=1, label="floor (process entropy)")
    ax.set_xlabel("training step")
    ax.set_ylabel("validation loss (nats per token)")
    ax.set_title("Validation loss: mean over seeds, band = min–max")
    later = [r["val_mean"] for r in curve_rows if r["iter"] > 0]
    if later:                                            # the first point would flatten everything after it
        low = min([*later, floor_per_token if floor_per_token is not None else math.inf])
        ax.set_ylim(low - 0.05 * abs(low), max(later) + 0.05 * abs(max(later)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
