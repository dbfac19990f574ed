"""The quick command's training profiles: `--smoke`'s, and the CPU recipe it and the bench default to; the shape
options that override them, and the ladder's rows at the resulting shape.

A profile is the shape the rows train at and the knobs it changes; the design each row trains is params.yaml's
either way (rows_for). The pipeline's profile is params.yaml's `train:`.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ...config import TrainConfig
from ...config.params import project_params
from ...pipeline.ladder import Row
from ...pipeline.ladder_params import parse

SHAPE = ("n_layer", "n_head", "n_embd", "block_size")        # what a profile sets of the model

# --smoke: the smoke test's own tiny model, small enough that seven rows train in seconds, on TrainConfig's defaults
SMOKE: dict[str, Any] = dict(n_layer=2, n_head=4, n_embd=64, block_size=32, batch_size=TrainConfig.batch_size,
                             iters=TrainConfig.iters, lr=TrainConfig.lr)


def cpu() -> dict[str, Any]:
    """nanoGPT's CPU recipe (1,000 steps at lr 1e-3) on the pipeline's shape and batch, params.yaml's model: and
    train:. The quick command without --smoke, and the bench."""
    p = parse(project_params())
    model = p.configs(vocab_size=1)[1]
    return {**{k: getattr(model, k) for k in SHAPE}, "batch_size": p.train.batch_size, "iters": 1000, "lr": 1e-3}


def add_shape_args(p: argparse.ArgumentParser, defaults: str) -> None:
    g = p.add_argument_group(f"shape (defaults: {defaults})")
    g.add_argument("--n-layer", type=int, help="transformer blocks")
    g.add_argument("--n-head", type=int, help="query heads")
    g.add_argument("--n-kv-head", type=int,
                   help="key/value heads of the GQA row (default: params.yaml's model.n_kv_head)")
    g.add_argument("--n-embd", type=int, help="residual width")
    g.add_argument("--block-size", type=int, help="context length in tokens")
    g.add_argument("--batch-size", type=int, help="sequences per step")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu", help="where to train (default cpu)")


def settings_from(args: argparse.Namespace, profile: dict) -> dict:
    """The profile's values, overridden by any option the user gave."""
    return {k: v if getattr(args, k, None) is None else getattr(args, k) for k, v in profile.items()}


def rows_for(settings: dict, vocab_size: int, n_kv_head: int | None, beyond: bool = False,
             catalogue: bool = False) -> list[Row]:
    """params.yaml's ladder (baseline, model, flags) at the profile's shape; the GQA row's K/V heads from
    --n-kv-head when given. A null head_dim (and a null baseline n_kv_head) follows the shape, as in the pipeline.
    beyond: the second ladder instead, from the book's design: beyond.ladder's flags, or while it is off ([]) every
    flag given under beyond.model and beyond.train, in that order (a change of your own's row included).
    catalogue: the catalogue's star instead, each change of catalogue.ladder (off: every one given) alone on the
    book's design."""
    p = parse(project_params())
    shape = {k: settings[k] for k in SHAPE} | ({} if n_kv_head is None else {"n_kv_head": n_kv_head})
    p = dataclasses.replace(p, model=p.model.replace(**shape))
    if catalogue:
        changes = p.catalogue.ladder or [*p.catalogue.model, *p.catalogue.train]
        return dataclasses.replace(p, catalogue=dataclasses.replace(p.catalogue, ladder=changes)).star_rows(vocab_size)
    if not beyond:
        return p.rows(vocab_size)
    flags = p.beyond.ladder or [*p.beyond.model, *p.beyond.train]
    every = p.model.given.get("global_every") or 0      # a window's global layer: at most the last of fewer layers
    if every > settings["n_layer"]:
        p = dataclasses.replace(p, model=p.model.replace(global_every=settings["n_layer"]))
    return dataclasses.replace(p, beyond=dataclasses.replace(p.beyond, ladder=flags)).beyond_rows(vocab_size)
