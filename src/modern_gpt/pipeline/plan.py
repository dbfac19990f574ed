"""The plan: every row's resolved config, and the list of runs the report reads.

A run's config file holds only what training reads (model and train); labels and the row order go
into the plan file, which no run depends on, so rewording a label retrains nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..config.seeds import seed_order, sweep_looks, sweep_seed_order
from ..config.validate import check_split_sizes
from ..core.errors import ConfigError
from ..records.inputs import CorpusMeta, RowConfig
from ..records.stages import (AddedSeeds, LadderName, LadderPlan, Plan, PlannedRow, SweepPlan, SweepPlanRow,
                              SweepPlanRun)
from ..nn.model import match_mlp
from ..changes.builtin import declared
from .families import CATALOGUE, RERUN, SWEEP
from ..config.hf_class import hf_name
from .ladder import Row
from .ladder_params import Params
from .sizes import non_embedding


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


@dataclass(frozen=True)
class Looks:
    """How a run slug's seeds grow under settle: its base seeds, the order its looks take, and those looks (the
    last its cap)."""
    base: tuple[int, ...]
    order: tuple[int, ...]
    looks: tuple[int, ...]


def added_seeds(p: Params, looks_of: dict[str, Looks]) -> tuple[AddedSeeds, ...]:
    """settle.runs, checked against the slugs the looks judge (`looks_of`: a ladder row's, a grid run's): each run's
    slug is one of them, and its added seeds are its seed order's next ones up to one of its looks."""
    out = []
    for slug, seeds in p.settle.added().items():
        if slug not in looks_of:
            raise ConfigError(f"settle.runs: {slug}-{seeds[0]}: {slug} is no row of a ladder planned now, nor a run "
                              f"of its learning-rate grid ({', '.join(looks_of)}); remove its runs, or switch its "
                              "ladder on again")
        lk = looks_of[slug]
        base, n = len(lk.base), len(lk.base) + len(seeds)
        if not p.settle.on:                          # off: the runs stay, each comparison judged once on them all
            if taken := sorted(set(seeds) & set(lk.base)):
                raise ConfigError(f"settle.runs: {slug}-{taken[0]}: seed {taken[0]} is one of its base seeds "
                                  f"({list(lk.base)}); remove it")
            out.append(AddedSeeds(slug, tuple(seeds)))
            continue
        if n > lk.looks[-1]:
            raise ConfigError(f"settle.runs: {slug} has {n} seeds, past its cap of {lk.looks[-1]} (settle.looks, "
                              "settle.scale_cap); remove the runs past it")
        if tuple(seeds) != lk.order[base:n] or n not in lk.looks:
            raise ConfigError(f"settle.runs: {slug}'s seeds {seeds} are not the seed order's next ones up to a look "
                              f"({list(lk.order[base:n])} would give {n}; looks {list(lk.looks)}): modern-gpt settle "
                              "writes them")
        out.append(AddedSeeds(slug, tuple(seeds)))
    return tuple(out)


def looks_of(p: Params, rows: list[Row], sized: list[Row], sweep: list[SweepPlanRow]) -> dict[str, Looks]:
    """Each slug settle may add seeds to, and how: the ladders' rows (`rows`; a scale ladder's, `sized`, up to
    settle.scale_cap) and the learning-rate grid's runs (from sweep.seeds, then the looks past its count)."""
    looks = tuple(p.settle.looks) if p.settle.on else (len(p.seeds),)
    cap = looks[-1]
    order = seed_order(p.seeds, p.ablation.aa_seeds, cap)
    scaled = tuple(k for k in looks if k <= (p.settle.scale_cap or cap))
    at_sweep = sweep_looks(p.settle.looks if p.settle.on else (), len(p.sweep.seeds))
    sweep_order = sweep_seed_order(p.sweep.seeds, p.seeds, p.ablation.aa_seeds, at_sweep[-1])
    out = {r.slug: Looks(tuple(p.seeds), order, looks) for r in rows}
    out |= {r.slug: Looks(tuple(p.seeds), order[:scaled[-1]], scaled) for r in sized}
    out |= {x.slug: Looks(tuple(p.sweep.seeds), sweep_order, at_sweep) for g in sweep for x in g.runs}
    return out


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
        added=added_seeds(p, looks_of(p, rows + beyond[1:] + starred[1:], [r for at, _ in others for r in at], sweep)),
    )
