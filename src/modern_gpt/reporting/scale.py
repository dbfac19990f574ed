"""reports/scale.md, scale.csv and scale.png: the main ladder at every size of params.yaml's scale:, each change
judged at each size by the main table's rule, then across sizes (reporting.transfer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tabulate import tabulate

from ..core.stage_records import Size
from . import wording as W
from .cells import interval, millions, num, verdict
from .provenance import code_line, machine_line
from .results import Results, RowResult
from .stats import SEEDS_NEEDED_METHOD, Verdict, compare, rule, verdict_text
from .transfer import Change, Transfer, changes

PLOT = "scale.png"


def size_name(size: Size) -> str:
    return size.name or "model:"


def shape(size: Size) -> str:
    kv = f" ({size.n_kv_head} K/V in the GQA rows)" if size.n_kv_head != size.n_head else ""
    return (f"{size.n_layer} layers × {size.n_embd} wide, {size.n_head} heads{kv} of {size.head_dim}: "
            f"N = {size.non_embedding:,}")


def sized(results: Results) -> list[tuple[Size, list[RowResult]]]:
    """(size, its rows) for every size, smallest N first: the default size's rows are the main table's."""
    by_name = {x.size: x.rows for x in results.ladders if x.name == "scale"}
    return [(s, results.main.rows if s.name is None else by_name[s.name]) for s in results.sizes]


def floor_per_token(results: Results) -> float | None:
    s = results.settings
    return s.floor * s.val_chars_per_token if s.floor is not None else None


def scale_changes(results: Results) -> list[Change]:
    s = results.settings
    return changes(sized(results), floor_per_token(results), s.confidence, s.borderline)


def _effect(x: float | None, floor: bool) -> str:
    return num(x, 3 if floor else 4, sign=True)


def _trend(c: Change, floor: bool) -> tuple[str, str, str]:
    t = c.trend
    slope, low, high = c.slope
    settled = {Verdict.BETTER: "settled", Verdict.WORSE: "settled"}.get(t.verdict, verdict_text(t).split(" (")[0])
    return (f"{_effect(t.effect, floor)} ({settled})",
            f"[{_effect(t.ci_low, floor)}, {_effect(t.ci_high, floor)}]" if t.ci_low is not None else "",
            f"{_effect(slope, floor)} [{_effect(low, floor)}, {_effect(high, floor)}]" if low is not None
            else _effect(slope, floor))


def size_table(found: list[Change], i: int, floor: bool) -> str:
    """Size i's columns, a row per change, its N in the header. A table per size, not a column group each in one
    wide table, keeps every table at 5 columns however many sizes: a changed cell is a diff of one short line."""
    first = found[0].cells[i]
    headers = ["change", f"{size_name(first.size)} {millions(first.params)} Δ val", "95% CI", "verdict",
               f"mean {'r' if floor else 'd'}"]
    rows = []
    for c in found:
        cell = c.cells[i]
        rows.append([c.label, num(cell.row.vs.effect, sign=True), interval(cell.row.vs), verdict(cell.row.vs),
                     _effect(cell.mean, floor)])
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True,
                    colalign=["left"] + ["right"] * (len(headers) - 1))


def transfer_table(found: list[Change], floor: bool) -> str:
    """A row per change across the sizes: the trend, its interval, its slope, the transfer verdict."""
    measure = "r" if floor else "d"
    headers = ["change", f"trend of {measure} (largest − smallest)", "95% CI", "per decade of N", "transfer"]
    rows = []
    for c in found:
        word = f"**{c.transfer}**" if c.transfer in (Transfer.HOLDS, Transfer.APPEARS, Transfer.FADES,
                                                      Transfer.FLIPS) else str(c.transfer)
        rows.append([c.label, *_trend(c, floor), word])
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True,
                    colalign=["left"] + ["right"] * (len(headers) - 2) + ["left"])


def tables(found: list[Change], floor: bool) -> list[str]:
    """A table per size, smallest N first, then the transfer table: 5 columns each, however many sizes are listed."""
    return [size_table(found, i, floor) for i in range(len(found[0].cells))] + [transfer_table(found, floor)]


def provenance(results: Results) -> dict[str, str]:
    """Sizes, seeds, tokens per parameter, the corpus and its floor (the main table's lines), the code, the
    machine: every fact from the plan and the run records."""
    pairs = sized(results)
    every = [r for _, rows in pairs for r in rows]
    main = results.main.provenance
    info = {k: main[k] for k in ("corpus", "split", "tokenizer") if k in main}
    info["sizes"] = "; ".join(f"**{size_name(s)}** {shape(s)}" for s, _ in pairs)
    info["seeds"] = ", ".join(str(run.seed) for run in pairs[0][1][0].runs)
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


def full_lines(results: Results) -> str:
    s = results.settings
    out = []
    for size, rows in sized(results):
        c = compare(rows[-1].values("val_loss"), rows[0].values("val_loss"), confidence=s.confidence,
                    band=s.borderline)
        out.append(f"{size_name(size)} Δ val {num(c.effect, sign=True)} (spread {num(c.spread)}, {s.confidence:.0%} "
                   f"CI {interval(c) or '–'}): {verdict(c)}, params {millions(rows[0].params)} → "
                   f"{millions(rows[-1].params)}")
    return W.SCALE_FULL + "; ".join(out) + "."


def csv_rows(found: list[Change], floor: bool) -> list[dict[str, Any]]:
    """A row per change and size: what scale.png and `dvc plots` draw (effect: r with a floor, else d)."""
    return [{"row": c.slug, "variant": c.label, "size": size_name(cell.size),
             "params": cell.params, "measure": "r" if floor else "d",
             "effect": cell.mean, "ci_low": cell.low, "ci_high": cell.high, "d_val": cell.row.vs.effect,
             "verdict": cell.row.vs.verdict.value, "transfer": c.transfer.value}
            for c in found for cell in c.cells]


def plot(rows: list[dict[str, Any]], path: str | Path, floor: bool) -> None:
    """The effect against N on a log x axis, a line per change, the 95% interval of the mean as bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for i, slug in enumerate(dict.fromkeys(r["row"] for r in rows)):
        pts = [r for r in rows if r["row"] == slug and r["effect"] is not None]
        xs, ys = [p["params"] for p in pts], [p["effect"] for p in pts]
        err = [[y - (p["ci_low"] if p["ci_low"] is not None else y) for p, y in zip(pts, ys)],
               [(p["ci_high"] if p["ci_high"] is not None else y) - y for p, y in zip(pts, ys)]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, linewidth=1.4, color=plt.cm.tab10(i % 10),
                    label=pts[0]["variant"] if pts else slug)
    ax.axhline(0.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("non-embedding parameters of the full model (N)")
    ax.set_ylabel("r = Δ val / (loss above the floor)" if floor else "Δ val loss (nats per token)")
    ax.set_title("Effect of each change at each size: mean over seeds, 95% interval (below 0 is better)")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def build_scale(results: Results) -> tuple[str, list[dict[str, Any]]]:
    """scale.md's text and scale.csv's rows."""
    s = results.settings
    floor = s.floor is not None
    found = scale_changes(results)
    parts = [
        W.SCALE_TITLE,
        W.SCALE_INTRO,
        "## Provenance",
        tabulate(list(provenance(results).items()), headers=["", ""], tablefmt="pipe", disable_numparse=True),
        "## Transfer",
        W.SCALE_MEASURE_FLOOR if floor else W.SCALE_MEASURE_RAW,
        f"**Rule at each size.** {rule(s.confidence)}",
        W.SCALE_TREND,
        *tables(found, floor),
        full_lines(results),
        f"![the effect of each change against model size]({PLOT})",
        "## The transfer verdicts",
        W.TRANSFER_DEFINITIONS,
        f"¹ {SEEDS_NEEDED_METHOD}",
    ]
    return "\n\n".join(parts) + "\n", csv_rows(found, floor)

