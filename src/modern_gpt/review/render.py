"""A review as Markdown for a pull-request comment, and as data (`--json`)."""

from __future__ import annotations

import json
from typing import Any

from tabulate import tabulate

from ..reporting.cells import interval, num, verdict
from ..stats.paired import Verdict
from .diff import RERUN_BAND_RUNS, Review, SlugDiff

TITLE = "## modern-gpt review"


def summary(r: Review) -> str:
    """The first line: what changed, and what one look at report.confidence says it did (its words count a slug
    as a row: a row of the comment's table)."""
    changed = r.changed
    judged = [x for x in changed if x.vs is not None and x.vs.verdict in (Verdict.BETTER, Verdict.WORSE)]
    parts = [f"{len(changed)} of {len(r.slugs)} rows changed inputs"]
    if changed and r.paired:
        parts.append(", ".join(f"{x.slug} {x.vs.verdict}" for x in judged) + " beyond the seed spread"
                     if judged else "no row moved beyond the seed spread")
    elif changed:
        parts.append("not paired: the tokenized corpus differs, so no verdict")
    if r.moved:
        parts.append(f"{len(r.moved)} unchanged row{'s' * (len(r.moved) > 1)} moved past the rerun band")
    if r.verdicts:
        parts.append(f"{len(r.verdicts)} ladder verdict{'s' * (len(r.verdicts) > 1)} changed")
    return f"**{r.here} against {r.base}:** " + "; ".join(parts) + "."


def value(v: Any) -> str:
    return "(none)" if v is None else f"`{json.dumps(v) if isinstance(v, (list, dict, bool)) else v}`"


def inputs(r: Review) -> list[str]:
    params = "; ".join(f"`{k}` {value(a)} → {value(b)}" for k, a, b in r.params) or "none"
    code = (f"`{', '.join(r.code[0])}` → `{', '.join(r.code[1])}`" if r.code[0] != r.code[1]
            else f"unchanged (`{', '.join(r.code[1])}`)")
    if r.paired:
        corpus = f"unchanged: the same tokens (`data/tokenized` md5 `{r.tokens[1]}`), so seeds pair"
    else:
        corpus = (f"**changed** (`data/tokenized` md5 `{r.tokens[0]}` → `{r.tokens[1]}`): a seed no longer gives the "
                  "same batches on both sides, so rows are compared unpaired, without a verdict")
    machine = ("; ".join(r.machines[1]) if r.machines[0] == r.machines[1]
               else f"{'; '.join(r.machines[0])} → {'; '.join(r.machines[1])}")
    return ["### What changed in the inputs",
            "\n".join([f"- params: {params}",
                       f"- rows whose config changed: {', '.join(f'`{c}`' for c in r.configs) or 'none'}",
                       f"- training code md5: {code}",
                       f"- corpus, split and tokenizer: {corpus}",
                       f"- machine: {machine}"])]


def label(x: SlugDiff) -> str:
    where = ", ".join(filter(None, [f"size {x.size}" if x.size is not None else "", f"lr ×{x.lr:g}" if x.lr != 1 else ""]))
    return f"`{x.slug}`" + (f" ({where})" if where else "")


def slug_verdict(x: SlugDiff) -> str:
    """The rule's verdict; for a slug whose inputs and every seed's loss are the same, that fact."""
    if x.vs is None:
        return "unpaired"
    return "identical (every seed)" if not x.inputs_changed and x.moved == 0 else verdict(x.vs)


