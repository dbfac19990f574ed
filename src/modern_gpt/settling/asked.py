"""The seeds settling asks for: each comparison open at a look asks for the next look's seeds on every run slug it
reads (reporting/comparisons.py lists the report's comparisons; record.py writes the seeds into params.yaml)."""

from __future__ import annotations

from dataclasses import dataclass

from .looks import Look


@dataclass(frozen=True)
class Asked:
    """One comparison under the looks: what it is, where it stands, and the rows it reads."""
    what: str                        # 'main: + no bias', 'scale xs: + QK-norm', 'transfer: + GQA (kv=2)'
    look: Look
    slugs: tuple[str, ...]           # the run slugs it reads: ladder rows, or a grid pair's best-rate runs


def asked_seeds(found: list[Asked], has: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """slug → the seeds to add to it: each open comparison with a next look asks for the seed order's next seeds
    up to that look for each row it reads (`has`: each row's seed count now); a row asked by two comparisons gets the
    larger count."""
    want: dict[str, int] = {}
    order: dict[str, tuple[int, ...]] = {}
    for a in found:
        if a.look.settled or a.look.next is None:
            continue
        for slug in a.slugs:
            if a.look.next > max(want.get(slug, 0), has[slug]):
                want[slug], order[slug] = a.look.next, a.look.design.order
    return {slug: tuple(order[slug][has[slug]:n]) for slug, n in want.items()}
