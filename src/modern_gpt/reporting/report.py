"""The Markdown report as a function of the results (no DVC, no torch): warnings, the table, the sections.

Everything printed is rounded and ordered, so the same results always give the same bytes. The
table's columns are declared once, in COLUMNS: the report's header, alignment and cell, the CSV's raw values,
and the quick command's table.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from tabulate import tabulate

from ..records.stages import ServeRecord
from ..serving.kv_cache import human
from .results import Holds, Ladder, Rerun, Results, RowResult
from .settings import Settings
from .stats import (NO_EFFECT, NOT_SHOWN, SEEDS_NEEDED_METHOD, SPREAD_SDS, Comparison, Summary, Verdict, compare,
                    pooled_sd, rule, verdict_text)
from . import wording as W
from .sweep import AtBest, RowAtRate, SweepRow, selection_bias

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
    return f"**{text}**" if c is not None and c.verdict in (Verdict.BETTER, Verdict.WORSE) else text


def interval(c: Comparison | None) -> str:
    return f"[{num(c.ci_low, sign=True)}, {num(c.ci_high, sign=True)}]" if c and c.ci_low is not None else ""


def margins(c: Comparison | None) -> str:
    """'+0.0496 / +0.0542 ± 0.0012': the spread and interval margins, then the band around them."""
    if c is None or c.margin_spread is None:
        return ""
    return f"{num(c.margin_spread, sign=True)} / {num(c.margin_interval, sign=True)} ± {num(c.band)}"


@dataclass(frozen=True)
class Quick:
    """How the quick command's table shows a column. It prints a row as soon as the row has trained, so its
    widths are fixed; with several seeds a loss reads mean±range and the verdict column appears."""
    header: str
    width: int                                   # < 0: left-aligned
    cell: Callable[[RowResult, int], str]        # (the result, its seed count) → the text
    many: tuple[str, int] | None = None          # (header, width) with several seeds
    many_only: bool = False                      # shown with several seeds only


@dataclass(frozen=True)
class Column:
    header: str                                  # '{confidence}' is replaced by the stated confidence
    align: str                                   # 'left' | 'right'
    cell: Callable[[str, RowResult], str]        # (the row's number, its result) → the report's cell
    csv: tuple[tuple[str, Callable[[RowResult], Any]], ...] = ()   # reports/ablation.csv: (name, raw value)
    quick: Quick | None = None                   # the quick command's table
    report: bool = True                          # False: a column of the quick table only


def _vs(get: Callable[[Comparison], Any], otherwise: Any = None) -> Callable[[RowResult], Any]:
    return lambda r: get(r.vs) if r.vs else otherwise


def _quick_loss(summary: Callable[[RowResult], Summary]) -> Callable[[RowResult, int], str]:
    def cell(r: RowResult, n_seeds: int) -> str:
        s = summary(r)
        if s.mean is None:
            return "diverged"
        return f"{s.mean:.4f}" if n_seeds == 1 else f"{s.mean:.4f}±{s.range:.4f}"
    return cell


# The one column list: the report's table (header, alignment, cell), ablation.csv's raw values and the quick
# command's table, in this order.
COLUMNS = [
    Column("#", "right", lambda i, r: i, csv=(("row", lambda r: r.slug),)),
    Column("variant", "left", lambda i, r: r.label, csv=(("variant", lambda r: r.label),),
           quick=Quick("variant", -22, lambda r, n: r.label)),
    Column("params", "right", lambda i, r: millions(r.params), csv=(("params", lambda r: r.params),),
           quick=Quick("params", 8, lambda r, n: f"{r.params / 1e6:>7.2f}M")),
    Column("Δ params", "right",
           lambda i, r: "" if r.d_params is None else f"{r.d_params:+,}" + (" ≠" if r.unequal else ""),
           csv=(("d_params", lambda r: r.d_params),)),
    Column("train", "right", lambda i, r: mean_sd(r.train),
           csv=(("train_mean", lambda r: r.train.mean), ("train_sd", lambda r: r.train.sd)),
           quick=Quick("train", 9, _quick_loss(lambda r: r.train), many=("train (±range)", 16))),
    Column("val", "right", lambda i, r: mean_sd(r.val),
           csv=(("val_mean", lambda r: r.val.mean), ("val_sd", lambda r: r.val.sd), ("n", lambda r: r.val.n_finite),
                ("diverged", lambda r: r.val.n_diverged)),
           quick=Quick("val", 9, _quick_loss(lambda r: r.val), many=("val (±range)", 16))),
    Column("bpc", "right", lambda i, r: num(r.bpc.mean, 3), csv=(("bpc_mean", lambda r: r.bpc.mean),)),
    Column("Δ val", "right", lambda i, r: num(r.vs.effect, sign=True) if r.vs else "",
           csv=(("d_val", _vs(lambda c: c.effect)),),
           quick=Quick("Δ val", 9, lambda r, n: "" if r.vs is None or r.vs.effect is None else f"{r.vs.effect:+.4f}")),
    Column("range", "right", lambda i, r: num(r.vs.range if r.vs else r.val.range),     # seen, not judged
           csv=(("range", lambda r: r.vs.range if r.vs else r.val.range),)),
    Column("spread", "right", lambda i, r: num(r.vs.spread) if r.vs else "",           # the threshold
           csv=(("spread", _vs(lambda c: c.spread)),)),
    Column("{confidence} CI of Δ", "right", lambda i, r: interval(r.vs),
           csv=(("ci_low", _vs(lambda c: c.ci_low)), ("ci_high", _vs(lambda c: c.ci_high)))),
    Column("margins ± band", "right", lambda i, r: margins(r.vs),
           csv=(("margin_spread", _vs(lambda c: c.margin_spread)), ("margin_interval", _vs(lambda c: c.margin_interval)),
                ("band", _vs(lambda c: c.band)))),
    Column("verdict", "left", lambda i, r: verdict(r.vs),
           csv=(("verdict", _vs(lambda c: c.verdict, "")), ("noise_kind", _vs(lambda c: c.noise_kind)),
                ("seeds_needed", _vs(lambda c: c.seeds_needed)))),
    Column("secs", "right", lambda i, r: f"{r.secs:.0f}", csv=(("secs", lambda r: r.secs),),
           quick=Quick("secs", 7, lambda r, n: f"{r.secs:>6.0f}s")),
    Column("verdict", "left", lambda i, r: "", report=False, quick=Quick("verdict", 0, lambda r, n: verdict_text(r.vs) if r.vs else "",
                                                            many_only=True)),
]
TABLE = [c for c in COLUMNS if c.report]


def markdown_table(rows: list[tuple[str, RowResult]], confidence: float,
                   extra: list[dict[str, str]] = ()) -> str:
    """The table of (number, result) rows, then `extra` rows given as {header: cell} (others blank).
    Padded columns: the raw Markdown reads as a table in a pull request's diff too."""
    body = [[c.cell(i, r) for c in TABLE] for i, r in rows]
    body += [[e.get(c.header, "") for c in TABLE] for e in extra]
    head = [c.header.replace("{confidence}", f"{confidence:.0%}") for c in TABLE]
    return tabulate(body, headers=head, tablefmt="pipe", colalign=[c.align for c in TABLE], disable_numparse=True)


