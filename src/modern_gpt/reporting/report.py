"""The Markdown report as a function of the results (no DVC, no torch): warnings, the table, the sections.

Everything printed is rounded and ordered, so the same results always give the same bytes. The
table's columns are declared once, in COLUMNS: header, alignment and how a cell reads.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from tabulate import tabulate

from ..serving.kv_cache import human
from .results import RowResult
from .settings import Settings
from .stats import (NA_VERDICT, NO_EFFECT, NOT_SHOWN, SEEDS_NEEDED_METHOD, SPREAD_SDS, Comparison, Summary, compare,
                    rule, verdict_text)
from .sweep import AtBest, Cell, SweepRow, selection_bias

LN2 = math.log(2)


# ------------------------------------------------------------------------------------- cells

def num(x: float | None, digits: int = 4, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def mean_sd(s: Summary) -> str:
    """'1.0427 ± 0.0003', with '(1/3 diverged)' after it, or '3/3 diverged'."""
    if s.mean is None:
        return f"{s.n_diverged}/{s.n} diverged"
    text = num(s.mean) + (f" ± {num(s.sd)}" if s.sd is not None else "")
    return text + (f" ({s.n_diverged}/{s.n} diverged)" if s.n_diverged else "")


def millions(n: int) -> str:
    return f"{n / 1e6:.3f}M"


def verdict(c: Comparison | None) -> str:
    text = verdict_text(c)
    return f"**{text}**" if c is not None and c.verdict in ("better", "worse") else text


def interval(c: Comparison | None) -> str:
    return f"[{num(c.ci_low, sign=True)}, {num(c.ci_high, sign=True)}]" if c and c.ci_low is not None else ""


def margins(c: Comparison | None) -> str:
    """'+0.0496 / +0.0542 ± 0.0012': the spread and interval margins, then the band around them."""
    if c is None or c.margin_spread is None:
        return ""
    return f"{num(c.margin_spread, sign=True)} / {num(c.margin_interval, sign=True)} ± {num(c.band)}"


@dataclass(frozen=True)
class Column:
    header: str                                  # '{confidence}' is replaced by the stated confidence
    align: str                                   # 'left' | 'right'
    cell: Callable[[str, RowResult], str]        # (the row's number, its result) → the cell's text


COLUMNS = [
    Column("#", "right", lambda i, r: i),
    Column("variant", "left", lambda i, r: r.label),
    Column("params", "right", lambda i, r: millions(r.params)),
    Column("Δ params", "right",
           lambda i, r: "" if r.d_params is None else f"{r.d_params:+,}" + (" ≠" if r.unequal else "")),
    Column("train", "right", lambda i, r: mean_sd(r.train)),
    Column("val", "right", lambda i, r: mean_sd(r.val)),
    Column("bpc", "right", lambda i, r: num(r.bpc.mean, 3)),
    Column("Δ val", "right", lambda i, r: num(r.vs.effect, sign=True) if r.vs else ""),
    Column("range", "right", lambda i, r: num(r.vs.range if r.vs else r.val.range)),     # seen, not judged
    Column("spread", "right", lambda i, r: num(r.vs.spread) if r.vs else ""),           # the threshold
    Column("{confidence} CI of Δ", "right", lambda i, r: interval(r.vs)),
    Column("margins ± band", "right", lambda i, r: margins(r.vs)),
    Column("verdict", "left", lambda i, r: verdict(r.vs)),
    Column("secs", "right", lambda i, r: f"{r.secs:.0f}"),
]


def markdown_table(rows: list[tuple[str, RowResult]], confidence: float,
                   extra: list[dict[str, str]] = ()) -> str:
    """The table of (number, result) rows, then `extra` rows given as {header: cell} (others blank).
    Padded columns: the raw Markdown reads as a table in a pull request's diff too."""
    body = [[c.cell(i, r) for c in COLUMNS] for i, r in rows]
    body += [[e.get(c.header, "") for c in COLUMNS] for e in extra]
    head = [c.header.replace("{confidence}", f"{confidence:.0%}") for c in COLUMNS]
    return tabulate(body, headers=head, tablefmt="pipe", colalign=[c.align for c in COLUMNS], disable_numparse=True)


