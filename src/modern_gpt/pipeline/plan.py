"""The plan: every row's resolved config, and the list of runs the report reads.

A run's config file holds only what training reads (model and train); labels and the row order go
into the plan file, which no run depends on, so rewording a label retrains nothing.
"""

from __future__ import annotations

import dataclasses

from ..config.validate import check_split_sizes
from ..records.inputs import CorpusMeta, RowConfig
from ..records.stages import (LadderName, LadderPlan, Plan, PlannedRow, SweepPlan, SweepPlanRow,
                              SweepPlanRun)
from ..nn.model import match_mlp
from ..changes.builtin import declared
from .families import CATALOGUE, RERUN, SWEEP
from ..config.hf_class import hf_name
from .ladder import Row
from .ladder_params import Params
from .sizes import non_embedding
from ..settling.order import added_seeds, looks_of


def sweep_runs(p: Params, covered: list[Row]) -> tuple[list[SweepPlanRow], dict[str, RowConfig]]:
    """The learning-rate grid: each covered row at each multiple of its rate (a second-ladder row's own optimiser,
    at the same multiples), as the plan's sweep rows and the runs' configs."""
    sweep, configs = [], {}
    for r in covered if p.sweep.lr else []:
        runs = []
        for m in p.sweep.lr:
            base = r.train or p.train
            scaled = dataclasses.replace(base, lr=base.lr * m, min_lr=base.min_lr * m)
            slug = SWEEP.slug(row=r.slug, lr=m)
            configs[slug] = RowConfig(r.config, scaled)
            runs.append(SweepPlanRun(float(m), slug))
        sweep.append(SweepPlanRow(r.slug, tuple(runs)))
    return sweep, configs


def plan(p: Params, meta: CorpusMeta) -> tuple[dict[str, RowConfig], Plan]:
    """({slug: the run config}, the plan) for a tokenized corpus described by `meta`."""
    rows = p.rows(meta.vocab_size)
    loo = p.leave_one_out(meta.vocab_size)
    beyond = p.beyond_rows(meta.vocab_size)
    starred = p.star_rows(meta.vocab_size)
    at_sizes = p.size_ladders(meta.vocab_size)
    check_split_sizes(meta.train.tokens, meta.val.tokens, block_size=rows[0].config.block_size)
    listed = [s for s in at_sizes if s.size.name is not None]          # the default size's rows are `rows`
    others = [(s.rows, s.train) for s in listed]
    if p.ablation.match_params:
        target = non_embedding(rows[0].config)
        rows, loo, beyond, starred = (
            [rows[0]] + [dataclasses.replace(r, config=match_mlp(r.config, target)) for r in rows[1:]],
            *([dataclasses.replace(r, config=match_mlp(r.config, target)) for r in rs] for rs in (loo, beyond, starred)))
        others = [([at[0]] + [dataclasses.replace(r, config=match_mlp(r.config, non_embedding(at[0].config)))
                              for r in at[1:]], train) for at, train in others]     # each size: its own baseline's
    # the second ladder's row 0 is the main ladder's last row, whose runs it reads: its config is that row's
    configs = {r.slug: RowConfig(r.config, r.train or p.train) for r in rows + loo + beyond[1:] + starred[1:]}
    configs |= {r.slug: RowConfig(r.config, train) for at, train in others for r in at}
    perturbed = dataclasses.replace(p.train, init_perturbation=p.ablation.rerun_perturbation)
    rerun = [r for r in rows if r.slug in p.ablation.rerun]
    configs |= {RERUN.slug(row=r.slug): RowConfig(r.config, perturbed) for r in rerun}

    sweep, sweep_configs = sweep_runs(p, [r for r in rows + beyond[1:] if r.slug in p.sweep.rows])
    configs |= sweep_configs

    def entry(r: Row, **changes) -> PlannedRow:
        return dataclasses.replace(PlannedRow(r.slug, r.label, r.changed, hf_name(r.config)), **changes)

    ladders = [LadderPlan(LadderName.MAIN, tuple(entry(r) for r in rows))]
    if beyond:
        ladders.append(LadderPlan(LadderName.BEYOND, tuple(entry(r) for r in beyond)))
    if starred:                                      # each row's flag: its slug's; its claim: the flag's declaration
        ladders.append(LadderPlan(LadderName.CATALOGUE, tuple(
            entry(r, claim=declared(CATALOGUE.parse(r.slug)["flag"]).claim) if i else entry(r)
            for i, r in enumerate(starred))))
    ladders += [LadderPlan(LadderName.SCALE, tuple(entry(r) for r in at), size=s.size.name)
                for s, (at, _) in zip(listed, others)]
    return configs, Plan(
        ladders=tuple(ladders), seeds=tuple(p.seeds), aa_seeds=tuple(p.ablation.aa_seeds),
        leave_one_out=tuple(entry(r) for r in loo),
        rerun=tuple(entry(r, slug=RERUN.slug(row=r.slug), of=r.slug) for r in rerun),
        rerun_perturbation=perturbed.init_perturbation, match_params=p.ablation.match_params,
        sweep=SweepPlan(p.train.lr, tuple(sweep), tuple(p.sweep.seeds)), sizes=tuple(s.size for s in at_sizes),
        looks=tuple(p.settle.looks) if p.settle.on else (), scale_cap=p.settle.scale_cap,
        added=added_seeds(p, looks_of(p, [r.slug for r in rows + beyond[1:] + starred[1:]],
                                            [r.slug for at, _ in others for r in at], sweep)),
    )