def csv_row(r: RowResult) -> dict[str, Any]:
    """One row of reports/ablation.csv: raw numbers, for `dvc plots` and anyone's own analysis."""
    return {name: value(r) for c in COLUMNS for name, value in c.csv}


def _quick_columns(n_seeds: int) -> list[tuple[Quick, str, int]]:
    out = []
    for c in COLUMNS:
        q = c.quick
        if q is None or (q.many_only and n_seeds == 1):
            continue
        header, width = q.many if q.many and n_seeds > 1 else (q.header, q.width)
        out.append((q, header, width))
    return out


def _pad(text: str, width: int) -> str:
    if width == 0:                               # the last column: after two spaces, unpadded
        return f"  {text}" if text else ""
    return f"{text:<{-width}}" if width < 0 else f"{text:>{width}}"


def quick_header(n_seeds: int) -> str:
    """The quick command's header line and its rule."""
    head = "".join(_pad(h, w) for _, h, w in _quick_columns(n_seeds))
    return head + "\n" + "-" * len(head)


def quick_line(r: RowResult) -> str:
    """One line of the quick command's table, then how many seeds diverged, if any."""
    n = len(r.runs)
    line = "".join(_pad(q.cell(r, n), w) for q, _, w in _quick_columns(n))
    if r.val.n_diverged:
        line += f"  ({r.val.n_diverged}/{n} diverged)"
    return line


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


