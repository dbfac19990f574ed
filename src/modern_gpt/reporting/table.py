"""The ablation table's columns, declared once (COLUMNS), and what is made from them: the report's Markdown table,
a row of reports/ablation.csv, and the quick command's fixed-width table.

A column is its report header, alignment and cell, its raw values in the CSV, and how the quick command shows it; a
new column is one entry of COLUMNS and appears in all three, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from tabulate import tabulate

from .cells import interval, margins, mean_sd, millions, num, verdict
from .results import RowResult
from ..stats.paired import Comparison, Summary, pct, verdict_text


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
    looks_only: bool = False                     # True: in the report only while settle.looks is on, or rows
                                                 # ran different numbers of seeds


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
# command's table, in this order. ablation.csv's `row` column names each row by its slug (runs.csv's `row` column).
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
    Column("seeds", "right", lambda i, r: str(r.val.n), looks_only=True),     # the seeds its mean and sd use
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
                ("band", _vs(lambda c: c.band_loss)))),
    Column("verdict", "left", lambda i, r: verdict(r.vs, r.look),
           csv=(("verdict", _vs(lambda c: c.verdict, "")), ("noise_kind", _vs(lambda c: c.noise_kind)),
                ("seeds_needed", _vs(lambda c: c.seeds_needed)))),
    Column("secs", "right", lambda i, r: f"{r.secs:.0f}", csv=(("secs", lambda r: r.secs),),
           quick=Quick("secs", 7, lambda r, n: f"{r.secs:>6.0f}s")),
    Column("verdict", "left", lambda i, r: "", report=False, quick=Quick("verdict", 0, lambda r, n: verdict_text(r.vs) if r.vs else "",
                                                            many_only=True)),
]
TABLE = [c for c in COLUMNS if c.report]


def markdown_table(rows: list[tuple[str, RowResult]], confidence: float,
                   extra: list[dict[str, str]] = (), seeds: bool = False) -> str:
    """The table of (number, result) rows, then `extra` rows given as {header: cell} (others blank); `seeds`: with
    the seeds column (settle.looks on, or rows that ran different numbers of seeds).
    Padded columns: the raw Markdown reads as a table in a pull request's diff too."""
    table = [c for c in TABLE if seeds or not c.looks_only]
    body = [[c.cell(i, r) for c in table] for i, r in rows]
    body += [[e.get(c.header, "") for c in table] for e in extra]
    head = [c.header.replace("{confidence}", pct(confidence)) for c in table]
    return tabulate(body, headers=head, tablefmt="pipe", colalign=[c.align for c in table], disable_numparse=True)


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
