"""The Markdown report, its CSVs and its plot, as functions of the run results (no DVC, no torch).

`build` takes what the pipeline wrote (each row's config and each run's metrics, plus the corpus
facts) and returns the report's text and tables; the report stage writes them. Everything printed
is rounded and ordered, so the same results always give the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from .stats import NA_VERDICT, RULE, SEEDS_NEEDED_METHOD, Comparison, Summary, compare, summarize

LN2 = math.log(2)


@dataclass
class RowRuns:
    spec: dict                      # the row's resolved config file (configs/<row>.json)
    runs: list[dict]                # one metrics file per seed, in the order of the seeds

    @property
    def slug(self) -> str:
        return self.spec["row"]

    @property
    def label(self) -> str:
        return self.spec["label"]

    def values(self, key: str) -> list[float | None]:
        return [r[key] for r in self.runs]


@dataclass(frozen=True)
class Settings:
    confidence: float = 0.95
    memorised_below: float = 0.2    # nats per character, train and val both
    overfit_rise: float = 0.02      # final val above the curve's minimum, as a fraction
    param_tolerance: float = 0.05   # non-embedding params, as a fraction of the compared row's
    train_chars_per_token: float = 1.0
    val_chars_per_token: float = 1.0
    floor: float | None = None      # nats per character: the corpus process's entropy, when known


@dataclass
class RowStats:
    rows: RowRuns
    train: Summary
    val: Summary
    bpc: Summary
    vs: Comparison | None           # against the row it is compared with, paired by seed
    params: int
    d_params: int | None
    unequal: bool                   # non-embedding params differ by more than the tolerance
    secs: float


def row_stats(row: RowRuns, ref: RowRuns | None, s: Settings) -> RowStats:
    params = row.runs[0]["params"]
    unequal = False
    if ref is not None:
        mine, theirs = row.runs[0]["params_non_embedding"], ref.runs[0]["params_non_embedding"]
        unequal = abs(mine - theirs) > s.param_tolerance * theirs
    return RowStats(
        rows=row, train=summarize(row.values("train_loss")), val=summarize(row.values("val_loss")),
        bpc=summarize(row.values("val_bpc")),
        vs=compare(row.values("val_loss"), ref.values("val_loss"), confidence=s.confidence) if ref else None,
        params=params, d_params=params - ref.runs[0]["params"] if ref else None, unequal=unequal,
        secs=sum(x["secs"] for x in row.runs) / len(row.runs),
    )


# ------------------------------------------------------------------------------------- warnings

def memorised(rows: list[RowRuns], s: Settings) -> list[str]:
    """Rows whose train and val loss per character are both under the threshold, or whose train
    loss is under the corpus's floor: no model can do that without having memorised the text."""
    out = []
    for r in rows:
        for run in r.runs:
            if run["train_loss"] is None:
                continue
            train, val = run["train_loss"] / s.train_chars_per_token, run["val_loss"] / s.val_chars_per_token
            if (train < s.memorised_below and val < s.memorised_below) or (s.floor is not None and train < s.floor):
                out.append(r.label)
                break
    return out


def overfitting(rows: list[RowRuns], s: Settings) -> list[str]:
    """'label (seed …)' for runs whose final val loss ended more than overfit_rise above its minimum."""
    out = []
    for r in rows:
        seeds = [run["seed"] for run in r.runs if run["curve"] and not run["diverged"]
                 and run["curve"][-1]["val"] > (1 + s.overfit_rise) * min(p["val"] for p in run["curve"])]
        if seeds:
            out.append(f"{r.label} (seed {', '.join(map(str, seeds))})")
    return out