def unequal(rows: list[RowResult]) -> list[str]:
    """Rows whose non-embedding parameters differ from their reference's by more than the tolerance."""
    return [r.label for r in rows if r.unequal]


def diverged(rows: list[RowResult]) -> list[str]:
    """'label (k/n)' for rows with diverged seeds."""
    return [f"{r.label} ({r.val.n_diverged}/{r.val.n})" for r in rows if r.val.n_diverged]


def warnings(rows: list[RowResult], s: Settings) -> list[str]:
    out = []
    if len(rows[0].runs) == 1:
        out.append(W.ONE_SEED)
    if found := memorised(rows, s):
        out.append(W.MEMORISED.format(rows=", ".join(found), below=s.memorised_below,
                                      floor=W.MEMORISED_FLOOR.format(floor=s.floor) if s.floor is not None else ""))
    if found := overfitting(rows, s):
        out.append(W.OVERFITTING.format(rise=s.overfit_rise, runs="; ".join(found)))
    if found := unequal(rows):
        out.append(W.UNEQUAL.format(rows=", ".join(found), tolerance=s.param_tolerance))
    if found := diverged(rows):
        out.append(W.DIVERGED.format(rows=", ".join(found)))
    return out


VAL_GAP = 1.25        # the quick command: val above this × train (mean over a row's seeds) gets a line of its own


def val_gap(rows: list[RowResult]) -> tuple[float, float] | None:
    """(smallest, largest) val / train over the rows, when some row's val is above VAL_GAP × its train."""
    ratios = [r.val.mean / r.train.mean for r in rows if r.val.mean is not None and r.train.mean]
    return (min(ratios), max(ratios)) if ratios and max(ratios) > VAL_GAP else None


def quick_warnings(rows: list[RowResult], s: Settings, train_chars: int) -> list[str]:
    """The quick command's lines under its table: the report's warnings by the report's thresholds, in plain
    text, then val far above train, the units, and where to go next."""
    out = []
    if found := memorised(rows, s):
        out.append(W.Q_MEMORISED.format(rows=", ".join(found), below=s.memorised_below,
                                        floor=W.Q_MEMORISED_FLOOR.format(floor=s.floor) if s.floor is not None else ""))
    if found := overfitting(rows, s):
        out.append(W.Q_OVERFITTING.format(rise=s.overfit_rise, runs="; ".join(found)))
    if gap := val_gap(rows):
        out.append(W.Q_GAP.format(low=gap[0], high=gap[1], chars=train_chars))
    if found := unequal(rows):
        out.append(W.Q_UNEQUAL.format(rows=", ".join(found), tolerance=s.param_tolerance))
    if found := diverged(rows):
        out.append(W.Q_DIVERGED.format(rows=", ".join(found)))
    one_seed = len(rows[0].runs) == 1
    if one_seed:
        out.append(W.Q_ONE_SEED)
    out.append(W.Q_UNITS)
    out.append(W.Q_NEXT_ONE_SEED if one_seed else W.Q_NEXT)
    return out


# ------------------------------------------------------------------------------------- the rerun check

