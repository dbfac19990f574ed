"""The order in which the looks take seeds (params.yaml settle:): a ladder row's, and the learning-rate grid's,
whose looks start at its own seeds. The plan stage checks settle.runs against it and the report judges by it."""

from __future__ import annotations


def seed_order(seeds: list[int] | tuple[int, ...], taken: list[int] | tuple[int, ...], count: int) -> tuple[int, ...]:
    """The first `count` seeds in the order the looks take them: seeds:, then the smallest integers in neither seeds:
    nor `taken` (the A/A copy's seeds, whose runs share the baseline's folder)."""
    out, used, k = list(seeds[:count]), set(seeds) | set(taken), 0
    while len(out) < count:
        if k not in used:
            out.append(k)
        k += 1
    return tuple(out)


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
