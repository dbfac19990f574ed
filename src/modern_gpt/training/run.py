"""One run: train a config on a seed, evaluate the trained weights, and return the run record.

The pipeline's run stage and the quick command both go through here, so both report the same numbers.
"""

from __future__ import annotations

import time

import torch

from ..core.records import RunRecord
from ..nn import GPT, ModelConfig
from .config import TrainConfig
from .evaluate import score
from .loop import train


def run(row: str, model_cfg: ModelConfig, train_cfg: TrainConfig, train_data: torch.Tensor,
        val_data: torch.Tensor, seed: int, *, val_chars: int, label: str | None = None,
        progress: bool = True) -> tuple[GPT, RunRecord]:
    """Train, then score the final weights on the fixed windows (None when the run diverged)."""
    t0 = time.perf_counter()
    model, trained = train(model_cfg, train_cfg, train_data, val_data, seed, label=label or f"{row} seed {seed}",
                           progress=progress)
    scores = {"train_loss": None, "val_loss": None, "val_bpc": None}
    if not trained.diverged:
        scores = score(model, train_cfg, train_data, val_data, val_chars)
    record = RunRecord(
        row=row, seed=seed, model=model_cfg.to_dict(), train=train_cfg.to_dict(),
        diverged=trained.diverged, steps=trained.steps, curve=trained.curve, **scores,
        params=model.num_params(), params_non_embedding=model.num_params(non_embedding=True),
        secs=time.perf_counter() - t0, tokens_per_sec=trained.tokens_per_sec, device=trained.device,
        torch=torch.__version__,
    )
    return model, record
