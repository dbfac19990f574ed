"""The main ladder at other model sizes (params.yaml `scale:`): each size's rows and recipe, checked before anything
trains, and each size's record for the plan (records.stages.Size).

A size replaces model:'s shape in every row of the ladder: n_layer, n_embd and n_head; n_kv_head (the K/V heads of
the rows from GQA on) and head_dim where the size gives them, else model:'s n_kv_head and n_embd / n_head. The
baseline keeps one K/V head per query head, and every other value of every row stays, as do the seeds and the
recipe. No config field is added: a size's runs are configs of the fields every run already has.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..config import ModelConfig, TrainConfig
from ..config.model_section import ModelSection
from ..config.sections import ScaleConfig, SizeShape
from ..core.errors import ConfigError
from ..records.stages import Size
from .families import SCALE
from .ladder import Row


@dataclass(frozen=True)
class SizeLadder:
    """The main ladder at one size: the size's record for the plan, its rows and its recipe."""
    size: Size
    rows: list[Row]              # the main ladder at this size (a listed size's slugs: the scale family's)
    train: TrainConfig           # the recipe at this size (scale.budget)


def non_embedding(cfg: ModelConfig) -> int:
    """N, as GPT.num_params counts it (Kaplan et al.), from the shapes alone (a model on the meta device: no
    memory, no initialisation). torch only here: ladder_params.py imports this module, and reading params.yaml stays
    torch-free while no size is listed."""
    import torch
    from ..nn import GPT
    with torch.device("meta"):
        return GPT(cfg).num_params(non_embedding=True)


def _divisors(n: int) -> str:
    return ", ".join(str(k) for k in range(1, n + 1) if n % k == 0)


def _check_shape(name: str, shape: SizeShape, model: ModelConfig, rope: bool) -> None:
    """The rules a shape must meet in every row, each refused in one line naming scale.sizes.<name>.<field>."""
    where = f"scale.sizes.{name}"
    n_embd, n_head, head_dim = shape.n_embd, shape.n_head, shape.head_dim
    if head_dim is None and n_embd % n_head:
        raise ConfigError(f"{where}.n_head={n_head}: must split n_embd={n_embd} into whole heads (allowed: "
                          f"{_divisors(n_embd)}), or give {where}.head_dim")
    size = head_dim or n_embd // n_head
    if rope and size % 2:
        key = "head_dim" if head_dim is not None else "n_head"
        raise ConfigError(f"{where}.{key}={getattr(shape, key)}: gives heads of {size} dimensions; RoPE rotates pairs of "
                          "dimensions, so the head size must be even")
    if model.attn_window and model.global_every > shape.n_layer:
        raise ConfigError(f"{where}.n_layer={shape.n_layer}: fewer layers than model.global_every="
                          f"{model.global_every} (every {model.global_every}th layer sees the whole context beside the "
                          f"window); allowed: {model.global_every} or more")
    kv = model.n_kv_head if shape.n_kv_head is None else shape.n_kv_head
    if n_head % kv:
        if shape.n_kv_head is not None:
            raise ConfigError(f"{where}.n_kv_head={kv}: must divide n_head={n_head} into equal groups (allowed: "
                              f"{_divisors(n_head)})")
        raise ConfigError(f"{where}.n_head={n_head}: model.n_kv_head={kv} K/V heads must divide it into equal "
                          f"groups; give {where}.n_kv_head (allowed: {_divisors(n_head)})")


def _shape(cfg: ModelConfig) -> tuple[int, ...]:
    return cfg.n_layer, cfg.n_embd, cfg.n_head, cfg.n_kv_head, cfg.head_dim


def size_ladders(spec: ScaleConfig, model: ModelSection, recipe: TrainConfig,
                 rows_at: Callable[[ModelSection], list[Row]]) -> list[SizeLadder]:
    """Every size of `spec`, smallest N first, the default (model:'s shape, its rows the main table's) among them;
    [] when scale.sizes is empty. `model` and `recipe` are params.yaml's model: and train:, `rows_at(model)` the
    main ladder's rows on such a model: section (Params.sizes passes its own ladder)."""
    if not spec.sizes:
        return []
    rows = rows_at(model)
    full = rows[-1].config
    n0 = non_embedding(full)
    rope = any(r.config.pos == "rope" for r in rows)
    batch_tokens = recipe.batch_size * full.block_size
    found = [SizeLadder(Size(None, *_shape(full), n0, recipe.iters, recipe.iters * batch_tokens), rows, recipe)]
    for name, shape in spec.sizes.items():
        where = f"scale.sizes.{name}"
        _check_shape(name, shape, full, rope)
        try:
            sized = [dataclasses.replace(r, slug=SCALE.slug(size=name, row=r.slug))
                     for r in rows_at(model.replace(head_dim=None, **shape.given()))]
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        config = sized[-1].config
        same = next((s.size for s in found if _shape(s.rows[-1].config) == _shape(config)), None)
        if same is not None:
            raise ConfigError(f"{where}: the same shape as " + ("model: (whose runs are the main table's; list only "
                              "other sizes)" if same.name is None else f"scale.sizes.{same.name}"))
        n = non_embedding(config)
        train = recipe
        if spec.budget == "tokens_per_param":
            f = n / n0
            iters = round(recipe.iters * f)
            if iters < spec.min_iters:
                raise ConfigError(
                    f"{where}: would train {iters} steps at model:'s {recipe.iters * batch_tokens / n0:.3g} "
                    f"tokens per non-embedding parameter (scale.budget: tokens_per_param), fewer than "
                    f"scale.min_iters={spec.min_iters}; list a larger size, or use scale.budget: steps")
            train = dataclasses.replace(recipe, iters=iters, warmup_iters=round(recipe.warmup_iters * f),
                                        eval_interval=max(1, round(recipe.eval_interval * f)))
        found.append(SizeLadder(Size(name, *_shape(config), n, train.iters, train.iters * batch_tokens), sized, train))
    return sorted(found, key=lambda s: s.size.non_embedding)
