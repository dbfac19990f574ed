"""reports/catalogue.md: each change alone on the book's design (a star: every row is row 0 plus one change, each
compared with row 0 by the main table's rule, spread, band and looks), its verdict beside its paper's claim in words
a reader can scan. No tally of claims that held is printed: with several comparisons the chance that one of them is
wrong is larger than any one's (stats/star.py simulates it; docs/catalogue.md quotes the figures)."""

from __future__ import annotations

from tabulate import tabulate

from .cells import interval, mean_sd, millions, num, verdict
from ..settling.looks import Look, ruled_out
from .pages import looks_paragraph
from .results import Ladder, Results, RowResult
from ..stats.paired import NO_EFFECT, SEEDS_NEEDED_METHOD, SPREAD_SDS, Verdict, rule
from . import wording as W

EFFECT_WORDS = {"lower": "lower val loss", "higher": "higher val loss", "none": "no change in val loss"}


def claim_text(claim) -> str:
    """'lower val loss at 830M-13B params (Ye et al. 2024, ...)'; a claim not about loss says what it is about."""
    if claim is None:
        return "– (no claim declared)"
    effect = EFFECT_WORDS.get(claim.effect, f"{claim.effect}, not loss")
    return f"{effect}, shown at {claim.scale} ({claim.paper})"


def here(look: Look | None, claim) -> str:
    """The verdict set against the claim: 'claim holds here', 'the opposite here', 'no effect larger than ±x here',
    'open at the cap (n seeds)', 'not tested here' (a claim not about loss)."""
    if claim is not None and not claim.about_loss:
        return "not tested here"
    if look is None or look.comparison.verdict == Verdict.NA:
        return "–"
    c = look.comparison
    if not look.settled:
        return f"open at the cap ({look.n} seeds)" if look.next is None else f"open at {look.n} seeds"
    if c.verdict == Verdict.NOISE and c.noise_kind == NO_EFFECT:
        bound = f"no effect larger than ±{num(ruled_out(c))} here"
        return f"claim holds here: {bound}" if claim is not None and claim.effect == "none" else bound
    seen = "lower" if c.verdict == Verdict.BETTER else "higher"
    if claim is None:
        return f"{seen} val loss here"
    if claim.effect == seen:
        return "claim holds here"
    return f"{seen} val loss here, where it claims none" if claim.effect == "none" else "the opposite here"


def star_table(ladder: Ladder) -> str:
    rows: list[RowResult] = ladder.rows
    claims = ladder.claims or (None,) * len(rows)
    lines = []
    for i, (r, claim) in enumerate(zip(rows, claims)):
        c = r.vs
        lines.append([str(i), r.label, millions(r.params), mean_sd(r.val), str(r.val.n),
                      num(c.effect, sign=True) if c else "", interval(c) if c else "",
                      verdict(c, r.look) if c else "reference", claim_text(claim) if i else "", here(r.look, claim)
                      if i else ""])
    headers = ["", "change", "params", "val loss", "seeds", "Δ val vs row 0", "CI", "verdict", "its paper's claim",
               "here"]
    return tabulate(lines, headers=headers, tablefmt="pipe", disable_numparse=True)


def build_catalogue(results: Results, ladder: Ladder) -> str:
    """reports/catalogue.md's text."""
    s, design = results.settings, ladder.design
    level = design.level if design is not None else s.confidence
    row0 = ladder.rows[0]
    parts = [
        W.CATALOGUE_TITLE,
        W.CATALOGUE_INTRO,
        "## Provenance",
        tabulate(list(ladder.provenance.items()), headers=["", ""], tablefmt="pipe", disable_numparse=True),
        "## Each change alone",
        f"**Rule.** {rule(level)}" + (" " + looks_paragraph(design, s) if design is not None and design.on else ""),
        W.CATALOGUE_STAR.format(n=len(ladder.rows) - 1, row0=row0.val.n,
                                reached=max((r.look.n for r in ladder.rows[1:] if r.look is not None), default=0)),
        star_table(ladder),
        W.CATALOGUE_NOTE.format(spread_sds=f"{SPREAD_SDS:g}", band_sds=s.borderline),
        f"¹ {SEEDS_NEEDED_METHOD}",
    ]
    return "\n\n".join(parts) + "\n"
