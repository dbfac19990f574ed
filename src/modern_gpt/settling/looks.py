"""Settling an open verdict: seed counts fixed in advance at which a comparison is judged, and more seeds only where
a verdict is open (params.yaml settle:, `modern-gpt settle`; docs/statistics.md, "Settling an open verdict").

A design names its looks, e.g. 5, 8, 12, 20 seeds: the first is seeds:'s count, the last the cap. At each look a
comparison is judged by stats.compare()'s rule, spread, band and words unchanged, on the first n seeds of the seed
order both rows ran (seeds:, then the next free integers), with one interval level at every look: a repeated
confidence interval, its level calibrated (look_level) by simulating the whole procedure, so that looking again
does not inflate the error that looking again would inflate. A comparison settled at a look (better, worse, or
noise of the kind "no effect larger than the spread") is final, judged on the seeds it had then, however many
seeds its rows gain later for another comparison; an open one (borderline, or "not shown either way") asks for the
next look's seeds on both sides, and at the cap it stays open. The spread is re-estimated at each look from the
seeds judged there, as compare() does; the simulation covers that.

The statistics beneath it (the rule, the levels, the procedure simulated) are stats/'s: this module decides which
seeds a comparison is judged on, and reads each design's level from the committed table (stats/levels.csv).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

from ..config.sections import BAND_SDS, CONFIDENCE
from ..records.stages import Plan
from .order import most_seeds, seed_order, sweep_looks, sweep_seed_order
from ..stats.paired import NO_EFFECT, Comparison, Verdict, compare, t_quantile, verdict_text
from ..stats.sequential import committed_level


def settles(c: Comparison) -> bool:
    """Whether a verdict ends its comparison: better, worse, or noise of the kind no effect larger than the spread."""
    return c.verdict in (Verdict.BETTER, Verdict.WORSE) or (c.verdict == Verdict.NOISE and c.noise_kind == NO_EFFECT)


@dataclass(frozen=True)
class Design:
    """The looks of params.yaml's settle: (records.stages.Plan.looks), and the one-look rule they keep."""
    looks: tuple[int, ...]           # seed counts, increasing: the first is seeds:'s count, the last the cap
    order: tuple[int, ...] = ()      # the seed order the looks take (order.seed_order), at least the cap's
    confidence: float = CONFIDENCE         # report.confidence: what one look alone would use
    band_sds: float = BAND_SDS       # report.borderline: the band, in pooled seed sds

    @property
    def on(self) -> bool:
        return len(self.looks) > 1

    @property
    def cap(self) -> int:
        return self.looks[-1]

    @property
    def level(self) -> float:
        """The interval level at every look: report.confidence with one look, else the committed table's
        (stats/levels.csv); a design it lacks is refused in one line naming the command that adds it."""
        return committed_level(self.looks, self.confidence, self.band_sds) if self.on else self.confidence

    def after(self, n: int) -> Optional[int]:
        """The next look after n seeds (None: n is at or past the cap)."""
        return next((k for k in self.looks if k > n), None)


@dataclass(frozen=True)
class Look:
    """Where one comparison stands: its verdict at the look that settled it, or at the last look both rows' seeds
    allow (open: `next` is the seed count it asks for, None at the cap)."""
    comparison: Comparison
    seeds: tuple[int, ...]           # the seeds judged, paired, in seed order
    settled: bool
    next: Optional[int]
    design: Design

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def at_cap(self) -> bool:
        return not self.settled and self.next is None


def ruled_out(c: Comparison) -> Optional[float]:
    """The smallest |effect| the comparison rules out: the far end of its (2 x level - 1) interval, the one the
    kind "no effect larger than the spread" reads (None with fewer than two pairs)."""
    if c.sd_diff is None or c.effect is None:
        return None
    return abs(c.effect) + t_quantile(c.confidence, c.n_pairs - 1) * c.sd_diff / math.sqrt(c.n_pairs)


def look_text(look: Look) -> str:
    """A verdict under the design, as the reports print it: 'better, settled at 8 seeds'; 'borderline, open at 5
    seeds: next look at 8'; 'noise (not shown either way), open at the cap (20 seeds): rules out |Δ| > 0.0123'.
    With the design off, verdict_text()'s words alone."""
    c = look.comparison
    if not look.design.on:
        return verdict_text(c)
    if c.verdict == Verdict.NA:
        return verdict_text(c)
    word = f"noise ({c.noise_kind})" if c.verdict == Verdict.NOISE else str(c.verdict.value)
    if look.settled:
        return f"{word}, settled at {look.n} seeds"
    if look.next is not None:
        return f"{word}, open at {look.n} seeds: next look at {look.next}"
    bound = ruled_out(c)
    return f"{word}, open at the cap ({look.n} seeds)" + (f": rules out effects beyond ±{bound:.4f}" if bound is not None else "")