def csv_row(r: RowResult) -> dict[str, Any]:
    """One row of reports/ablation.csv: raw numbers, for `dvc plots` and anyone's own analysis."""
    c = r.vs
    return {
        "row": r.slug, "variant": r.label, "params": r.params, "d_params": r.d_params,
        "train_mean": r.train.mean, "train_sd": r.train.sd, "val_mean": r.val.mean, "val_sd": r.val.sd,
        "n": r.val.n_finite, "diverged": r.val.n_diverged, "bpc_mean": r.bpc.mean,
        "d_val": c.effect if c else None, "spread": c.spread if c else None,
        "range": c.range if c else r.val.range,
        "ci_low": c.ci_low if c else None, "ci_high": c.ci_high if c else None,
        "margin_spread": c.margin_spread if c else None, "margin_interval": c.margin_interval if c else None,
        "band": c.band if c else None, "verdict": c.verdict if c else "",
        "noise_kind": c.noise_kind if c else None, "seeds_needed": c.seeds_needed if c else None, "secs": r.secs,
    }


# ------------------------------------------------------------------------------------- warnings

def memorised(rows: list[RowResult], s: Settings) -> list[str]:
    """Rows whose train and val loss per character are both under the threshold, or whose train
    loss is under the corpus's floor: no model can do that without having memorised the text."""
    out = []
    for r in rows:
        for run in r.runs:
            if run.train_loss is None:
                continue
            train, val = run.train_loss / s.train_chars_per_token, run.val_loss / s.val_chars_per_token
            if (train < s.memorised_below and val < s.memorised_below) or (s.floor is not None and train < s.floor):
                out.append(r.label)
                break
    return out


def overfitting(rows: list[RowResult], s: Settings) -> list[str]:
    """'label (seed …)' for runs whose final val loss ended more than overfit_rise above its minimum."""
    out = []
    for r in rows:
        seeds = [run.seed for run in r.runs if run.curve and not run.diverged
                 and run.curve[-1].val > (1 + s.overfit_rise) * min(p.val for p in run.curve)]
        if seeds:
            out.append(f"{r.label} (seed {', '.join(map(str, seeds))})")
    return out


def warnings(rows: list[RowResult], s: Settings) -> list[str]:
    out = []
    if len(rows[0].runs) == 1:
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
    if found := [r.label for r in rows if r.unequal]:
        out.append(f"**Unequal parameters** (marked ≠): {', '.join(found)} differ from the row they are compared "
                   f"with by more than {s.param_tolerance:.0%} in non-embedding parameters, so a capacity change "
                   "is mixed into the effect. `ablation.match_params: true` sizes each row's MLP to match.")
    diverged = [f"{r.label} ({r.val.n_diverged}/{r.val.n})" for r in rows if r.val.n_diverged]
    if diverged:
        out.append(f"**Diverged:** {', '.join(diverged)}: non-finite loss. Those seeds are left out of the means "
                   "and of the paired comparisons, and counted in the cells.")
    return out


# ------------------------------------------------------------------------------------- the rerun check

@dataclass(frozen=True)
class Rerun:
    """A ladder row trained again with perturbed initial weights (`again`, compared with the rerun of the row
    above where that was rerun too), next to the row as the ladder has it (`original`)."""
    original: RowResult
    again: RowResult

    def diffs(self) -> list[float]:
        """rerun - original val loss of each seed that is finite in both."""
        return [b - a for a, b in zip(self.original.values("val_loss"), self.again.values("val_loss"))
                if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]

    def holds(self) -> str:
        """'yes' / '**flipped**' for a settled verdict (the rerun's, without a band, is / is not the same),
        'open' where the original was borderline, '' with nothing compared."""
        o, a = self.original.vs, self.again.vs
        if o is None or a is None or o.verdict == NA_VERDICT:
            return ""
        if o.verdict == "borderline":
            return "open (borderline)"
        return "yes" if a.unbanded == o.verdict else "**flipped**"


@dataclass(frozen=True)
class RerunFigures:
    rms: float | None            # of a run's change, rerun - original
    largest: float | None        # largest |change| of one run
    mean_shift: float | None     # largest |change| of a row's mean
    ratio: float | None          # rms / pooled seed sd of the original rows: RERUN_SD's units
    flipped: int
    settled: int