HOLDS_WORDS = {Holds.YES: "yes", Holds.FLIPPED: "**flipped**", Holds.OPEN: "open (borderline)", Holds.NONE: ""}


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
    pooled = pooled_sd(*(r.original.val for r in reruns))
    rms = math.sqrt(math.fsum(d * d for d in diffs) / len(diffs)) if diffs else None
    shifts = [abs(r.again.val.mean - r.original.val.mean) for r in reruns
              if r.again.val.mean is not None and r.original.val.mean is not None]
    holds = [r.holds() for r in reruns]
    return RerunFigures(rms=rms, largest=max(map(abs, diffs)) if diffs else None,
                        mean_shift=max(shifts) if shifts else None,
                        ratio=rms / pooled if rms is not None and pooled else None,
                        flipped=holds.count(Holds.FLIPPED), settled=sum(h in (Holds.YES, Holds.FLIPPED) for h in holds))


def rerun_section(reruns: list[Rerun], perturbation: float, s: Settings) -> list[str]:
    f = rerun_figures(reruns)
    body = [[r.original.label, mean_sd(r.original.val), mean_sd(r.again.val),
             num(None if r.again.val.mean is None or r.original.val.mean is None
                 else r.again.val.mean - r.original.val.mean, sign=True),
             num(max(map(abs, r.diffs())) if r.diffs() else None),
             verdict(r.original.vs), verdict(r.again.vs), HOLDS_WORDS[r.holds()]] for r in reruns]
    head = ["variant", "val", "val, rerun", "Δ mean", "largest Δ of a run", "verdict", "verdict, rerun",
            "verdict holds"]
    return [
        "## Rerun check: another machine's rounding",
        W.RERUN.format(perturbation=perturbation),
        tabulate(body, headers=head, tablefmt="pipe", colalign=["left"] + ["right"] * 5 + ["left"] * 2,
                 disable_numparse=True),
        W.RERUN_NOISE.format(rms=num(f.rms), largest=num(f.largest), ratio=num(f.ratio, 2), mean_shift=num(f.mean_shift),
                             held=f.settled - f.flipped, settled=f.settled,
                             flipped=f"; **{f.flipped} flipped**." if f.flipped else "."),
    ]


# ------------------------------------------------------------------------------------- the learning-rate grid

def lr_label(c: RowAtRate) -> str:
    return f"{c.lr:g} (×{c.multiple:g})"


def instability(c: RowAtRate) -> str:
    """'2/3 seeds (3 spikes), 1/3 diverged'."""
    return (f"spikes in {c.seeds_spiked}/{c.val.n} seeds ({sum(c.spikes)} in all), "
            f"diverged {c.val.n_diverged}/{c.val.n}")


def stability_sentence(pair: AtBest) -> str:
    """What the row did where the row above it spiked or diverged."""
    row, ref = pair.row.row.label, pair.ref.row.label
    unstable = [c for c in pair.ref.cells if c.unstable]
    if not unstable:
        return W.STABILITY_UNTESTED.format(ref=ref, row=row)
    out = []
    mine = {c.multiple: c for c in pair.row.cells}
    for c in unstable:
        m = mine[c.multiple]
        worse = sum(c.spikes) + c.val.n_diverged
        ours = sum(m.spikes) + m.val.n_diverged
        outcome = ("removed that instability" if not m.unstable
                   else "reduced it" if ours < worse else "did not remove it")
        out.append(W.STABILITY_AT.format(lr=lr_label(c), ref=ref, ref_instability=instability(c), row=row,
                                         instability=instability(m), outcome=outcome))
    return " ".join(out)