def warnings(rows: list[RowRuns], stats: list[RowStats], s: Settings) -> list[str]:
    out = []
    n_seeds = len(rows[0].runs)
    if n_seeds == 1:
        out.append("**One seed: no verdicts.** A single run per row cannot separate a change from seed noise; "
                   "list three or more seeds in params.yaml.")
    if found := memorised(rows, s):
        out.append(f"**Memorised:** {', '.join(found)}. The loss is below what the text allows "
                   f"(train and val under {s.memorised_below:g} nats per character"
                   + (f", or train under the corpus's floor of {s.floor:.4f}" if s.floor is not None else "")
                   + "): once the model has memorised its corpus, every delta is noise. Use a larger corpus or "
                   "fewer steps.")
    if found := overfitting(rows, s):
        out.append(f"**Overfitting:** validation loss ended more than {s.overfit_rise:.0%} above its minimum in "
                   f"{'; '.join(found)}.")
    if found := [st.rows.label for st in stats if st.unequal]:
        out.append(f"**Unequal parameters** (marked ≠): {', '.join(found)} differ from the row they are compared "
                   f"with by more than {s.param_tolerance:.0%} in non-embedding parameters, so a capacity change "
                   "is mixed into the effect. `ablation.match_params: true` sizes each row's MLP to match.")
    diverged = [f"{st.rows.label} ({st.val.n_diverged}/{st.val.n})" for st in stats if st.val.n_diverged]
    if diverged:
        out.append(f"**Diverged:** {', '.join(diverged)}: non-finite loss. Those seeds are left out of the means "
                   "and of the paired comparisons, and counted in the cells.")
    return out


# ------------------------------------------------------------------------------------- tables