def rerun_figures(reruns: list[Rerun]) -> RerunFigures:
    diffs = [d for r in reruns for d in r.diffs()]
    sds = [(r.original.val.n_finite - 1, r.original.val.sd) for r in reruns if r.original.val.sd is not None]
    dof = sum(k for k, _ in sds)
    pooled = math.sqrt(sum(k * sd ** 2 for k, sd in sds) / dof) if dof else None
    rms = math.sqrt(math.fsum(d * d for d in diffs) / len(diffs)) if diffs else None
    shifts = [abs(r.again.val.mean - r.original.val.mean) for r in reruns
              if r.again.val.mean is not None and r.original.val.mean is not None]
    holds = [r.holds() for r in reruns]
    return RerunFigures(rms=rms, largest=max(map(abs, diffs)) if diffs else None,
                        mean_shift=max(shifts) if shifts else None,
                        ratio=rms / pooled if rms is not None and pooled else None,
                        flipped=holds.count("**flipped**"), settled=sum(h in ("yes", "**flipped**") for h in holds))


def rerun_section(reruns: list[Rerun], perturbation: float, s: Settings) -> list[str]:
    f = rerun_figures(reruns)
    body = [[r.original.label, mean_sd(r.original.val), mean_sd(r.again.val),
             num(None if r.again.val.mean is None or r.original.val.mean is None
                 else r.again.val.mean - r.original.val.mean, sign=True),
             num(max(map(abs, r.diffs())) if r.diffs() else None),
             verdict(r.original.vs), verdict(r.again.vs), r.holds()] for r in reruns]
    head = ["variant", "val", "val, rerun", "Δ mean", "largest Δ of a run", "verdict", "verdict, rerun",
            "verdict holds"]
    return [
        "## Rerun check: another machine's rounding",
        f"Each row below was trained again on the same seeds and batches with every initial weight multiplied by "
        f"(1 + {perturbation:g} × N(0, 1)). That is float32's rounding, the size of the difference another CPU's "
        "or GPU's kernels make, and training amplifies it the same way; so these reruns stand in for a reviewer "
        "who retrains on another machine. A rerun row is compared with the rerun of the row above where that "
        "was rerun too. A settled verdict holds when the rerun's verdict (without the band) is the same; a "
        "borderline one is open by definition.",
        tabulate(body, headers=head, tablefmt="pipe", colalign=["left"] + ["right"] * 5 + ["left"] * 2,
                 disable_numparse=True),
        f"**Rerun noise:** one run's val loss moved by {num(f.rms)} rms (largest {num(f.largest)}), "
        f"{num(f.ratio, 2)} × the rows' pooled seed sd; row means moved by up to {num(f.mean_shift)}. "
        f"{f.settled - f.flipped} of {f.settled} settled verdicts held"
        + (f"; **{f.flipped} flipped**." if f.flipped else "."),
    ]


# ------------------------------------------------------------------------------------- the learning-rate grid

def lr_label(c: Cell) -> str:
    return f"{c.lr:g} (×{c.multiple:g})"


def instability(c: Cell) -> str:
    """'2/3 seeds (3 spikes), 1/3 diverged'."""
    return (f"spikes in {c.seeds_spiked}/{c.val.n} seeds ({sum(c.spikes)} in all), "
            f"diverged {c.val.n_diverged}/{c.val.n}")


def stability_sentence(pair: AtBest) -> str:
    """What the row did where the row above it spiked or diverged."""
    row, ref = pair.row.row.label, pair.ref.row.label
    unstable = [c for c in pair.ref.cells if c.unstable]
    if not unstable:
        return (f"{ref} neither spiked nor diverged at any rate of the grid, so the grid does not test what {row} "
                "does for stability; widen it to higher rates (`sweep.lr`).")
    out = []
    mine = {c.multiple: c for c in pair.row.cells}
    for c in unstable:
        m = mine[c.multiple]
        worse = sum(c.spikes) + c.val.n_diverged
        ours = sum(m.spikes) + m.val.n_diverged
        outcome = ("removed that instability" if not m.unstable
                   else "reduced it" if ours < worse else "did not remove it")
        out.append(f"At lr {lr_label(c)}, {ref}: {instability(c)}; {row}: {instability(m)}. {row} {outcome}.")
    return " ".join(out)


