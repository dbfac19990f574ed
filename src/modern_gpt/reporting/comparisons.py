"""What `modern-gpt settle` reads from the report's results: every comparison the looks judge and where it stands
(settling/: the looks, the seeds the open ones ask for, and where they are recorded).

The comparisons are the report's own: each ladder's rows against the row above and its last row against row 0
(the main table, the second ladder, each size of the scale ladders), each catalogue row against row 0, and each change's trend across sizes while its
transfer verdict is open, and the learning-rate grid's comparisons at the best rates (the rates chosen on
sweep.seeds, its first look, and fixed there). A comparison open at a look asks for the next look's seeds for every
run slug it reads (a pair: both sides, a grid pair the runs at each side's best rate; a trend: the change's two rows
at the smallest and the largest size).
"""

from __future__ import annotations

from ..settling.asked import Asked
from .results import Results, full_look
from .scale import scale_changes, size_name, by_size
from ..stats.across_sizes import Transfer


def comparisons(results: Results) -> list[Asked]:
    """Every comparison the report judges at the looks, in the report's order."""
    out = []
    for ladder in results.ladders:
        name = ladder.name.value if ladder.size is None else f"scale {ladder.size}"
        rows = ladder.rows
        refs = [rows[0]] * (len(rows) - 1) if ladder.star else rows[:-1]       # a star: each against row 0
        out += [Asked(f"{name}: {row.label}", row.look, (ref.slug, row.slug))
                for ref, row in zip(refs, rows[1:]) if row.look is not None]
        full = full_look(rows) if not ladder.star else None
        if full is not None:
            out.append(Asked(f"{name}: full model against {rows[0].label}", full, (rows[0].slug, rows[-1].slug)))
        for pair in ladder.pairs:
            if pair.look is not None:
                a, b = pair.row.best, pair.ref.best
                out.append(Asked(f"{name} grid: {pair.row.row.label} at lr {a.lr:g} against {pair.ref.row.label} "
                                 f"at lr {b.lr:g}", pair.look, (b.slug, a.slug)))
    if results.sizes:
        ends = by_size(results)
        for c in scale_changes(results):
            if c.trend_look is None or c.transfer != Transfer.OPEN:
                continue
            k = [r.slug for r in ends[0][1]].index(c.cells[0].row.slug)
            slugs = tuple(rows[i].slug for _, rows in (ends[0], ends[-1]) for i in (k - 1, k))
            out.append(Asked(f"transfer {size_name(ends[0][0])} → {size_name(ends[-1][0])}: {c.label}",
                             c.trend_look, slugs))
    return out