def _num(x: float | None, digits: int = 4, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _mean_sd(s: Summary) -> str:
    if s.mean is None:
        return f"{s.n_diverged}/{s.n} diverged"
    text = _num(s.mean) + (f" ± {_num(s.sd)}" if s.sd is not None else "")
    return text + (f" ({s.n_diverged}/{s.n} diverged)" if s.n_diverged else "")


def _params(n: int) -> str:
    return f"{n / 1e6:.3f}M"


def _verdict(c: Comparison | None) -> str:
    if c is None:
        return ""
    if c.verdict in ("better", "worse"):
        return f"**{c.verdict}**"
    if c.verdict == "noise":
        return f"noise (~{c.seeds_needed} seeds)" if c.seeds_needed else "noise (seeds won't resolve)"
    return c.verdict


def _ci(c: Comparison | None) -> str:
    return f"[{_num(c.ci_low, sign=True)}, {_num(c.ci_high, sign=True)}]" if c and c.ci_low is not None else ""


HEAD = ["#", "variant", "params", "Δ params", "train", "val", "bpc", "Δ val", "spread", "95% CI of Δ", "verdict", "secs"]
ALIGN = ["right", "left", "right", "right", "right", "right", "right", "right", "right", "right", "left", "right"]


def table_row(index: str, st: RowStats) -> list[str]:
    c = st.vs
    d_params = "" if st.d_params is None else f"{st.d_params:+,}" + (" ≠" if st.unequal else "")
    return [index, st.rows.label, _params(st.params), d_params, _mean_sd(st.train), _mean_sd(st.val),
            _num(st.bpc.mean, 3), _num(c.effect, sign=True) if c else "",
            _num(c.spread if c else st.val.range), _ci(c), _verdict(c), f"{st.secs:.0f}"]


def markdown_table(body: list[list[str]], confidence: float) -> str:
    # padded columns: the raw Markdown reads as a table in a pull request's diff too
    head = [h.replace("95%", f"{confidence:.0%}") for h in HEAD]
    return tabulate(body, headers=head, tablefmt="pipe", colalign=ALIGN, disable_numparse=True)


def csv_rows(stats: list[RowStats]) -> list[dict[str, Any]]:
    """One dict per row: the table for `dvc plots` and for anyone's own analysis."""
    return [{
        "row": st.rows.slug, "variant": st.rows.label, "params": st.params, "d_params": st.d_params,
        "train_mean": st.train.mean, "train_sd": st.train.sd, "val_mean": st.val.mean, "val_sd": st.val.sd,
        "n": st.val.n_finite, "diverged": st.val.n_diverged, "bpc_mean": st.bpc.mean,
        "d_val": st.vs.effect if st.vs else None, "spread": st.vs.spread if st.vs else st.val.range,
        "ci_low": st.vs.ci_low if st.vs else None, "ci_high": st.vs.ci_high if st.vs else None,
        "verdict": st.vs.verdict if st.vs else "", "seeds_needed": st.vs.seeds_needed if st.vs else None,
        "secs": st.secs,
    } for st in stats]


def curves(rows: list[RowRuns]) -> list[dict[str, Any]]:
    """Validation loss per evaluation step, mean and range over the seeds that reached it."""
    out = []
    for r in rows:
        by_iter: dict[int, list[float]] = {}
        for run in r.runs:
            for point in run["curve"]:
                by_iter.setdefault(point["iter"], []).append(point["val"])
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


# ------------------------------------------------------------------------------------- the report

@dataclass
class Report:
    markdown: str
    metrics: dict
    table: list[dict]
    curves: list[dict]
    extra: list[dict] = field(default_factory=list)   # A/A and leave-one-out rows, for the CSV


def build(rows: list[RowRuns], info: dict, s: Settings, plot_name: str,
          aa: RowRuns | None = None, loo: list[RowRuns] | None = None) -> Report:
    """The report of a ladder (row 0 the baseline), with the optional A/A copy and leave-one-out rows."""
    stats = [row_stats(r, rows[i - 1] if i else None, s) for i, r in enumerate(rows)]
    body = [table_row(str(i), st) for i, st in enumerate(stats)]
    if s.floor is not None:
        body.append(["", "floor (entropy of the corpus process)", "", "", "", _num(s.floor * s.val_chars_per_token),
                     _num(s.floor / LN2, 3), "", "", "", "", ""])
    full = compare(rows[-1].values("val_loss"), rows[0].values("val_loss"), confidence=s.confidence)
    rule = RULE.replace("95%", f"{s.confidence:.0%}")
    parts = [
        "# Ablation: from the Step 1 GPT to the modern design",
        "Written by `dvc repro` (stage `report`); do not edit by hand. Each row adds one change to the row above "
        "it, at the same shape, on the same seeds and batches.",
        "## Provenance",
        tabulate(list(info.items()), headers=["", ""], tablefmt="pipe", disable_numparse=True),
        "## Ablation",
    ]
    parts += warnings(rows, stats, s)
    parts += [
        f"**Rule.** {rule}",
        markdown_table(body, s.confidence),
        "Losses are mean ± sd over seeds, in nats per token on fixed validation windows; bpc is bits per character "
        "of the validation text. Δ val is the mean of the per-seed differences from the row above (negative is "
        "better); spread is the larger of the two rows' seed ranges (max − min). A noise row says about how many "
        "seeds would resolve an effect of its size.¹",
        f"**Full model against the baseline:** Δ val {_num(full.effect, sign=True)} (spread {_num(full.spread)}, "
        f"{s.confidence:.0%} CI {_ci(full) or '–'}): {_verdict(full)}; params {_params(stats[0].params)} → "
        f"{_params(stats[-1].params)}.",
    ]
    extra: list[dict] = []
    if aa is not None:
        st = row_stats(aa, rows[0], s)
        c = st.vs
        ok = c.verdict in ("noise", NA_VERDICT)
        parts += [
            "## A/A check",
            f"The baseline trained again on seeds {', '.join(str(r['seed']) for r in aa.runs)}, compared with the "
            f"baseline on seeds {', '.join(str(r['seed']) for r in rows[0].runs)} by the same rule: Δ val "
            f"{_num(c.effect, sign=True)}, spread {_num(c.spread)}, CI {_ci(c) or '–'}: {_verdict(c)}. "
            + ("As it must be: the rule calls no difference between two copies of one configuration."
               if ok else "**The rule called a difference between two copies of one configuration: treat every "
                          "verdict above with suspicion (seed noise is larger than the seeds here show).**"),
        ]
        extra += [{**d, "row": "aa"} for d in csv_rows([st])]
    if loo:
        full_row = RowRuns({**rows[-1].spec, "label": "full model"}, rows[-1].runs)
        loo_stats = [row_stats(r, rows[-1], s) for r in loo]
        parts += [
            "## Leave one out",
            "The ladder is cumulative, so a row's effect can depend on the rows before it. Here each change is "
            "reverted alone from the full model and compared with it: **worse** means the change helps in the full "
            "model.",
            markdown_table([table_row("", row_stats(full_row, None, s))]
                           + [table_row(str(i + 1), st) for i, st in enumerate(loo_stats)], s.confidence),
        ]
        extra += csv_rows(loo_stats)
    parts += [
        "## Validation curves",
        f"![validation loss per row, mean and seed band]({plot_name})",
        f"¹ {SEEDS_NEEDED_METHOD}",
    ]
    r5 = lambda x: None if x is None else round(x, 5)                      # noqa: E731
    metrics = {st.rows.slug: {"val_mean": r5(st.val.mean), "val_sd": r5(st.val.sd), "n": st.val.n_finite}
               for st in stats}
    return Report("\n\n".join(parts) + "\n", metrics, csv_rows(stats), curves(rows), extra)
