"""The quick command's training profiles: `--smoke`'s, and the CPU recipe it and the bench default to.

A profile is the shape the rows train at and the knobs it changes; the design each row trains is params.yaml's
either way (cli.rows_for). The pipeline's profile is params.yaml's `train:`.
"""

from __future__ import annotations

from typing import Any

from ..config import TrainConfig
from ..core.params import project_params
from ..pipeline.params import parse

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
