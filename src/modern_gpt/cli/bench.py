"""Training throughput and model FLOPs utilisation per ladder row (a benchmark, not a test)."""

from __future__ import annotations

import statistics
import time

import torch

from ..nn import GPT
from ..pipeline.ladder import Row
from ..training.config import TrainConfig
from ..training.loop import make_optimizer, resolve_device, step


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device: torch.device, n: int = 1024, reps: int = 10, rounds: int = 5) -> float:
    """This machine's fp32 matmul rate in FLOP/s: the median over rounds of reps n×n products."""
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    for _ in range(3):
        a @ b
    _sync(device)
    rates = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        _sync(device)
        rates.append(2 * n**3 * reps / (time.perf_counter() - t0))
    return statistics.median(rates)


def flops_per_token(model: GPT) -> int:
    """Training FLOPs per token: 6 per matmul weight (forward 2, backward 4), plus attention's
    q·k and weights·v over the context (the PaLM appendix formula, as nanoGPT uses it)."""
    cfg = model.cfg
    n_matmul = model.num_params(non_embedding=True) + cfg.vocab_size * cfg.n_embd   # + the output head
    return 6 * n_matmul + 12 * cfg.n_layer * cfg.n_embd * cfg.block_size


def bench_row(row: Row, train_cfg: TrainConfig, iters: int, windows: int, warmup: int, seed: int = 0) -> dict:
    """Tokens per second of real training steps on random tokens: the median of `windows` timed
    windows of `iters` steps each, after `warmup` untimed steps."""
    cfg = row.config
    device = resolve_device(train_cfg.device)
    torch.manual_seed(seed)
    model = GPT(cfg).to(device)
    optimizer = make_optimizer(model, train_cfg, device)
    data = torch.randint(cfg.vocab_size, (windows * iters + warmup + 1, train_cfg.batch_size, cfg.block_size + 1))
    batches = iter(data.to(device))

    def one_step() -> None:
        xy = next(batches)
        step(model, optimizer, xy[:, :-1], xy[:, 1:], train_cfg.grad_clip)

    for _ in range(warmup):
        one_step()
    _sync(device)
    rates = []
    for _ in range(windows):
        t0 = time.perf_counter()
        for _ in range(iters):
            one_step()
        _sync(device)
        rates.append(iters * train_cfg.batch_size * cfg.block_size / (time.perf_counter() - t0))
    return {
        "label": row.label,
        "params": model.num_params(),
        "tokens_per_sec": statistics.median(rates),
        "tokens_per_sec_min": min(rates),
        "tokens_per_sec_max": max(rates),
        "flops_per_token": flops_per_token(model),
    }


def format_bench(results: list[dict], peak: float) -> str:
    head = f"{'variant':<22}{'params':>8}{'tok/s (median)':>16}{'min–max':>18}{'GFLOP/s':>9}{'MFU':>7}"
    lines = [head, "-" * len(head)]
    for r in results:
        achieved = r["flops_per_token"] * r["tokens_per_sec"]
        spread = f"{r['tokens_per_sec_min']:,.0f}–{r['tokens_per_sec_max']:,.0f}"
        lines.append(
            f"{r['label']:<22}{r['params'] / 1e6:>7.2f}M{r['tokens_per_sec']:>16,.0f}{spread:>18}"
            f"{achieved / 1e9:>9.1f}{achieved / peak:>7.1%}"
        )
    return "\n".join(lines)