def sweep_section(rows: list[SweepRow], pairs: list[AtBest], s: Settings, plot_name: str, base_lr: float,
                  uniform: float | None) -> list[str]:
    seeds = ", ".join(str(r.seed) for r in rows[0].cells[0].runs)
    body = []
    for r in rows:
        best = r.best
        for c in r.cells:
            body.append([r.row.label, lr_label(c), mean_sd(c.val), f"{sum(c.spikes)}", f"{c.seeds_spiked}/{c.val.n}",
                         f"{c.val.n_diverged}/{c.val.n}", "best" if c is best else ""])
    head = ["variant", "lr", "val", "spikes", "seeds that spiked", "diverged", ""]
    text = [
        "## Learning rate",
        f"{' and '.join(r.row.label for r in rows)} trained at each learning rate below (multiples of train.lr "
        f"{base_lr:g}; min_lr scaled alike), on seeds {seeds}; the runs at {base_lr:g} are the main table's. "
        f"A **spike** is an episode in which a step's training loss rose more than {s.spike_threshold:g} nats above the "
        "lowest loss before it (`report.spike_threshold`), counted after warm-up (the first optimiser steps jump "
        "alike in every row at a high rate); a seed **diverged** when its loss went non-finite, or, "
        "after warm-up, more than 10% above the uniform model's"
        + (f" (ln V = {uniform:.3f})" if uniform is not None else "") + ": the run "
        "stops there and is left out of the mean. A row's **best** rate has the lowest mean val loss among the "
        "rates where no seed diverged.",
        tabulate(body, headers=head, tablefmt="pipe", colalign=["left", "right", "right", "right", "right", "right",
                                                                 "left"], disable_numparse=True),
        f"![validation loss against learning rate, mean and seed range]({plot_name})",
    ]
    for pair in pairs:
        if pair.vs is None:
            text.append(f"**{pair.row.row.label} against {pair.ref.row.label} at their best rates:** one of them "
                        "diverged at every rate; no comparison.")
            continue
        c, a, b = pair.vs, pair.row.best, pair.ref.best
        changed = pair.vs.verdict != pair.main.verdict
        text.append(
            f"**{pair.row.row.label} at lr {a.lr:g} against {pair.ref.row.label} at lr {b.lr:g}** (each at its best "
            f"rate): Δ val {num(c.effect, sign=True)} ("
            + (f"spread {num(c.spread)}, range {num(c.range)}, {s.confidence:.0%} CI {interval(c)}, "
               f"margins {margins(c)}"
               if c.ci_low is not None else f"{c.n_pairs} seed") + f"): {verdict(c)}. "
            + (f"The verdict changes: at lr {base_lr:g} for both it was {verdict(pair.main)}."
               if changed else f"The same verdict as at lr {base_lr:g} for both.")
            + " " + stability_sentence(pair))
    bias = selection_bias(rows)
    if bias is not None:
        k = max(len(r.cells) for r in rows)
        text.append(
            f"**The best rate is chosen on the seeds that judge it**, which favours it: of {k} equally good rates, "
            f"the best mean lies below the others by luck alone by about {num(bias)} nats (E[max of {k} normals] × "
            "the seed sd pooled over every cell of the grid, unstable ones included, / √seeds). A difference at the best rates smaller than that is not evidence; "
            "new seeds at the chosen rates would remove the bias (`dvc exp run -S seeds=...`).")
    return text


# ------------------------------------------------------------------------------------- serving

