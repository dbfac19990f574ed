"""The ladder's sections of params.yaml (Params' fields: model, baseline, ladder, seeds, train, launch, ablation,
sweep, beyond, scale, settle), checked strictly: each section alone by its parser (config/sections.py: PARSERS), then
against the others (a leave-one-out flag must be a ladder flag, the grid's seeds the main table's).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..config import ModelConfig, TrainConfig
from ..config.model_section import Baseline, ModelSection
from ..config.sections import (OPTIONAL, PARSERS, SECTIONS, AblationConfig, BeyondConfig, CatalogueConfig,
                               LadderConfig, LaunchConfig, ScaleConfig, SettleConfig, SweepConfig)
from ..config import params as params_file
from ..changes import plugged
from ..core.errors import ConfigError
from .families import BEYOND
from .ladder import Row, beyond, ladder, leave_one_out, star
from .sizes import SizeLadder, size_ladders
from ..settling.looks import check_levels

@dataclass(frozen=True)
class Params:
    model: ModelSection               # ModelConfig fields but vocab_size (the tokenizer's, known after tokenize)
    baseline: Baseline                # the Step 1 values of the ablation flags: overrides of model
    ladder: LadderConfig              # row 0 the baseline, then the flags in order
    seeds: list[int]
    train: TrainConfig
    ablation: AblationConfig
    launch: LaunchConfig = LaunchConfig()
    sweep: SweepConfig = SweepConfig()
    beyond: BeyondConfig = BeyondConfig()
    catalogue: CatalogueConfig = CatalogueConfig()
    scale: ScaleConfig = ScaleConfig()
    settle: SettleConfig = SettleConfig()

    def configs(self, vocab_size: int) -> tuple[ModelConfig, ModelConfig]:
        """The baseline and the model under study, at the model's shape."""
        return self.baseline.config(self.model, vocab_size), self.model.config(vocab_size)

    def rows(self, vocab_size: int) -> list[Row]:
        """The ladder's rows for a tokenizer of `vocab_size` tokens."""
        return ladder(*self.configs(vocab_size), self.ladder.flags)

    def leave_one_out(self, vocab_size: int) -> list[Row]:
        return leave_one_out(*self.configs(vocab_size), self.ablation.leave_one_out)

    def beyond_rows(self, vocab_size: int) -> list[Row]:
        """The second ladder's rows (beyond:), row 0 the main ladder's last; [] when it is off."""
        return beyond(self.rows(vocab_size)[-1], self.train, self.beyond)

    def star_rows(self, vocab_size: int) -> list[Row]:
        """The catalogue's rows (catalogue:), row 0 the main ladder's last, each other row one change alone on it;
        [] when it is off."""
        return star(self.rows(vocab_size)[-1], self.train, self.catalogue)

    def size_ladders(self, vocab_size: int) -> list[SizeLadder]:
        """The main ladder at every size of scale: (pipeline/sizes.py), smallest first; [] when it is off."""
        return size_ladders(self.scale, self.model, self.train,
                     lambda model: dataclasses.replace(self, model=model).rows(vocab_size))


# the ladder's sections (Params' fields), checked together (parse); the other stages' sections each alone (check_all)
LADDER_SECTIONS = tuple(s for s in SECTIONS if s in {f.name for f in dataclasses.fields(Params)})
STAGE_SECTIONS = tuple(s for s in SECTIONS if s not in LADDER_SECTIONS)


def parse(raw: Any) -> Params:
    s = params_file.sections(raw, LADDER_SECTIONS, optional=OPTIONAL)
    alone = {name: PARSERS[name](s[name], name) for name in ("model", "baseline", "ladder", "seeds", "train",
                                                             "ablation", "launch", "beyond", "catalogue",
                                                             "scale")}
    model, baseline, ladder_, train = alone["model"], alone["baseline"], alone["ladder"], alone["train"]
    flags, rows = list(ladder_.flags), list(ladder_.rows)

    seeds = alone["seeds"]
    if not seeds:
        raise ConfigError("seeds: give at least one seed")

    ablation = alone["ablation"]                                        # each value alone; against the rest:
    aa = ablation.aa_seeds
    if aa and (len(aa) != len(seeds) or set(aa) & set(seeds)):
        raise ConfigError(f"ablation.aa_seeds={aa}: give {len(seeds)} seeds (as many as seeds), none of {seeds}")
    loo = ablation.leave_one_out
    if not isinstance(loo, list) or any(f not in flags for f in loo) or len(set(loo)) != len(loo):
        raise ConfigError(f"ablation.leave_one_out={ablation.leave_one_out!r}: must list flags of the ladder "
                          f"({', '.join(flags)}), each once")
    rerun = ablation.rerun
    if not isinstance(rerun, list) or any(r not in rows for r in rerun) or len(set(rerun)) != len(rerun):
        raise ConfigError(f"ablation.rerun={ablation.rerun!r}: must list rows of the ladder ({', '.join(rows)}), "
                          "each once")
    ablation = dataclasses.replace(ablation, rerun=[r for r in rows if r in ablation.rerun])   # in ladder order

    params = Params(model=model, baseline=baseline, ladder=ladder_, seeds=list(seeds), train=train,
                    ablation=ablation, launch=alone["launch"], beyond=alone["beyond"], catalogue=alone["catalogue"],
                    scale=alone["scale"])
    params.rows(vocab_size=1)                                   # the ladders must resolve, now
    params.leave_one_out(vocab_size=1)
    full = params.rows(vocab_size=1)[-1]                        # the second ladder's and the catalogue's values,
    check_past_the_book(full, train, params.beyond, "beyond", beyond)  # even when they are off
    check_past_the_book(full, train, params.catalogue, "catalogue", star)
    params.size_ladders(vocab_size=1)                                  # every size against every row, now
    check_launch(params.launch, train.batch_size)
    beyond_slugs = [BEYOND.slug(flag=flag) for flag in params.beyond.ladder]
    return dataclasses.replace(params, sweep=parse_sweep(s["sweep"], rows + beyond_slugs, seeds),
                               settle=parse_settle(s["settle"], seeds))


