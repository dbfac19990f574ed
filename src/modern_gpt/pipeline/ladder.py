"""The ladder: row 0 is the baseline; row k switches flag k to the model's value on top of row k-1."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

from ..config import ModelConfig, TrainConfig
from ..config.sections import BeyondConfig, LadderConfig
from ..core.errors import ConfigError
from .families import BEYOND, CATALOGUE, LOO
from .labels import BASELINE, BOOK, revert_label, row_label


@dataclass(frozen=True)
class Row:
    slug: str            # a stage-name-safe id: 'baseline', 'norm', 'loo_pos', ...
    label: str           # what a reader sees: 'Step 1 baseline', '+ RMSNorm', '+ GQA (kv=2)'
    config: ModelConfig
    changed: bool        # False when the flag's baseline and model values agree ("no change")
    train: TrainConfig | None = None    # None: params.yaml's train:; the second ladder's rows may switch its flags


def switch(cfg: ModelConfig, flag: str, value: Any, target: ModelConfig) -> ModelConfig:
    """cfg with one flag set to value, on the way to `target`. A head_dim that is n_embd / n_head at both ends
    (null in params.yaml, resolved) follows a change of n_embd or n_head; any other head_dim stays."""
    changes = {flag: value}
    derived = [c.head_dim * c.n_head == c.n_embd for c in (cfg, target)]
    if flag in ("n_embd", "n_head") and all(derived):
        changes["head_dim"] = None
    return cfg.replace(**changes)


def ladder(baseline: ModelConfig, model: ModelConfig, flags: Sequence[str]) -> list[Row]:
    """Rows from `baseline` to `model`, one flag at a time, in the order of `flags`.

    A flag whose two values agree still gets its row (marked changed=False), so a table always has
    one row per ladder entry and the reader sees that nothing changed there.
    """
    LadderConfig(tuple(flags))                                  # known flags, each once
    rows = [Row("baseline", BASELINE, baseline, True)]
    cfg = baseline
    for flag in flags:
        value = getattr(model, flag)
        changed = getattr(cfg, flag) != value
        try:
            cfg = switch(cfg, flag, value, model)
        except ConfigError as e:
            raise ConfigError(f"ladder row {flag!r}: {e}") from None
        rows.append(Row(flag, row_label(flag, value, cfg, changed), cfg, changed))
    if cfg != model:
        ours, theirs = cfg.to_dict(), model.to_dict()
        diff = [k for k in {**ours, **theirs} if ours.get(k) != theirs.get(k)]
        raise ConfigError(
            f"ladder: baseline and model differ in {', '.join(diff)}, which the ladder does not walk; "
            "add them to the ladder or give the baseline the model's values"
        )
    return rows


def leave_one_out(baseline: ModelConfig, model: ModelConfig, flags: Sequence[str]) -> list[Row]:
    """The full model with one change reverted to its baseline value, for each flag."""
    return [Row(LOO.slug(flag=flag), revert_label(flag, getattr(model, flag), model),
                switch(model, flag, getattr(baseline, flag), baseline), True) for flag in flags]


def star(full: Row, train: TrainConfig, spec: BeyondConfig) -> list[Row]:
    """The catalogue: row 0 the main ladder's last row (`full`, the book's design, whose runs it reuses), then for
    each flag of spec.ladder row 0 with that one flag switched to its value in spec.model or spec.train: a star,
    each row one change alone, each compared with row 0. [] when off."""
    if not spec.ladder:
        return []
    rows = [Row(full.slug, BOOK, full.config, True, train)]
    for flag in spec.ladder:                               # each alone: a chain of one, on row 0
        one = dataclasses.replace(spec, ladder=[flag])
        try:
            _, row = beyond(full, train, one)
        except ConfigError as e:
            raise ConfigError("catalogue." + str(e).removeprefix("beyond.")) from None
        rows.append(dataclasses.replace(row, slug=CATALOGUE.slug(flag=flag)))
    return rows


def beyond(full: Row, train: TrainConfig, spec: BeyondConfig) -> list[Row]:
    """The second ladder: row 0 the main ladder's last row (`full`, whose runs it reuses: same slug), then each
    flag of spec.ladder switched to its value in spec.model or spec.train, on top of the row before. [] when off."""
    if not spec.ladder:
        return []
    rows = [Row(full.slug, BOOK, full.config, True, train)]
    cfg = full.config
    for flag in spec.ladder:
        section = "model" if flag in spec.model else "train"
        value = spec.values[flag]
        try:
            if section == "model":
                before, cfg = getattr(cfg, flag), switch(cfg, flag, value, cfg)
                now = getattr(cfg, flag)
            else:
                before, train = getattr(train, flag), TrainConfig.from_dict({**train.to_dict(), flag: value}, "train")
                now = getattr(train, flag)
        except ConfigError as e:
            raise ConfigError(f"beyond.{section}.{str(e).removeprefix('train.')}") from None
        rows.append(Row(BEYOND.slug(flag=flag), row_label(flag, now, cfg, before != now), cfg, before != now, train))
    return rows
