"""The training loop: one plain function, nanoGPT-shaped.

Everything random comes from `seed`: the model's initial weights and dropout from torch's global
generator, the training batches from a generator of their own. So two variants trained with the same
seed see the same batches in the same order, and the same config and seed give the same losses.
"""

from __future__ import annotations

import math
import sys
import time

import torch

from .config import ModelConfig, TrainConfig
from .data import check_length, fixed_windows, get_batch
from .errors import ConfigError
from .evaluate import mean_loss
from .model import GPT


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device='cuda': no CUDA device is available here (allowed: cpu, cuda, auto)")
    return torch.device(name)


def get_lr(it: int, cfg: TrainConfig) -> float:
    """Linear warm-up to cfg.lr, then cosine decay to cfg.min_lr at the last step."""
    if it < cfg.warmup_iters:
        return cfg.lr * (it + 1) / (cfg.warmup_iters + 1)
    decay_steps = max(1, cfg.iters - 1 - cfg.warmup_iters)
    ratio = min(1.0, (it - cfg.warmup_iters) / decay_steps)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (cfg.lr - cfg.min_lr)


def make_optimizer(model: GPT, cfg: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not on gains, biases or other vectors)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=device.type == "cuda")


def step(model: GPT, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, grad_clip: float) -> float:
    """One optimiser step; returns the batch loss. A non-finite loss is returned before any update."""
    _, loss = model(x, y)
    loss_value = loss.item()
    if not math.isfinite(loss_value):
        return loss_value
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_value


class Progress:
    """A one-line progress bar with the running loss on a terminal; a line per eval otherwise."""

    def __init__(self, label: str, total: int, enabled: bool):
        self.label, self.total, self.enabled = label, total, enabled
        self.tty = enabled and sys.stderr.isatty()
        self.last = 0.0

    def step(self, it: int, loss: float) -> None:
        now = time.perf_counter()
        if self.tty and (now - self.last > 0.1 or it + 1 == self.total):
            self.last = now
            done = int(20 * (it + 1) / self.total)
            sys.stderr.write(f"\r{self.label} [{'#' * done}{'.' * (20 - done)}] {it + 1}/{self.total} loss {loss:.4f}")
            sys.stderr.flush()

    def point(self, it: int, train: float, val: float) -> None:
        if self.enabled and not self.tty:
            print(f"{self.label} step {it}/{self.total}: train {train:.4f} val {val:.4f}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def train(
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    train_data: torch.Tensor,
    val_data: torch.Tensor,
    seed: int,
    *,
    label: str = "train",
    progress: bool = True,
) -> tuple[GPT, dict]:
    """Train one model on one seed. Returns the model and a small JSON-serialisable result.

    A non-finite training loss stops the run; the result then says diverged=True and its final
    losses are None, rather than raising.
    """
    check_length("train", train_data, model_cfg.block_size)
    check_length("val", val_data, model_cfg.block_size)
    device = resolve_device(train_cfg.device)
    torch.manual_seed(seed)
    model = GPT(model_cfg).to(device)
    batches = torch.Generator().manual_seed(seed)
    n_eval = train_cfg.eval_iters * train_cfg.batch_size
    train_windows = fixed_windows(train_data, model_cfg.block_size, n_eval)
    val_windows = fixed_windows(val_data, model_cfg.block_size, n_eval)
    optimizer = make_optimizer(model, train_cfg, device)
    bar = Progress(label, train_cfg.iters, progress)

    def evaluate(it: int) -> None:
        point = {
            "iter": it,
            "train": mean_loss(model, train_windows, train_cfg.batch_size),
            "val": mean_loss(model, val_windows, train_cfg.batch_size),
        }
        curve.append(point)
        bar.point(it, point["train"], point["val"])

    curve: list[dict] = []
    diverged, step_secs, it = False, 0.0, 0
    t0 = time.perf_counter()
    model.train()
    for it in range(train_cfg.iters):
        if it % train_cfg.eval_interval == 0:
            evaluate(it)
        tick = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it, train_cfg)
        x, y = get_batch(train_data, model_cfg.block_size, train_cfg.batch_size, batches)
        loss_value = step(model, optimizer, x.to(device), y.to(device), train_cfg.grad_clip)
        if not math.isfinite(loss_value):
            diverged = True
            break
        step_secs += time.perf_counter() - tick
        bar.step(it, loss_value)
    steps_done = it if diverged else train_cfg.iters
    if not diverged:
        evaluate(steps_done)
    bar.close()
    final = curve[-1]
    result = {
        "seed": seed,
        "diverged": diverged,
        "steps": steps_done,
        "train_loss": None if diverged else final["train"],   # None, not NaN: stays valid JSON
        "val_loss": None if diverged else final["val"],
        "curve": curve,
        "params": model.num_params(),
        "params_non_embedding": model.num_params(non_embedding=True),
        "secs": time.perf_counter() - t0,
        "tokens_per_sec": steps_done * train_cfg.batch_size * model_cfg.block_size / step_secs if step_secs else 0.0,
        "device": str(device),
    }
    return model, result