def serving_section(rows: list[RowResult], served: list[dict], s: Settings) -> list[str]:
    """What each row costs to generate with (the serve stage's measurements, one dict per row), and what it
    wrote."""
    by_slug = {m["slug"]: m for m in served}
    budget = s.serving_budget_gib * 2 ** 30
    first = served[0]
    cfg = first["settings"]
    body, notes, above = [], [], None

    def sequences(m: dict) -> int:
        """Full-context sequences whose caches fit in the budget next to one copy of the weights."""
        return max(0, int((budget - m["weights_bytes"]) // m["kv_bytes_per_sequence"]))

    for r in rows:
        m = by_slug.get(r.slug)
        if m is None:
            continue
        fits = sequences(m)
        ratio = m["kv_bytes_per_sequence"] / above["kv_bytes_per_sequence"] if above else None
        body.append([r.label, str(m["n_kv_head"]), human(m["kv_bytes_per_token"]), human(m["kv_bytes_per_sequence"]),
                     f"{ratio:.2f}×" if ratio is not None and ratio != 1 else "", f"{fits:,}",
                     f"{m['prefill_tokens_per_sec']:,.0f}", f"{m['decode_tokens_per_sec']:,.0f}"])
        if ratio is not None and ratio != 1:
            notes.append(f"**{r.label}** keeps {ratio:.2f}× the KV cache of the row above ({above['n_kv_head']} → "
                         f"{m['n_kv_head']} K/V heads), so {sequences(above):,} → {fits:,} full-context sequences fit in "
                         f"{s.serving_budget_gib:g} GiB; decode speed {above['decode_tokens_per_sec']:,.0f} → "
                         f"{m['decode_tokens_per_sec']:,.0f} tokens/s.")
        above = m
    machines = sorted({f"{m['machine']}, {m['threads']} threads, torch {m['torch']}" for m in served})
    head = ["variant", "K/V heads", "KV cache per token", f"per sequence ({first['context']} tokens)",
            "vs row above", f"sequences in {s.serving_budget_gib:g} GiB", "prefill tokens/s†", "decode tokens/s†"]
    text = [
        "## Serving cost",
        "Generating keeps every past token's keys and values (the KV cache) for each layer, for the K/V heads "
        "only: grouped-query attention's benefit lives here, not in the loss. Bytes per token = 2 (K and V) × layers "
        "× K/V heads × head size × 4 (float32), computed from each row's shape and checked against the real "
        "cache tensor's size. Sequences that fit: (the budget − one copy of the weights) ÷ one full-context "
        "sequence's cache (`report.serving_budget_gib`).",
        tabulate(body, headers=head, tablefmt="pipe", colalign=["left"] + ["right"] * 7, disable_numparse=True),
        *notes,
        f"† Measured by the serve stage on each row's seed-{first['seed']} model: median of {cfg['repeats']} runs, "
        f"{cfg['batch']} sequences at once, a {len(first['prompt'])}-token prompt (prefill) then "
        f"{first['new_tokens']} tokens one at a time with the cache (decode), greedy; on {'; '.join(machines)}. "
        "They depend on the machine, like the seconds column.",
        "## Samples",
        f"Each row's seed-{first['seed']} model continues the first {len(first['prompt'])} tokens of the validation "
        f"text, sampled at temperature {cfg['temperature']:g} among the {cfg['top_k']} likeliest tokens (sampler "
        f"seed {cfg['seed']}), up to the context of {first['context']} tokens (`modern-gpt sample "
        "data/runs/<row>/<seed>` does the same by hand). The prompt:",
        fence(first["prompt_text"]),
    ]
    for r in rows:
        if r.slug in by_slug:
            text += [f"**{r.label}**", fence(by_slug[r.slug]["prompt_text"] + by_slug[r.slug]["sample_text"])]
    return text


def fence(text: str) -> str:
    """A fenced block that no backticks inside can close."""
    ticks = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{ticks}text\n{text.rstrip()}\n{ticks}"


# ------------------------------------------------------------------------------------- the report

@dataclass(frozen=True)
class Report:
    markdown: str
    metrics: dict                 # reports/metrics.json: per row val mean, sd, n
    table: list[dict]             # reports/ablation.csv: the ladder, then the A/A and leave-one-out rows
    full: Comparison              # the full model against the baseline


def build(rows: list[RowResult], info: dict[str, str], s: Settings, plot_name: str,
          aa: RowResult | None = None, loo: list[RowResult] = (), reruns: list[Rerun] = (),
          perturbation: float = 0.0, sweep: list[SweepRow] = (), pairs: list[AtBest] = (),
          sweep_plot: str = "lr_sweep.png", uniform: float | None = None, serve: list[dict] = ()) -> Report:
    """The report of a ladder (row 0 the baseline, each row against the one above), with the optional
    A/A copy of the baseline (compared with it), leave-one-out rows (compared with the full model) and
    reruns with perturbed initial weights (compared with their rows)."""
    stated = {r.vs.confidence for r in [*rows, *loo, *([aa] if aa else [])] if r.vs is not None}
    if stated - {s.confidence}:
        raise ValueError(f"rows compared at confidence {sorted(stated)}, report states {s.confidence}")
    extra = []
    if s.floor is not None:
        extra.append({"variant": "floor (entropy of the corpus process)", "val": num(s.floor * s.val_chars_per_token),
                      "bpc": num(s.floor / LN2, 3)})
    full = compare(rows[-1].values("val_loss"), rows[0].values("val_loss"), confidence=s.confidence,
                   band=s.borderline)
    parts = [
        "# Ablation: from the Step 1 GPT to the modern design",
        "Written by `dvc repro` (stage `report`); do not edit by hand. Each row adds one change to the row above "
        "it, at the same shape, on the same seeds and batches.",
        "## Provenance",
        tabulate(list(info.items()), headers=["", ""], tablefmt="pipe", disable_numparse=True),
        "## Ablation",
        *warnings(rows, s),
        f"**Rule.** {rule(s.confidence)}",
        markdown_table([(str(i), r) for i, r in enumerate(rows)], s.confidence, extra),
        "Losses are mean ± sd over seeds, in nats per token on fixed validation windows; bpc is bits per character "
        "of the validation text. Δ val is the mean of the per-seed differences from the row above (negative is "
        "better); range is the larger of the two rows' seed ranges (max − min), shown but not judged; spread is "
        f"{SPREAD_SDS:g} × the pooled seed sd of the two rows, what three seeds of one row typically span: the same "
        "threshold however many seeds run, so more seeds sharpen a verdict. The margins say by how much |Δ val| "
        "clears the spread, and the interval's nearer end clears zero (negative: misses); a verdict needs both "
        f"positive. The band is {s.borderline:g} × the pooled seed sd of the two rows: a row whose smaller margin "
        "lies within it reads **borderline**, because the same runs on another machine (whose rounding differs) "
        "could tip it either way (README: \"Verdicts another machine reproduces\"). A noise row says which kind it "
        f"is: **{NO_EFFECT}** when the {2 * s.confidence - 1:.0%} interval of Δ val lies inside ± the spread "
        f"(whatever the change does, it is smaller than the seeds' own scatter), **{NOT_SHOWN}** when the seeds "
        "can show neither that nor a change; a row of the second kind, and a borderline row, says about how many "
        "seeds would settle its effect as a change, or that none would.¹",
        f"**Full model against the baseline:** Δ val {num(full.effect, sign=True)} (spread {num(full.spread)}, "
        f"range {num(full.range)}, {s.confidence:.0%} CI {interval(full) or '–'}): {verdict(full)}; params "
        f"{millions(rows[0].params)} → {millions(rows[-1].params)}.",
    ]
    table = [csv_row(r) for r in rows]
    if aa is not None:
        c = aa.vs
        ok = c.verdict in ("noise", NA_VERDICT)
        parts += [
            "## A/A check",
            f"The baseline trained again on seeds {', '.join(str(r.seed) for r in aa.runs)}, compared with the "
            f"baseline on seeds {', '.join(str(r.seed) for r in rows[0].runs)} by the same rule: Δ val "
            f"{num(c.effect, sign=True)}, spread {num(c.spread)}, range {num(c.range)}, CI {interval(c) or '–'}: "
            f"{verdict(c)}. "
            + ("As it must be: the rule calls no difference between two copies of one configuration."
               if ok else "**The rule called a difference between two copies of one configuration: treat every "
                          "verdict above with suspicion (seed noise is larger than the seeds here show).**"),
        ]
        table.append({**csv_row(aa), "row": "aa"})
    if loo:
        reference = dataclasses.replace(rows[-1], label="full model", vs=None, d_params=None, unequal=False)
        parts += [
            "## Leave one out",
            "The ladder is cumulative, so a row's effect can depend on the rows before it. Here each change is "
            "reverted alone from the full model and compared with it: **worse** means the change helps in the full "
            "model.",
            markdown_table([("", reference)] + [(str(i + 1), r) for i, r in enumerate(loo)], s.confidence),
        ]
        table += [csv_row(r) for r in loo]
    if serve:
        parts += serving_section(rows, list(serve), s)
    if sweep:
        parts += sweep_section(list(sweep), list(pairs), s, sweep_plot, rows[0].runs[0].train.lr, uniform)
    if reruns:
        parts += rerun_section(list(reruns), perturbation, s)
        table += [{**csv_row(r.again), "row": f"rerun_{r.original.slug}"} for r in reruns]
    parts += [
        "## Validation curves",
        f"![validation loss per row, mean and seed band]({plot_name})",
        f"¹ {SEEDS_NEEDED_METHOD}",
    ]
    r5 = lambda x: None if x is None else round(x, 5)                      # noqa: E731
    metrics = {r.slug: {"val_mean": r5(r.val.mean), "val_sd": r5(r.val.sd), "n": r.val.n_finite} for r in rows}
    return Report("\n\n".join(parts) + "\n", metrics, table, full)
