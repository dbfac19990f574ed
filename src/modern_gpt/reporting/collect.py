"""The report's results from what the pipeline wrote: the plan's listing, the corpus meta and floor, each listed
run's record and each row's serve record. Nothing is measured here, so the same files give the same report on
any machine."""

from __future__ import annotations

import math
from typing import Any, Callable

from ..core.records import RunRecord
from .provenance import provenance
from .results import Rerun, Results, ladder_results, row_result
from .settings import report_settings
from .sweep import SweepRow, at_best, cell

Records = Callable[[str, list[int]], list[RunRecord]]     # (row slug, seeds) → their run records, in seed order


def collect(listing: dict, meta: dict, floor: dict | None, section: Any, records: Records,
            served: list[dict], beyond_served: list[dict] = ()) -> Results:
    """listing: configs/plan.json; meta: data/tokenized/meta.json; floor: the generated corpus's floor.json (None
    for another corpus); section: params.yaml's report section; served: the rows' serve records, in row order;
    beyond_served: the second ladder's, likewise."""
    s = report_settings(section, train_chars_per_token=meta["train"]["chars"] / meta["train"]["tokens"],
                        val_chars_per_token=meta["val"]["chars"] / meta["val"]["tokens"],
                        floor=floor["nats_per_char"] if floor else None)
    seeds = listing["seeds"]
    rule = dict(confidence=s.confidence, param_tolerance=s.param_tolerance, band=s.borderline)
    rows = ladder_results([(r["slug"], r["label"], records(r["slug"], seeds)) for r in listing["rows"]], **rule)
    aa = None
    if listing["aa_seeds"]:
        aa = row_result("baseline", rows[0].label, records("baseline", listing["aa_seeds"]), rows[0], **rule)
    loo = [row_result(r["slug"], r["label"], records(r["slug"], seeds), rows[-1], **rule)
           for r in listing["leave_one_out"]]
    reruns: list[Rerun] = []
    by_slug = {r.slug: r for r in rows}
    for r in listing["rerun"]:                       # in ladder order: the row above, rerun too, comes first
        original = by_slug[r["of"]]
        above = rows[rows.index(original) - 1] if original is not rows[0] else None
        ref = next((x.again for x in reruns if above is not None and x.original is above), above)
        reruns.append(Rerun(original, row_result(r["slug"], r["label"], records(r["slug"], seeds), ref, **rule)))
    listed = listing.get("beyond", [])
    beyond = ladder_results([(r["slug"], r["label"], records(r["slug"], seeds)) for r in listed], **rule)
    grid = sweep_rows(listing["sweep"], {**{r.slug: r for r in beyond}, **by_slug}, records, s.spike_threshold)
    sweep = [r for r in grid if r.row.slug in by_slug]           # the main ladder's rows, in ablation.md
    beyond_sweep = [r for r in grid if r.row.slug not in by_slug]  # the second ladder's, in beyond.md
    info = provenance(meta, rows, floor, match_params=listing["match_params"],
                      hf_classes=[(r["label"], r["hf_class"]) for r in listing["rows"]],
                      others=[*([aa] if aa else []), *loo, *(x.again for x in reruns),
                              *(row_result(c.runs[0].row, f"{r.row.label} at lr {c.lr:g}", c.runs)
                                for r in sweep for c in r.cells if not c.main)])
    beyond_info = provenance(meta, beyond, floor, match_params=listing["match_params"],
                             hf_classes=[(r["label"], r["hf_class"]) for r in listed]) if beyond else {}
    return Results(rows, s, info, aa=aa, loo=loo, reruns=reruns, perturbation=listing["rerun_perturbation"],
                   sweep=sweep, pairs=at_best(sweep, rows, confidence=s.confidence, band_sds=s.borderline),
                   uniform=math.log(meta["vocab_size"]), serve=served, beyond=beyond, beyond_provenance=beyond_info,
                   beyond_sweep=beyond_sweep, beyond_serve=list(beyond_served),
                   beyond_pairs=at_best(grid, beyond, confidence=s.confidence, band_sds=s.borderline))


def sweep_rows(grid: dict, by_slug: dict, records: Records, spike_threshold: float) -> list[SweepRow]:
    """The learning-rate grid, on its own seeds: its cells at train.lr are the main table's runs."""
    out = []
    for r in grid["rows"]:
        row = by_slug[r["slug"]]
        main = cell(1.0, grid["lr"], [x for x in row.runs if x.seed in grid["seeds"]], spike_threshold)
        others = [cell(c["multiple"], grid["lr"] * c["multiple"], records(c["slug"], grid["seeds"]), spike_threshold)
                  for c in r["runs"]]
        out.append(SweepRow(row, tuple(sorted([main, *others], key=lambda c: c.multiple))))
    return out