def design(plan: Plan, scale: bool, confidence: float, band_sds: float) -> Design:
    """A ladder's looks: settle.looks (a scale ladder's up to settle.scale_cap); off, one look on every seed a row
    ran (the base seeds, and those settle.runs lists), its seed order long enough for them all."""
    return ladder_design(plan.looks, plan.seeds, plan.aa_seeds, [a.seeds for a in plan.added], confidence, band_sds,
                         plan.scale_cap if scale else None)


def ladder_design(looks: Sequence[int], seeds: Sequence[int], aa_seeds: Sequence[int], added: Iterable[Sequence[int]],
                  confidence: float, band_sds: float, cap: Optional[int] = None) -> Design:
    """design() from the plan's pieces (review --check builds them from params.yaml): `looks` empty is off, one look
    on every seed a row ran (`added`: the seeds settle.runs gave each slug); `cap` a scale ladder's last look."""
    if not looks:
        return Design((len(seeds),), seed_order(seeds, aa_seeds, most_seeds(seeds, added)), confidence, band_sds)
    looks = tuple(k for k in looks if cap is None or k <= cap)
    return Design(looks, seed_order(seeds, aa_seeds, looks[-1]), confidence, band_sds)


def sweep_design(plan: Plan, confidence: float, band_sds: float) -> Design:
    """The learning-rate grid's looks: sweep.seeds' count, then settle.looks past it (off: one look, on every seed a
    pair's runs have, its seed order long enough for them all)."""
    looks = sweep_looks(plan.looks, len(plan.sweep.seeds))
    most = looks[-1] if plan.looks else most_seeds(plan.seeds, [a.seeds for a in plan.added])
    return Design(looks, sweep_seed_order(plan.sweep.seeds, plan.seeds, plan.aa_seeds, most), confidence, band_sds)


def judge_looks(row: Mapping[int, Optional[float]], ref: Mapping[int, Optional[float]], design: Design) -> Look:
    """One comparison under the design: row and ref map each seed they ran to its loss; the looks take the first n
    seeds of design.order. The seeds both ran form a prefix of it (the plan's rule); each look inside that prefix
    is judged in turn until one settles. With fewer paired seeds than the first look, the one look is what they
    have (a smoke build's single seed: n/a); with the design off, one look on every seed both ran."""
    prefix: list[int] = []
    for s in design.order:
        if s not in row or s not in ref:
            break
        prefix.append(s)
    looks = [n for n in design.looks if n <= len(prefix)] if design.on else []
    looks = looks or [len(prefix)]                   # off: once, on every seed both ran
    level = design.level
    c = None
    for n in looks:
        c = compare([row[s] for s in prefix[:n]], [ref[s] for s in prefix[:n]], confidence=level,
                    band_sds=design.band_sds)
        if settles(c):
            return Look(c, tuple(prefix[:n]), True, None, design)
    return Look(c, tuple(prefix[:looks[-1]]), False, design.after(looks[-1]), design)


def check_levels(looks: Sequence[int], scale_cap: Optional[int], sweep_seeds: Optional[int], confidence: float,
                 band_sds: float) -> None:
    """Before anything trains (the plan): every design these params judge at has a committed level (stats/levels.csv),
    else a one-line refusal naming the design and the command that adds it. `looks`: settle.looks ([] off);
    `scale_cap`: settle.scale_cap; `sweep_seeds`: sweep.seeds' count where the grid is on, else None."""
    if len(looks) < 2:
        return
    committed_level(tuple(looks), confidence, band_sds, "settle.looks")
    if scale_cap is not None and scale_cap != looks[-1]:
        committed_level(tuple(k for k in looks if k <= scale_cap), confidence, band_sds,
                        f"settle.looks up to settle.scale_cap={scale_cap}")
    if sweep_seeds is not None and (grid := sweep_looks(looks, sweep_seeds)) != tuple(looks):
        committed_level(grid, confidence, band_sds, "the grid's looks (sweep.seeds' count, then settle.looks)")
