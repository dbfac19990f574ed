"""The parts of reports/scale.md and scale.csv: the main ladder at every size of params.yaml's scale:, each change
judged at each size by the main table's rule, then across sizes (reporting.transfer). pages.build_scale puts the
page together; plots.scale_plot draws scale.png from the CSV's rows."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from ..records.stages import LadderName, Size
from .cells import interval, millions, num, verdict
from .provenance import code_line, machine_line
from .results import Results, RowResult
from ..stats.paired import Verdict, pct, verdict_text
from ..stats.across_sizes import Transfer
from .transfer import ChangeAcrossSizes, changes


def size_name(size: Size) -> str:
    """A size as the pages print it: its scale.sizes name, or "model:" for the default size (name None)."""
    return name_of(size.name)


def name_of(name: str | None) -> str:
    """size_name() from the name alone (a run list's size column)."""
    return "model:" if name is None else name


def shape(size: Size) -> str:
    kv = f" ({size.n_kv_head} K/V in the GQA rows)" if size.n_kv_head != size.n_head else ""
    return (f"{size.n_layer} layers × {size.n_embd} wide, {size.n_head} heads{kv} of {size.head_dim}: "
            f"N = {size.non_embedding:,}")


def by_size(results: Results) -> list[tuple[Size, list[RowResult]]]:
    """(size, its rows) for every size, smallest N first: the default size's rows are the main table's."""
    by_name = {x.size: x.rows for x in results.ladders if x.name == LadderName.SCALE}
    return [(s, results.main.rows if s.name is None else by_name[s.name]) for s in results.sizes]


def scale_changes(results: Results) -> list[ChangeAcrossSizes]:
    s = results.settings
    return changes(by_size(results), s.floor_per_token, s.confidence, s.borderline)


def _effect(x: float | None, floor: bool) -> str:
    return num(x, 3 if floor else 4, sign=True)


def _trend(c: ChangeAcrossSizes, floor: bool) -> tuple[str, str, str]:
    t = c.trend
    slope, low, high = c.slope
    settled = {Verdict.BETTER: "settled", Verdict.WORSE: "settled"}.get(t.verdict, verdict_text(t).split(" (")[0])
    return (f"{_effect(t.effect, floor)} ({settled})",
            f"[{_effect(t.ci_low, floor)}, {_effect(t.ci_high, floor)}]" if t.ci_low is not None else "",
            f"{_effect(slope, floor)} [{_effect(low, floor)}, {_effect(high, floor)}]" if low is not None
            else _effect(slope, floor))


def size_table(found: list[ChangeAcrossSizes], i: int, floor: bool) -> str:
    """Size i's columns, a row per change, its N in the header. A table per size, not a column group each in one
    wide table, keeps every table at 5 columns however many sizes: a changed cell is a diff of one short line."""
    first = found[0].cells[i]
    headers = ["change", f"{size_name(first.size)} {millions(first.params)} Δ val", f"{pct(first.row.vs.confidence)} CI",
               "verdict", f"mean {'r' if floor else 'd'}"]
    rows = []
    for c in found:
        cell = c.cells[i]
        rows.append([c.label, num(cell.row.vs.effect, sign=True), interval(cell.row.vs),
                     verdict(cell.row.vs, cell.row.look), _effect(cell.mean, floor)])
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True,
                    colalign=["left"] + ["right"] * (len(headers) - 1))


def transfer_table(found: list[ChangeAcrossSizes], floor: bool) -> str:
    """A row per change across the sizes: the trend, its interval, its slope, the transfer verdict."""
    measure = "r" if floor else "d"
    headers = ["change", f"trend of {measure} (largest − smallest)", f"{pct(found[0].trend.confidence)} CI",
               "per decade of N", "transfer"]
    rows = []
    for c in found:
        word = f"**{c.transfer}**" if c.transfer in (Transfer.HOLDS, Transfer.APPEARS, Transfer.FADES,
                                                      Transfer.FLIPS) else str(c.transfer)
        rows.append([c.label, *_trend(c, floor), word])
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True,
                    colalign=["left"] + ["right"] * (len(headers) - 2) + ["left"])


def tables(found: list[ChangeAcrossSizes], floor: bool) -> list[str]:
    """A table per size, smallest N first, then the transfer table: 5 columns each, however many sizes are listed."""
    return [size_table(found, i, floor) for i in range(len(found[0].cells))] + [transfer_table(found, floor)]


def seeds_line(pairs: list) -> str:
    """The seeds every row of every size ran, then each row that ran more (settling's seeds, in the seed order)."""
    every = [r for _, rows in pairs for r in rows]
    common = sorted(set.intersection(*({run.seed for run in r.runs} for r in every)))
    more = [f"{size_name(s)}: " + ", ".join(f"{r.label} {len(r.runs)}" for r in rows if len(r.runs) > len(common))
            for s, rows in pairs if any(len(r.runs) > len(common) for r in rows)]
    return (f"{', '.join(map(str, common))} on every row of every size"
            + ("; more where settling asked for them (seeds, in the seed order): " + "; ".join(more) if more else ""))


def scale_provenance(results: Results) -> dict[str, str]:
    """scale.md's provenance table (ablation.md's is provenance.provenance): sizes, seeds, tokens per parameter,
    the corpus and its floor (the main table's lines), the code, the machine: every fact from the plan and the run
    records."""
    pairs = by_size(results)
    every = [r for _, rows in pairs for r in rows]
    main = results.main.provenance
    info = {k: main[k] for k in ("corpus", "split", "tokenizer") if k in main}
    info["sizes"] = "; ".join(f"**{size_name(s)}** {shape(s)}" for s, _ in pairs)
    info["seeds"] = seeds_line(pairs)
    first = pairs[0][1][0].runs[0]
    budget = ("the same steps at every size (scale.budget: steps)" if len({s.iters for s, _ in pairs}) == 1 else
              "model:'s training tokens per non-embedding parameter at every size (scale.budget: tokens_per_param; "
              "warm-up and evaluation interval scaled with the steps)")
    info["training"] = (f"{budget}: " + "; ".join(
        f"{size_name(s)} {s.iters:,} steps × {first.train.batch_size} × {first.model.block_size} = {s.tokens:,} "
        f"tokens, {s.tokens / rows[-1].runs[0].params_non_embedding:.3g} per non-embedding parameter of the full model"
        for s, rows in pairs) + "; otherwise the main table's recipe")
    for k in ("optimizer", "evaluation"):
        if k in main:
            info[k] = main[k]
    info["training code"] = code_line(every)
    info["machine"] = machine_line(every)
    if "floor" in main:
        info["floor"] = main["floor"]
    return info


def csv_rows(found: list[ChangeAcrossSizes], floor: bool) -> list[dict[str, Any]]:
    """A row per change and size: what scale.png and `dvc plots` draw (effect: r with a floor, else d)."""
    return [{"row": c.slug, "variant": c.label, "size": size_name(cell.size),
             "params": cell.params, "measure": "r" if floor else "d",
             "effect": cell.mean, "ci_low": cell.low, "ci_high": cell.high, "d_val": cell.row.vs.effect,
             "verdict": cell.row.vs.verdict.value, "transfer": c.transfer.value}
            for c in found for cell in c.cells]