def slugs_table(r: Review) -> list[str]:
    """Each slug's runs on BASE and here: the same slug on two commits, judged once (one look, at report.confidence)
    on the seeds both sides ran; not the table's rule, whose verdicts are judged at its looks (shown below it). A line
    of the table per slug, its first column the run (its slug, and its size and lr multiple where not the default)."""
    head = ["run", "family", "inputs", "paired seeds", "BASE val", "val here", "Δ val",
            f"{r.confidence:.0%} CI of Δ (one look)", "verdict (one look)"]
    ordered = sorted(r.slugs, key=lambda x: not x.inputs_changed)
    body = [[label(x), x.family, "**changed**" if x.inputs_changed else "same", str(len(x.seeds)),
             num(x.base.mean), num(x.here.mean), num(x.delta, sign=True),
             interval(x.vs), slug_verdict(x)] for x in ordered]
    how = (f"the same row on both commits, paired by seed; Δ is here minus BASE, negative is better; each judged "
           f"once at {r.confidence:.0%}, report.confidence, on the seeds both sides ran: one look, not the table's "
           "looks" if r.paired
           else "unpaired (the tokens differ): Δ is the difference of the means, without a verdict")
    return [f"### Each row against BASE ({how})",
            tabulate(body, headers=head, tablefmt="pipe", disable_numparse=True,
                     colalign=["left", "left", "left", "right", "right", "right", "right", "right", "left"])]


def moved_lines(r: Review) -> list[str]:
    out = ["### Unchanged inputs, moved numbers"]
    same = r.machines[0] == r.machines[1]
    cause = "the same machine on both sides: a run that is not deterministic" if same else "another CPU"
    for x in r.moved:
        out.append(f"- {label(x)}: a seed moved {x.moved:.4f}, past the rerun band {x.rerun_band:.4f} "
                   f"({RERUN_BAND_RUNS:g} × another CPU's typical change of one run): {cause}")
    if r.drifted:
        out.append(f"- within the rerun band ({cause}'s rounding): {', '.join(label(x) for x in r.drifted)}")
    return out if len(out) > 1 else []


def verdict_lines(r: Review) -> list[str]:
    """The main table's own verdicts (at its looks), BASE's and here's, where they differ."""
    if not r.verdicts:
        return ["### The main table's verdicts (its own rule, at its looks)", "- the same on both sides"]
    return ["### The main table's verdicts that changed (its own rule, at its looks)"] + [
        f"- `{row}` ({lbl}): {a} → **{b}**" for row, lbl, a, b in r.verdicts]


def one_side_lines(r: Review) -> list[str]:
    if not r.one_side:
        return []
    return ["### Seeds on one side only (left out of the pairs)"] + [
        f"- {'BASE' if side == 'BASE' else 'here'}: `{slug}` seed{'s' * (len(seeds) > 1)} "
        f"{', '.join(map(str, seeds))}" for side, slug, seeds in r.one_side]


def markdown(r: Review) -> str:
    parts = [TITLE, summary(r), *inputs(r), *slugs_table(r), *moved_lines(r), *verdict_lines(r), *one_side_lines(r)]
    return "\n\n".join(parts) + "\n"


def data(r: Review) -> dict[str, Any]:
    """The same as plain data: every slug's numbers, the verdicts as the CSV spells them. The keys stay as they were
    (a slug is under "run", as in runs.csv; the slugs are "rows")."""
    def entry(x: SlugDiff) -> dict[str, Any]:
        vs = x.vs
        return {"run": x.slug, "family": x.family, "row": x.row, "size": x.size, "lr": x.lr,
                "inputs_changed": x.inputs_changed, "seeds": list(x.seeds), "base_val": x.base.mean,
                "val": x.here.mean, "delta": x.delta, "ci": [vs.ci_low, vs.ci_high] if vs else None,
                "verdict": str(vs.verdict) if vs else None, "noise_kind": vs.noise_kind if vs else None,
                "moved": x.moved, "rerun_band": x.rerun_band}
    return {"summary": summary(r), "base": r.base, "here": r.here, "paired": r.paired, "tokens": list(r.tokens),
            "params": [{"key": k, "base": a, "here": b} for k, a, b in r.params], "configs": list(r.configs),
            "code_md5": {"base": list(r.code[0]), "here": list(r.code[1])},
            "machines": {"base": list(r.machines[0]), "here": list(r.machines[1])},
            "rows": [entry(x) for x in r.slugs], "moved": [x.slug for x in r.moved],
            "verdicts": [{"row": row_, "label": lbl, "base": a, "here": b} for row_, lbl, a, b in r.verdicts],
            "one_side": [{"side": s, "run": slug, "seeds": list(seeds)} for s, slug, seeds in r.one_side],
            "confidence": r.confidence}
