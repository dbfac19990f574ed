"""Losses on fixed windows, and bits per character."""

from __future__ import annotations

import math

import torch

from ..config import TrainConfig


def autocast(cfg: TrainConfig, device: torch.device) -> torch.autocast:
    """The precision context of every forward pass, training and evaluation alike."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.dtype == "bfloat16")


@torch.no_grad()
def mean_loss(model: torch.nn.Module, windows: tuple[torch.Tensor, torch.Tensor],
              cfg: TrainConfig) -> tuple[float, dict[str, float]]:
    """Mean next-token cross-entropy (nats per token) over fixed (inputs, targets) windows, in batches of
    cfg.batch_size (the training shape, so a compiled model reuses its kernels) and cfg's precision; and the mean
    of each auxiliary loss term the model's changes add (none: {})."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    x_all, y_all = windows
    total, count, sums = 0.0, 0, {}
    for i in range(0, len(x_all), cfg.batch_size):
        x, y = x_all[i: i + cfg.batch_size].to(device), y_all[i: i + cfg.batch_size].to(device)
        terms: dict[str, torch.Tensor] = {}
        with autocast(cfg, device):
            _, loss = model(x, y, terms=terms)
        total += loss.item() * y.numel()
        count += y.numel()
        for name, term in terms.items():
            sums[name] = sums.get(name, 0.0) + term.item() * y.numel()
    model.train(was_training)
    return total / count, {name: s / count for name, s in sums.items()}


def bits_per_char(nats_per_token: float, n_tokens: int, n_chars: int) -> float:
    """Convert a per-token loss to bits per character of the text those tokens encode."""
    return nats_per_token / math.log(2) * n_tokens / n_chars
