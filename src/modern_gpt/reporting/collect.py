"""The report's results from what the pipeline wrote: the plan, the corpus meta and floor, each listed run's record
and each served row's record. Nothing is measured here, so the same files give the same report on any machine."""

from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path
from typing import Any, Callable

from ..core.files import read_json
from ..records.run_record import RunRecord
from ..records.inputs import CorpusMeta
from ..records.stages import Floor, LadderPlan, Plan, ServeRecord
from .provenance import provenance
from ..settling.looks import Design, design, sweep_design
from .results import Ladder, Rerun, Results, RowResult, SweepRow, ladder_results, row_result
from .settings import Settings, report_settings
from .sweep import sweep_cell, sweep_pairs

def from_files(runs: Path, serve: Path, plan_file: Path, meta_file: Path, generated: Path, section: Any
               ) -> tuple[Plan, Records, Results]:
    """The plan, the run records' reader and the results, read from the files the pipeline wrote (the report
    stage's and `modern-gpt settle`'s one way in): `runs`, `serve` the run and serve folders, `generated` the
    generate stage's folder (its floor applies to its corpus only), `section` params.yaml's report:. Each run.json
    is read once: the records returned are the ones the results hold, so runs.csv is written from the same records.
    """
    plan = Plan.from_dict(read_json(plan_file), str(plan_file))
    meta = CorpusMeta.from_dict(read_json(meta_file), str(meta_file))

    @functools.cache
    def record(slug: str, seed: int) -> RunRecord:
        f = runs / slug / f"{seed}" / "run.json"
        return RunRecord.from_dict(read_json(f), str(f))

    def records(slug: str, seeds: list[int]) -> list[RunRecord]:
        return [record(slug, seed) for seed in seeds]

    def served(slug: str) -> ServeRecord:
        f = serve / f"{slug}.json"
        return ServeRecord.from_dict(read_json(f), str(f))

    floor_file = generated / "floor.json"
    floor = (Floor.from_dict(read_json(floor_file), str(floor_file))
             if Path(meta.corpus.path) == generated / "sanskrit.txt" else None)
    return plan, records, collect(plan, meta, floor, section, records, served)


Records = Callable[[str, list[int]], list[RunRecord]]     # (row slug, seeds) → their run records, in seed order
Served = Callable[[str], ServeRecord]                      # a row's slug → its serve record


def collect(plan: Plan, meta: CorpusMeta, floor: Floor | None, section: Any, records: Records, served: Served
            ) -> Results:
    """plan: configs/plan.json; meta: data/tokenized/meta.json; floor: the generated corpus's floor.json (None for
    another corpus); section: params.yaml's report section."""
    s = report_settings(section, train_chars_per_token=meta.train.chars / meta.train.tokens,
                        val_chars_per_token=meta.val.chars / meta.val.tokens,
                        floor=floor.nats_per_char if floor else None)
    seeds = list(plan.seeds)
    rule = dict(confidence=s.confidence, param_tolerance=s.param_tolerance, band_sds=s.borderline)
    designs = [design(plan, lp.size is not None, s.confidence, s.borderline) for lp in plan.ladders]
    judged = [ladder_results([(r.slug, r.label, records(r.slug, list(plan.seeds_of(r.slug)))) for r in lp.rows],
                             d, star=lp.star, **rule)
              for lp, d in zip(plan.ladders, designs)]
    rows = judged[0]                                 # the main ladder: the checks below are its
    aa = None
    if plan.aa_seeds:
        aa = row_result("baseline", rows[0].label, records("baseline", list(plan.aa_seeds)), rows[0], **rule)
    loo = [row_result(r.slug, r.label, records(r.slug, seeds), rows[-1], **rule) for r in plan.leave_one_out]
    reruns: list[Rerun] = []
    by_slug = {r.slug: r for r in rows}
    for r in plan.rerun:                             # in ladder order: the row above, rerun too, comes first
        original = by_slug[r.of]
        above = rows[rows.index(original) - 1] if original is not rows[0] else None
        ref = next((x.again for x in reruns if above is not None and x.original is above), above)
        reruns.append(Rerun(original, row_result(r.slug, r.label, records(r.slug, seeds), ref, **rule)))
    # a sweep row belongs to the first ladder holding its row (the second ladder's row 0 is the main's last)
    owner = {r.slug: i for i in reversed(range(len(judged))) for r in judged[i]}
    at_sweep = sweep_design(plan, s.confidence, s.borderline)
    sweep = sweep_rows(plan, at_sweep, {r.slug: r for ladder in reversed(judged) for r in ladder}, records,
                       s.spike_threshold)
    extras = [*([aa] if aa else []), *loo, *(x.again for x in reruns)]
    ladders = [dataclasses.replace(
                   collect_ladder(lp, judged[i], [g for g in sweep if owner[g.row.slug] == i], sweep, served, meta,
                                  floor, plan, s, at_sweep, extras if i == 0 else []),
                   design=designs[i], claims=tuple(r.claim for r in lp.rows) if lp.star else ())
               for i, lp in enumerate(plan.ladders)]
    return Results(ladders, s, aa=aa, loo=loo, reruns=reruns, perturbation=plan.rerun_perturbation,
                   uniform=math.log(meta.vocab_size), sizes=plan.sizes)


def collect_ladder(lp: LadderPlan, rows: list[RowResult], sweep: list[SweepRow], whole_sweep: list[SweepRow],
                   served: Served, meta: CorpusMeta, floor: Floor | None, plan: Plan, s: Settings, at_sweep: Design,
                   extras: list[RowResult]) -> Ladder:
    """One ladder's results: its rows judged, its provenance (`extras`: further rows whose machines count too, and
    its sweep's cells off train.lr), its sweep rows (`sweep`; pairs at the best rates are read from the
    `whole_sweep`, since its row 0 may be another ladder's row) and its rows' serve records (a scale ladder's rows
    and the catalogue's are not served)."""
    cells = [row_result(c.runs[0].slug, f"{r.row.label} at lr {c.lr:g}", c.runs)
             for r in sweep for c in r.cells if not c.main]
    info = provenance(meta, rows, floor, match_params=plan.match_params,
                      hf_classes=[(r.label, r.hf_class) for r in lp.rows], others=[*extras, *cells])
    return Ladder(lp.name, rows, info, sweep=sweep,
                  pairs=sweep_pairs(whole_sweep, rows, at_sweep),
                  serve=[served(r.slug) for r in lp.rows] if lp.size is None and not lp.star else [],
                  size=lp.size)


def sweep_rows(plan: Plan, at_sweep: Design, by_slug: dict[str, RowResult], records: Records,
               spike_threshold: float) -> list[SweepRow]:
    """The learning-rate grid, on its own seeds: its cells at train.lr are the main table's runs. Each cell also
    holds its runs past sweep.seeds that the grid's looks take (the row's own, or those settle added)."""
    out = []
    sweep, seeds = plan.sweep, list(plan.sweep.seeds)
    for r in sweep.rows:
        row = by_slug[r.slug]
        main = sweep_cell(r.slug, 1.0, sweep.lr, [x for x in row.runs if x.seed in seeds], spike_threshold,
                          [x for x in row.runs if x.seed not in seeds and x.seed in at_sweep.order])
        others = [sweep_cell(c.slug, c.multiple, sweep.lr * c.multiple, records(c.slug, seeds), spike_threshold,
                             records(c.slug, list(plan.seeds_of(c.slug)[len(seeds):])))
                  for c in r.runs]
        out.append(SweepRow(row, tuple(sorted([main, *others], key=lambda c: c.multiple))))
    return out
