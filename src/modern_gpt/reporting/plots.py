"""Every plot beside the report, each drawn from the rows of the CSV written next to it (for `dvc plots` and anyone's
analysis): the validation curves (val_curves.png), the learning-rate grid (lr_sweep.png) and the effect of each
change against model size (scale.png). Matplotlib is imported inside each, with the Agg backend, and the PNGs are
saved without the Software tag, so the same rows give the same bytes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .results import RowResult, SweepRow


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


def curves_plot(curve_rows: list[dict], path: str | Path, floor_per_token: float | None = None) -> None:
    """val_curves.png: each row's mean validation loss per step and its seed band, and the floor's line."""
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


SWEEP_COLUMNS = ["row", "variant", "lr", "multiple", "seeds", "val_mean", "val_sd", "val_min", "val_max", "spikes",
                 "seeds_spiked", "diverged", "best"]


def sweep_table(rows: list[SweepRow]) -> list[dict[str, Any]]:
    """The learning-rate grid as a table: per covered row and rate, val over the seeds that did not diverge,
    spikes and divergence."""
    out = []
    for r in rows:
        for c in r.cells:
            vals = [v for v in (run.val_loss for run in c.runs) if v is not None and math.isfinite(v)]
            out.append({"row": r.row.slug, "variant": r.row.label, "lr": c.lr, "multiple": c.multiple,
                        "seeds": c.val.n, "val_mean": c.val.mean, "val_sd": c.val.sd,
                        "val_min": min(vals) if vals else None, "val_max": max(vals) if vals else None,
                        "spikes": sum(c.spikes), "seeds_spiked": c.seeds_spiked, "diverged": c.val.n_diverged,
                        "best": c is r.best})
    return out


def sweep_plot(table: list[dict], path: str | Path) -> None:
    """Val loss against learning rate (log axis), one line per row with its seed range; a rate where a seed
    diverged is marked with an x on the row's line at the top of the axes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    if not table:
        ax.text(0.5, 0.5, "no learning-rate grid (params: sweep.lr is empty)", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
    order = list(dict.fromkeys(r["row"] for r in table))
    for i, slug in enumerate(order):
        pts = [r for r in table if r["row"] == slug]
        color = plt.cm.tab10(i % 10)
        ok = [p for p in pts if p["val_mean"] is not None]
        xs = [p["lr"] for p in ok]
        ax.plot(xs, [p["val_mean"] for p in ok], color=color, marker="o", label=pts[0]["variant"], linewidth=1.4)
        ax.fill_between(xs, [p["val_min"] for p in ok], [p["val_max"] for p in ok], color=color, alpha=0.15,
                        linewidth=0)
        for p in pts:
            if p["diverged"]:
                ax.plot([p["lr"]], [1.0], transform=ax.get_xaxis_transform(), marker="x", color=color,
                        markersize=9, clip_on=False, linestyle="none")
    if table:
        ax.set_xscale("log")
        rates = sorted({r["lr"] for r in table})
        ax.set_xticks(rates, [f"{x:g}" for x in rates])      # the grid's own rates, no scientific minor labels
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("peak learning rate (log scale); x at the top: a seed diverged there")
        ax.set_ylabel("validation loss (nats per token)")
        ax.set_title("Validation loss against learning rate: mean over seeds, band = min–max")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)


def scale_plot(rows: list[dict[str, Any]], path: str | Path, floor: bool) -> None:
    """scale.png from scale.csv's rows (scale.csv_rows): the effect against N on a log x axis, a line per change,
    the 95% interval of the mean as bars; r with a floor, d without."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for i, slug in enumerate(dict.fromkeys(r["row"] for r in rows)):
        pts = [r for r in rows if r["row"] == slug and r["effect"] is not None]
        xs, ys = [p["params"] for p in pts], [p["effect"] for p in pts]
        err = [[y - (p["ci_low"] if p["ci_low"] is not None else y) for p, y in zip(pts, ys)],
               [(p["ci_high"] if p["ci_high"] is not None else y) - y for p, y in zip(pts, ys)]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, linewidth=1.4, color=plt.cm.tab10(i % 10),
                    label=pts[0]["variant"] if pts else slug)
    ax.axhline(0.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("non-embedding parameters of the full model (N)")
    ax.set_ylabel("r = Δ val / (loss above the floor)" if floor else "Δ val loss (nats per token)")
    ax.set_title("Effect of each change at each size: mean over seeds, 95% interval (below 0 is better)")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
