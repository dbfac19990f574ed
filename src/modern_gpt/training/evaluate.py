"""Losses on fixed windows, and bits per character."""

from __future__ import annotations

import math

import torch

from ..config import TrainConfig
from .batches import fixed_windows


def autocast(cfg: TrainConfig, device: torch.device) -> torch.autocast:
    """The precision context of every forward pass, training and evaluation alike."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.dtype == "bfloat16")


@torch.no_grad()
def mean_loss(model: torch.nn.Module, windows: tuple[torch.Tensor, torch.Tensor], cfg: TrainConfig) -> float:
    """Mean next-token cross-entropy (nats per token) over fixed (inputs, targets) windows, in batches of
    cfg.batch_size (the training shape, so a compiled model reuses its kernels) and cfg's precision."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    x_all, y_all = windows
    total, count = 0.0, 0
    for i in range(0, len(x_all), cfg.batch_size):
        x, y = x_all[i: i + cfg.batch_size].to(device), y_all[i: i + cfg.batch_size].to(device)
        with autocast(cfg, device):
            _, loss = model(x, y)
        total += loss.item() * y.numel()
        count += y.numel()
    model.train(was_training)
    return total / count


def bits_per_char(nats_per_token: float, n_tokens: int, n_chars: int) -> float:
    """Convert a per-token loss to bits per character of the text those tokens encode."""
    return nats_per_token / math.log(2) * n_tokens / n_chars


def score(model: torch.nn.Module, train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
          val_chars: int) -> dict[str, float]:
    """Train and val loss of the given weights on the fixed windows (the ones the loss curve uses), and bpc."""
    block, n = model.cfg.block_size, train_cfg.eval_iters * train_cfg.batch_size
    val_loss = mean_loss(model, fixed_windows(val_data, block, n), train_cfg)
    return {
        "train_loss": mean_loss(model, fixed_windows(train_data, block, n), train_cfg),
        "val_loss": val_loss,
        "val_bpc": bits_per_char(val_loss, len(val_data), val_chars),
    }
