"""The order in which the looks take seeds (params.yaml settle:): a ladder row's, and the learning-rate grid's,
whose looks start at its own seeds; and settle.runs checked against it (the plan stage: each run's slug a planned
row's, its seeds the order's next ones up to a look). The report judges by the same order (looks.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from ..config.sections import AblationConfig, SettleConfig, SweepConfig
from ..core.errors import ConfigError
from ..records.stages import AddedSeeds, SweepPlanRow


class Sections(Protocol):
    """The checked params sections the order reads (the plan's pipeline.ladder_params.Params has them)."""
    seeds: list[int]
    ablation: AblationConfig
    sweep: SweepConfig
    settle: SettleConfig


def seed_order(seeds: list[int] | tuple[int, ...], taken: list[int] | tuple[int, ...], count: int) -> tuple[int, ...]:
    """The first `count` seeds in the order the looks take them: seeds:, then the smallest integers in neither seeds:
    nor `taken` (the A/A copy's seeds, whose runs share the baseline's folder)."""
    out, used, k = list(seeds[:count]), set(seeds) | set(taken), 0
    while len(out) < count:
        if k not in used:
            out.append(k)
        k += 1
    return tuple(out)


def most_seeds(seeds: Sequence[int], added: Iterable[Sequence[int]]) -> int:
    """The most seeds any run slug has: the base seeds, and the most settle.runs gave one slug."""
    return len(seeds) + max(map(len, added), default=0)


def sweep_looks(looks: list[int] | tuple[int, ...], first: int) -> tuple[int, ...]:
    """The learning-rate grid's looks: its own seed count (sweep.seeds'), then each of settle.looks past it; with
    settle off (no looks), that one look."""
    return (first, *(k for k in looks if k > first))


def sweep_seed_order(sweep_seeds: list[int] | tuple[int, ...], seeds: list[int] | tuple[int, ...],
                    taken: list[int] | tuple[int, ...], count: int) -> tuple[int, ...]:
    """The first `count` seeds the grid's looks take: sweep.seeds (some of seeds:), then the seed order's others, so
    that past seeds:'s count a grid look holds the same seeds as the main table's look."""
    rest = [s for s in seed_order(seeds, taken, count + len(sweep_seeds)) if s not in sweep_seeds]
    return (*sweep_seeds, *rest)[:count]


@dataclass(frozen=True)
class Looks:
    """How a run slug's seeds grow under settle: its base seeds, the order its looks take, and those looks (the
    last its cap)."""
    base: tuple[int, ...]
    order: tuple[int, ...]
    looks: tuple[int, ...]


def added_seeds(p: Sections, looks_of: dict[str, Looks]) -> tuple[AddedSeeds, ...]:
    """settle.runs, checked against the slugs the looks judge (`looks_of`: a ladder row's, a grid run's): each run's
    slug is one of them, and its added seeds are its seed order's next ones up to one of its looks."""
    out = []
    for slug, seeds in p.settle.added().items():
        if slug not in looks_of:
            raise ConfigError(f"settle.runs: {slug}-{seeds[0]}: {slug} is no row of a ladder planned now, nor a run "
                              f"of its learning-rate grid ({', '.join(looks_of)}); remove its runs, or switch its "
                              "ladder on again")
        lk = looks_of[slug]
        base, n = len(lk.base), len(lk.base) + len(seeds)
        if not p.settle.on:                          # off: the runs stay, each comparison judged once on them all
            if taken := sorted(set(seeds) & set(lk.base)):
                raise ConfigError(f"settle.runs: {slug}-{taken[0]}: seed {taken[0]} is one of its base seeds "
                                  f"({list(lk.base)}); remove it")
            out.append(AddedSeeds(slug, tuple(seeds)))
            continue
        if n > lk.looks[-1]:
            raise ConfigError(f"settle.runs: {slug} has {n} seeds, past its cap of {lk.looks[-1]} (settle.looks, "
                              "settle.scale_cap); remove the runs past it")
        if tuple(seeds) != lk.order[base:n] or n not in lk.looks:
            raise ConfigError(f"settle.runs: {slug}'s seeds {seeds} are not the seed order's next ones up to a look "
                              f"({list(lk.order[base:n])} would give {n}; looks {list(lk.looks)}): modern-gpt settle "
                              "writes them")
        out.append(AddedSeeds(slug, tuple(seeds)))
    return tuple(out)


def looks_of(p: Sections, rows: Sequence[str], sized: Sequence[str], sweep: Sequence[SweepPlanRow]) -> dict[str, Looks]:
    """Each slug settle may add seeds to, and how: the ladders' rows (`rows`, their slugs; a scale ladder's, `sized`, up
    to settle.scale_cap) and the learning-rate grid's runs (from sweep.seeds, then the looks past its count)."""
    looks = tuple(p.settle.looks) if p.settle.on else (len(p.seeds),)
    cap = looks[-1]
    order = seed_order(p.seeds, p.ablation.aa_seeds, cap)
    scaled = tuple(k for k in looks if k <= (p.settle.scale_cap or cap))
    at_sweep = sweep_looks(p.settle.looks if p.settle.on else (), len(p.sweep.seeds))
    sweep_order = sweep_seed_order(p.sweep.seeds, p.seeds, p.ablation.aa_seeds, at_sweep[-1])
    out = {slug: Looks(tuple(p.seeds), order, looks) for slug in rows}
    out |= {slug: Looks(tuple(p.seeds), order[:scaled[-1]], scaled) for slug in sized}
    out |= {x.slug: Looks(tuple(p.sweep.seeds), sweep_order, at_sweep) for g in sweep for x in g.runs}
    return out