def check_past_the_book(full: Row, train: TrainConfig, spec: BeyondConfig, name: str,
                        resolve: Callable[[Row, TrainConfig, BeyondConfig], list[Row]]) -> None:
    """The second ladder's or the catalogue's values (`name`): on, as its rows resolve on the book's design (`full`,
    by `resolve`); off, each on its own (a window need not fit a block_size shortened while it is off; a change's
    value by its declaration alone)."""
    if spec.ladder:
        resolve(full, train, spec)
        return
    for flag, value in spec.model.items():
        change = plugged(flag)
        if change is not None:
            try:
                change.check_value(value)
            except ConfigError as e:
                raise ConfigError(f"{name}.model.{e}") from None
        else:
            ModelConfig.from_dict({flag: value, **({"block_size": value + 1} if flag == "attn_window" else {})},
                                  f"{name}.model")
    resolve(full, train, dataclasses.replace(spec, ladder=list(spec.train), model={}))


def parse_settle(raw: Any, seeds: list[int]) -> SettleConfig:
    """settle: (config.sections.SettleConfig), its first look the base seeds' count; its runs are checked against
    the plan's rows (pipeline/plan.py), where they are known."""
    settle = PARSERS["settle"](raw, "settle")
    if settle.on and settle.looks[0] != len(seeds):
        raise ConfigError(f"settle.looks={settle.looks}: the first look must be the base seeds' count, "
                          f"{len(seeds)} (seeds: {seeds}); later looks add seeds, up to the last (the cap)")
    return settle


def check_launch(launch: LaunchConfig, batch_size: int) -> None:
    """Each of launch's processes trains an equal slice of the batch."""
    n = launch.nproc
    if n and batch_size % n:
        raise ConfigError(f"train.batch_size={batch_size}: launch runs {n} processes per run, each training an "
                          f"equal slice of the batch: use a multiple of {n}")


def parse_sweep(raw: Any, rows: list[str], seeds: list[int]) -> SweepConfig:
    """The learning-rate grid (config.sections.SweepConfig), checked against the ladder and the seeds: its rows
    are ladder rows, the second ladder's (beyond_<flag>) included when it is on, kept in ladder order; its seeds
    the main table's (its runs at train.lr are those)."""
    sweep = PARSERS["sweep"](raw, "sweep")
    covered = sweep.rows
    if not isinstance(covered, list) or any(r not in rows for r in covered) or len(set(covered)) != len(covered):
        raise ConfigError(f"sweep.rows={sweep.rows!r}: must list rows of the ladders ({', '.join(rows)}), each once")
    if sweep.on and (not sweep.seeds or set(sweep.seeds) - set(seeds)):
        raise ConfigError(f"sweep.seeds={sweep.seeds!r}: must list seeds of the main table ({seeds}), at least "
                          "one; the grid's runs at train.lr are the main table's (sweep.lr=[] switches the grid off)")
    return SweepConfig(lr=list(sweep.lr), rows=[r for r in rows if r in sweep.rows],
                       seeds=[s for s in seeds if s in sweep.seeds])


def check_all(raw: dict) -> Params:
    """Every section of params.yaml (config.params.load's mapping, unknown sections already refused), checked
    before anything trains: the other stages' sections each by its class, then the ladder's, then what ties
    them (serve.run_seed must be one of seeds)."""
    checked = {name: PARSERS[name](raw.get(name), name) for name in STAGE_SECTIONS}
    p = parse({k: raw[k] for k in LADDER_SECTIONS if raw.get(k) is not None or k not in OPTIONAL})
    serve = checked["serve"]
    if serve.run_seed not in p.seeds:
        raise ConfigError(f"serve.run_seed={serve.run_seed}: must be one of seeds ({p.seeds}), the runs there are")
    report = checked["report"]
    check_levels(p.settle.looks, p.settle.scale_cap, len(p.sweep.seeds) if p.sweep.lr and p.sweep.rows else None,
                 report.confidence, report.borderline)
    return p


def read_params(path: str | Path = "params.yaml") -> Params:
    """The ladder's sections of a params.yaml file, parsed and checked (Params)."""
    return parse(params_file.read_yaml(path))
