"""How one figure is written wherever a report, the review or the quick command prints it: a loss, a mean and its
sd, a parameter count, a verdict, an interval, the margins, a fenced block of text.

Each is a pure function of its value, rounded to a fixed number of digits, so that the same results always give the
same bytes; '–' stands for a figure that does not exist (no finite seed, fewer than two pairs).
"""

from __future__ import annotations

import math
import re

from ..settling.looks import Look, look_text
from ..stats.paired import Comparison, Summary, Verdict, verdict_text


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


def verdict(c: Comparison | None, look: Look | None = None) -> str:
    """verdict_text(), or with `look` (the comparison judged at settle's looks) look_text(); the verdict in bold when
    the rule called a change (better or worse)."""
    text = look_text(look) if look is not None else verdict_text(c)
    if c is None or c.verdict not in (Verdict.BETTER, Verdict.WORSE):
        return text
    word = c.verdict.value
    return f"**{word}**" + text[len(word):] if text.startswith(word) else f"**{text}**"


def interval(c: Comparison | None) -> str:
    """'[-0.0612, -0.0380]', the paired t interval of the effect; '' without one."""
    return f"[{num(c.ci_low, sign=True)}, {num(c.ci_high, sign=True)}]" if c and c.ci_low is not None else ""


def margins(c: Comparison | None) -> str:
    """'+0.0496 / +0.0542 ± 0.0012': the spread and interval margins, then the band around them."""
    if c is None or c.margin_spread is None:
        return ""
    return f"{num(c.margin_spread, sign=True)} / {num(c.margin_interval, sign=True)} ± {num(c.band_loss)}"


def fence(text: str) -> str:
    """A fenced block that no backticks inside can close."""
    ticks = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{ticks}text\n{text.rstrip()}\n{ticks}"