def sweep_section(rows: list[SweepRow], pairs: list[AtBest], s: Settings, plot_name: str | None, base_lr: float,
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
        W.SWEEP.format(rows=" and ".join(r.row.label for r in rows), base_lr=base_lr, seeds=seeds,
                       spike=s.spike_threshold,
                       uniform=W.SWEEP_UNIFORM.format(uniform=uniform) if uniform is not None else ""),
        tabulate(body, headers=head, tablefmt="pipe", colalign=["left", "right", "right", "right", "right", "right",
                                                                 "left"], disable_numparse=True),
    ]
    if plot_name:
        text.append(f"![validation loss against learning rate, mean and seed range]({plot_name})")
    for pair in pairs:
        if pair.vs is None:
            text.append(W.PAIR_NONE.format(row=pair.row.row.label, ref=pair.ref.row.label))
            continue
        c, a, b = pair.vs, pair.row.best, pair.ref.best
        changed = pair.vs.verdict != pair.main.verdict
        figures = (W.PAIR_FIGURES.format(spread=num(c.spread), range=num(c.range), confidence=s.confidence,
                                         interval=interval(c), margins=margins(c))
                   if c.ci_low is not None else f"{c.n_pairs} seed")
        same = (W.PAIR_CHANGED.format(base_lr=base_lr, verdict=verdict(pair.main)) if changed
                else W.PAIR_SAME.format(base_lr=base_lr))
        text.append(W.PAIR.format(row=pair.row.row.label, lr=a.lr, ref=pair.ref.row.label, ref_lr=b.lr,
                                  effect=num(c.effect, sign=True), figures=figures, verdict=verdict(c), same=same,
                                  stability=stability_sentence(pair)))
    bias = selection_bias(rows)
    if bias is not None:
        k = max(len(r.cells) for r in rows)
        text.append(W.SELECTION_BIAS.format(k=k, bias=num(bias)))
    return text


# ------------------------------------------------------------------------------------- serving

def attention(m: ServeRecord) -> str:
    """A served row's attention, as the serving table shows it: 'full', or 'window 16 on 3 of 4 layers'."""
    windows = m.windows
    local = [w for w in windows if w is not None]
    return f"window {local[0]} on {len(local)} of {len(windows)} layers" if local else "full"


