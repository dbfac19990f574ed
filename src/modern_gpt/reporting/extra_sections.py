"""The report's sections after its table, each a list of Markdown blocks from its part of the results: the rerun
check (the same runs from perturbed initial weights: does each verdict hold?), the learning-rate grid (each row at
its best rate), and the serving cost with each served row's sample. Their prose is wording.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tabulate import tabulate

from ..records.stages import ServeRecord
from ..serving.kv_cache import human
from .cells import fence, interval, margins, mean_sd, num, verdict
from .results import Holds, Rerun, RowResult, SweepCell, SweepPair, SweepRow
from .settings import Settings
from ..stats.paired import pct, pooled_sd
from . import wording as W
from .sweep import selection_bias


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

def lr_label(c: SweepCell) -> str:
    return f"{c.lr:g} (×{c.multiple:g})"


def instability(c: SweepCell) -> str:
    """'2/3 seeds (3 spikes), 1/3 diverged'."""
    return (f"spikes in {c.seeds_spiked}/{c.val.n} seeds ({sum(c.spikes)} in all), "
            f"diverged {c.val.n_diverged}/{c.val.n}")


def stability_sentence(pair: SweepPair) -> str:
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


def sweep_section(rows: list[SweepRow], pairs: list[SweepPair], s: Settings, plot_name: str | None, base_lr: float,
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
        figures = (W.PAIR_FIGURES.format(spread=num(c.spread), range=num(c.range), confidence=pct(c.confidence),
                                         interval=interval(c), margins=margins(c))
                   if c.ci_low is not None else f"{c.n_pairs} seed")
        same = (W.PAIR_CHANGED.format(base_lr=base_lr, verdict=verdict(pair.main)) if changed
                else W.PAIR_SAME.format(base_lr=base_lr))
        text.append(W.PAIR.format(row=pair.row.row.label, lr=a.lr, ref=pair.ref.row.label, ref_lr=b.lr,
                                  effect=num(c.effect, sign=True), figures=figures, verdict=verdict(c, pair.look),
                                  same=same,
                                  stability=stability_sentence(pair)))
    bias = selection_bias(rows)
    if bias is not None:
        k = max(len(r.cells) for r in rows)
        design = next((p.look.design for p in pairs if p.look is not None), None)    # settle's looks: the grid's
        text.append(W.SELECTION_BIAS.format(k=k, bias=num(bias)) if design is None else W.SELECTION_BIAS_LOOKS.format(
            k=k, bias=num(bias), looks=", ".join(map(str, design.looks)), level=pct(design.level)))
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
