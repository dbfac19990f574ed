"""The training loop: one plain function, nanoGPT-shaped.

Everything random comes from `seed`: the model's initial weights and dropout from torch's global
generator, the training batches from a generator of their own. So two variants trained with the same
seed see the same batches in the same order, and the same config and seed give the same losses.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable

import torch
from tqdm import tqdm

from ..config import ModelConfig, TrainConfig
from ..core.errors import ConfigError
from ..core.records import Point
from ..nn import GPT
from .batches import check_length, fixed_windows, get_batch
from .distributed import Ranks, global_mean, process_group, wrap
from .evaluate import autocast, mean_loss

LOSS_DECIMALS = 6       # each step's loss as the run record keeps it


def perturb(model: GPT, relative: float, seed: int) -> None:
    """Multiply every parameter by (1 + relative x N(0, 1)), the noise drawn from a generator of its own (so
    batches, dropout and the unperturbed weights stay those of `seed`). At 1e-7, float32's rounding level, the
    run stands in for the same run on another machine: training amplifies a rounding difference whatever
    made it. relative=0 leaves the model untouched."""
    if relative == 0:
        return
    noise = torch.Generator().manual_seed(PERTURBATION_STREAM + seed)
    with torch.no_grad():
        for p in model.parameters():
            z = torch.randn(p.shape, generator=noise, dtype=torch.float64).to(p.device)
            p.copy_(p.double() * (1 + relative * z))


PERTURBATION_STREAM = 1_000_003        # perturb()'s generator: seed + this, apart from the batches' seed


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


def make_optimizer(params: Iterable[torch.Tensor], cfg: TrainConfig, stacked: int = 0) -> torch.optim.AdamW:
    """AdamW, fused (one kernel for all tensors, on CPU and CUDA alike); weight decay on matrices only
    (not on gains, biases or other vectors). stacked: leading dimensions that stack several models' copies."""
    params = [p for p in params if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() - stacked >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.dim() - stacked < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=True)


def fast_matmuls(device: torch.device) -> None:
    """On CUDA, float32 matmuls run in TF32 (nanoGPT's recipe); elsewhere nothing changes."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.fp32_precision = "tf32"


def accelerate(model: GPT, cfg: TrainConfig, device: torch.device) -> torch.nn.Module:
    """What training and evaluation call: the model itself (compile='none'), or torch.compile's wrapper
    around the same parameters. Inductor keeps its kernels on disk (TORCHINDUCTOR_CACHE_DIR; the
    pipeline's run stage points it at .cache/ in the project), so only the first process that meets a
    graph pays for compiling it. On CUDA, float32 matmuls run in TF32 (fast_matmuls)."""
    fast_matmuls(device)
    if cfg.compile == "none":
        return model
    if device.type == "cpu":
        # Inductor's multithreaded C++ kernels changed a loss in its last bit now and then between two
        # processes (seen with 2 threads); single-threaded they give the same numbers every time, at a
        # few percent of speed. Matmuls and attention still use every thread.
        import torch._inductor.config
        torch._inductor.config.cpp.threads = 1
    return torch.compile(model, mode=cfg.compile)


def graph_counts() -> tuple[int, int]:
    """Inductor's graphs so far in this process: (compiled, loaded from the on-disk cache)."""
    from torch._dynamo.utils import counters
    return counters["inductor"]["fxgraph_cache_miss"], counters["inductor"]["fxgraph_cache_hit"]


ABOVE_UNIFORM = 1.1     # Watch: a loss this many times the uniform model's, past warm-up, has diverged


@dataclass
class Watch:
    """Divergence, judged step by step: a non-finite loss, or, past warm-up, a loss clearly above the uniform
    model's (ln of the vocabulary size: what guessing every token equally likely scores), by ABOVE_UNIFORM.
    The 10% keeps clear of a fresh model (it starts a few hundredths above ln V) and of the batch noise of one
    that cannot learn (random tokens hover at ln V)."""
    uniform: float
    warmup_iters: int
    stopped: bool = False

    def diverges(self, it: int, loss: float) -> bool:
        self.stopped = not math.isfinite(loss) or (it >= self.warmup_iters and loss > ABOVE_UNIFORM * self.uniform)
        return self.stopped


def step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
         cfg: TrainConfig, diverges: Callable[[float], bool] = lambda loss: not math.isfinite(loss)) -> float:
    """One optimiser step; returns the batch loss (under torchrun: over every process's slice of the batch).
    A loss that `diverges` is returned before any update."""
    with autocast(cfg, x.device):
        _, loss = model(x, y)
    loss_value = global_mean(loss)
    if diverges(loss_value):
        return loss_value
    loss.backward()
    if cfg.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_value