def sequences_that_fit(m: ServeRecord, budget_gib: float) -> int:
    """Full-context sequences whose caches fit in the budget next to one copy of the weights."""
    return max(0, int((budget_gib * 2 ** 30 - m.weights_bytes) // m.kv_bytes_per_sequence))


def kv_shape(m: ServeRecord) -> str:
    """A served row's cache shape in words: '2 K/V heads', '2 K/V heads, window 16 on 3 of 4 layers'."""
    return f"{m.n_kv_head} K/V heads" + (f", {attention(m)}" if attention(m) != "full" else "")


def serving_rows(rows: list[RowResult], by_slug: dict[str, ServeRecord], s: Settings,
                 windowed: bool) -> tuple[list[list[str]], list[str]]:
    """The serving table's body, one line per served row, and a note for each row whose cache per sequence differs
    from the row above's (what it saves or costs)."""
    body, notes, above = [], [], None
    for r in rows:
        m = by_slug.get(r.slug)
        if m is None:
            continue
        fits = sequences_that_fit(m, s.serving_budget_gib)
        ratio = m.kv_bytes_per_sequence / above.kv_bytes_per_sequence if above else None
        body.append([r.label, str(m.n_kv_head), *([attention(m)] if windowed else []),
                     human(m.kv_bytes_per_token), human(m.kv_bytes_per_sequence), human(m.kv_bytes_tensor),
                     f"{ratio:.2f}×" if ratio is not None and ratio != 1 else "", f"{fits:,}",
                     f"{m.prefill_tokens_per_sec:,.0f}", f"{m.decode_tokens_per_sec:,.0f}"])
        if ratio is not None and ratio != 1:
            notes.append(W.SERVING_SAVING.format(
                row=r.label, ratio=ratio, shape_above=kv_shape(above), shape=kv_shape(m),
                fit_above=sequences_that_fit(above, s.serving_budget_gib), fit=fits, budget=s.serving_budget_gib,
                decode_above=above.decode_tokens_per_sec, decode=m.decode_tokens_per_sec))
        above = m
    return body, notes


def samples_section(rows: list[RowResult], served: list[ServeRecord]) -> list[str]:
    """What each served row's seed-0 model wrote after the prompt they share."""
    by_slug = {m.slug: m for m in served}
    first = served[0]
    cfg = first.settings
    text = [
        "## Samples",
        W.SAMPLES.format(seed=first.seed, prompt=len(first.prompt), temperature=cfg.temperature,
                         top_k=cfg.top_k, sampler_seed=cfg.seed, context=first.context),
        fence(first.prompt_text),
    ]
    for r in rows:
        if r.slug in by_slug:
            text += [f"**{r.label}**", fence(by_slug[r.slug].prompt_text + by_slug[r.slug].sample_text)]
    return text


def serving_section(rows: list[RowResult], served: list[ServeRecord], s: Settings) -> list[str]:
    """What each row costs to generate with (the serve stage's measurements, one record per row), and what it
    wrote."""
    by_slug = {m.slug: m for m in served}
    first = served[0]
    windowed = any(attention(m) != "full" for m in served)        # the attention column, only where it varies
    body, notes = serving_rows(rows, by_slug, s, windowed)
    machines = sorted({f"{m.machine}, {m.threads} threads, torch {m.torch}" for m in served})
    head = ["variant", "K/V heads", *(["attention"] if windowed else []), "KV cache per token",
            f"per sequence ({first.context} tokens)", "cache tensor", "vs row above",
            f"sequences in {s.serving_budget_gib:g} GiB", "prefill tokens/s†", "decode tokens/s†"]
    return [
        "## Serving cost",
        W.SERVING + (" " + W.SERVING_WINDOW if windowed else ""),
        tabulate(body, headers=head, tablefmt="pipe", colalign=["left"] + ["right"] * (len(head) - 1),
                 disable_numparse=True),
        *notes,
        W.SERVING_MEASURED.format(seed=first.seed, repeats=first.settings.repeats, batch=first.settings.batch,
                                  prompt=len(first.prompt), new=first.new_tokens, machines="; ".join(machines)),
        *samples_section(rows, served),
    ]


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


CURVES_PLOT, SWEEP_PLOT = "val_curves.png", "lr_sweep.png"      # the plots beside the report


def table_note(s: Settings) -> str:
    return (W.TABLE_NOTE.format(spread_sds=SPREAD_SDS, band=s.borderline, no_effect=NO_EFFECT,
                                equivalence=2 * s.confidence - 1, not_shown=NOT_SHOWN)
            + " " + W.PARAMS_NOTE.format(tolerance=s.param_tolerance))


def ladder_parts(title: str, intro: str, ladder: Ladder, s: Settings, full_line: str,
                 extra: list[dict[str, str]] = ()) -> tuple[list[str], Comparison]:
    """A ladder report's head: title, provenance, warnings, the rule, the table and its note, and the last row
    against row 0 (full_line, a wording template); also that comparison."""
    rows = ladder.rows
    full = compare(rows[-1].values("val_loss"), rows[0].values("val_loss"), confidence=s.confidence,
                   band=s.borderline)
    return [
        title,
        intro,
        "## Provenance",
        tabulate(list(ladder.provenance.items()), headers=["", ""], tablefmt="pipe", disable_numparse=True),
        "## Ablation",
        *warnings(rows, s),
        f"**Rule.** {rule(s.confidence)}",
        markdown_table([(str(i), r) for i, r in enumerate(rows)], s.confidence, extra),
        table_note(s),
        full_line.format(effect=num(full.effect, sign=True), spread=num(full.spread), range=num(full.range),
                         confidence=s.confidence, interval=interval(full) or "–", verdict=verdict(full),
                         params_from=millions(rows[0].params), params_to=millions(rows[-1].params)),
    ], full


def ladder_grid(ladder: Ladder, s: Settings, plot_name: str | None, uniform: float | None) -> list[str]:
    """A ladder's rows of the learning-rate grid, and its pairs at their best rates ([] where it has none)."""
    if not ladder.sweep:
        return []
    return sweep_section(list(ladder.sweep), list(ladder.pairs), s, plot_name, ladder.rows[0].runs[0].train.lr,
                         uniform)


def ladder_serving(ladder: Ladder, s: Settings) -> list[str]:
    """A ladder's serving cost and samples ([] where none of its rows was served)."""
    return serving_section(ladder.rows, list(ladder.serve), s) if ladder.serve else []


def build_beyond(results: Results, ladder: Ladder) -> str:
    """reports/beyond.md: the second ladder (row 0 the book's design, each row against the row above), judged by
    the main table's rule and seeds."""
    s = results.settings
    parts, _ = ladder_parts(W.BEYOND_TITLE, W.BEYOND_INTRO, ladder, s, W.BEYOND_FULL)
    parts += ladder_grid(ladder, s, None, results.uniform)     # the plot beside ablation.md draws its rows too
    parts += ladder_serving(ladder, s)
    parts.append(f"¹ {SEEDS_NEEDED_METHOD}")
    return "\n\n".join(parts) + "\n"


def build(results: Results) -> Report:
    """The report of the main ladder (row 0 the baseline, each row against the one above), with the optional
    A/A copy of the baseline (compared with it), leave-one-out rows (compared with the full model),
    reruns with perturbed initial weights (compared with their rows), the learning-rate grid and the
    serving cost."""
    main, s, aa, loo, reruns = results.main, results.settings, results.aa, results.loo, results.reruns
    rows = main.rows
    stated = {r.vs.confidence for r in [*rows, *loo, *([aa] if aa else [])] if r.vs is not None}
    if stated - {s.confidence}:
        raise ValueError(f"rows compared at confidence {sorted(stated)}, report states {s.confidence}")
    extra = []
    if s.floor is not None:
        extra.append({"variant": "floor (entropy of the corpus process)", "val": num(s.floor * s.val_chars_per_token),
                      "bpc": num(s.floor / LN2, 3)})
    parts, full = ladder_parts(W.TITLE, W.INTRO, main, s, W.FULL_MODEL, extra)
    table = [csv_row(r) for r in rows]
    if aa is not None:
        c = aa.vs
        ok = c.verdict in (Verdict.NOISE, Verdict.NA)
        parts += [
            "## A/A check",
            W.AA.format(seeds=", ".join(str(r.seed) for r in aa.runs),
                        baseline_seeds=", ".join(str(r.seed) for r in rows[0].runs), effect=num(c.effect, sign=True),
                        spread=num(c.spread), range=num(c.range), interval=interval(c) or "–", verdict=verdict(c))
            + (W.AA_OK if ok else W.AA_SUSPICIOUS),
        ]
        table.append({**csv_row(aa), "row": "aa"})
    if loo:
        reference = dataclasses.replace(rows[-1], label="full model", vs=None, d_params=None, unequal=False)
        parts += [
            "## Leave one out",
            W.LEAVE_ONE_OUT,
            markdown_table([("", reference)] + [(str(i + 1), r) for i, r in enumerate(loo)], s.confidence),
        ]
        table += [csv_row(r) for r in loo]
    parts += ladder_serving(main, s)
    parts += ladder_grid(main, s, SWEEP_PLOT, results.uniform)
    if reruns:
        parts += rerun_section(list(reruns), results.perturbation, s)
        table += [csv_row(r.again) for r in reruns]           # its row: the rerun's own slug, rerun_<row>
    parts += [
        "## Validation curves",
        f"![validation loss per row, mean and seed band]({CURVES_PLOT})",
        f"¹ {SEEDS_NEEDED_METHOD}",
    ]
    r5 = lambda x: None if x is None else round(x, 5)                      # noqa: E731
    metrics = {r.slug: {"val_mean": r5(r.val.mean), "val_sd": r5(r.val.sd), "n": r.val.n_finite} for r in rows}
    return Report("\n\n".join(parts) + "\n", metrics, table, full)