@dataclass(frozen=True)
class Trained:
    """What the loop measured; evaluation of the final weights is training.run's job."""
    diverged: bool                 # Watch stopped the run: a non-finite loss, or 10% above uniform past warm-up
    steps: int
    curve: tuple[Point, ...]
    secs: float
    tokens_per_sec: float
    device: str
    graphs: tuple[int, int] = (0, 0)   # torch.compile: graphs (compiled, loaded from the kernel cache)
    losses: tuple[float, ...] = ()     # every step's training-batch loss, before its update (spikes: the report)
    processes: int = 1                 # torchrun's processes that trained it together (DistributedDataParallel)


def train(
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    train_data: torch.Tensor,
    val_data: torch.Tensor,
    seed: int,
    *,
    label: str = "train",
    progress: bool = True,
) -> tuple[GPT, Trained]:
    """Train one model on one seed. A diverging loss (Watch) stops the run (diverged=True), never raises.
    Under torchrun, the processes train it together (training.distributed), each returning the same result.

    progress: a bar on a terminal (tqdm), else one line per loss-curve point on stderr (rank 0's only).
    """
    check_length("train", train_data, model_cfg.block_size)
    check_length("val", val_data, model_cfg.block_size)
    with process_group(resolve_device(train_cfg.device), train_cfg.batch_size) as (ranks, device):
        return _train(model_cfg, train_cfg, train_data, val_data, seed, device, ranks, label,
                      progress and ranks.rank == 0)


def _train(model_cfg: ModelConfig, train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
           seed: int, device: torch.device, ranks: Ranks, label: str, progress: bool) -> tuple[GPT, Trained]:
    torch.manual_seed(seed)
    model = GPT(model_cfg).to(device)
    perturb(model, train_cfg.init_perturbation, seed)
    graphs_before = graph_counts()
    fast = accelerate(model, train_cfg, device)
    stepped = wrap(fast, device)                 # DistributedDataParallel under torchrun, else fast itself
    batches = torch.Generator().manual_seed(seed)
    n_eval = train_cfg.eval_iters * train_cfg.batch_size
    train_windows = fixed_windows(train_data, model_cfg.block_size, n_eval)
    val_windows = fixed_windows(val_data, model_cfg.block_size, n_eval)
    optimizer = make_optimizer(model.parameters(), train_cfg)
    bar = tqdm(total=train_cfg.iters, desc=label, leave=False, disable=None if progress else True,
               file=sys.stderr, dynamic_ncols=True)

    def evaluate(it: int) -> None:
        point = Point(it, mean_loss(fast, train_windows, train_cfg), mean_loss(fast, val_windows, train_cfg))
        curve.append(point)
        if progress and bar.disable:             # not a terminal: a line per point, for logs
            print(f"{label} step {it}/{train_cfg.iters}: train {point.train:.4f} val {point.val:.4f}",
                  file=sys.stderr, flush=True)
        bar.set_postfix(val=f"{point.val:.4f}", refresh=False)

    curve: list[Point] = []
    losses: list[float] = []
    watch = Watch(math.log(model_cfg.vocab_size), train_cfg.warmup_iters)
    diverged, step_secs, it = False, 0.0, 0
    t0 = time.perf_counter()
    model.train()
    for it in range(train_cfg.iters):
        if it % train_cfg.eval_interval == 0:
            evaluate(it)
        tick = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it, train_cfg)
        x, y = get_batch(train_data, model_cfg.block_size, train_cfg.batch_size, batches)   # the global batch
        mine = ranks.rows(train_cfg.batch_size)                                            # this process's slice
        loss_value = step(stepped, optimizer, x[mine].to(device), y[mine].to(device), train_cfg,
                          lambda v: watch.diverges(it, v))
        if watch.stopped:
            diverged = True
            break
        losses.append(round(loss_value, LOSS_DECIMALS))
        step_secs += time.perf_counter() - tick
        bar.update()
    steps_done = it if diverged else train_cfg.iters
    if not diverged:
        evaluate(steps_done)
    bar.close()
    tokens = steps_done * train_cfg.batch_size * model_cfg.block_size
    graphs = tuple(after - before for after, before in zip(graph_counts(), graphs_before))
    return model, Trained(diverged, steps_done, tuple(curve), time.perf_counter() - t0,
                          tokens / step_secs if step_secs else 0.0, str(device), graphs, tuple(losses), ranks.world)
