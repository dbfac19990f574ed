"""Several seeds of one config trained as one batched model (torch.func.vmap over stacked weights).

For the quick command and the bench, where one small model leaves a GPU idle; the pipeline keeps one
run per stage. Each seed gets exactly what its separate run gets: its own initial weights, its own
batches, its own gradient clipping and learning-rate schedule, its own divergence stop. So its losses
equal the separate run's up to rounding (batched kernels add in another order).
"""

from __future__ import annotations

import copy
import math
import sys
import time
import warnings

import torch
from torch.func import functional_call, stack_module_state, vmap
from tqdm import tqdm

from ..config import ModelConfig, TrainConfig
from ..core.errors import ConfigError
from ..core.records import Point
from ..nn import GPT
from .batches import check_length, fixed_windows, get_batch
from .distributed import ranks
from .evaluate import autocast
from .loop import LOSS_DECIMALS, Trained, Watch, get_lr, make_optimizer, perturb, resolve_device

# vmap runs scaled_dot_product_attention one seed at a time (it has no batching rule yet) and says so
# at every call: measured, and in the README, so not repeated to the user
warnings.filterwarnings("ignore", message="There is a performance drop because we have not yet implemented "
                        "the batching rule for aten::_scaled_dot_product")


def clip_each(grads: list[torch.Tensor], max_norm: float) -> None:
    """clip_grad_norm_ for every stacked model at once: each seed's global norm, each seed's factor."""
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads], dim=1).norm(dim=1)    # (seeds,)
    factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(factor.view(-1, *[1] * (g.dim() - 1)))


class Stacked:
    """Several GPTs of one config as one: their weights stacked on a leading dimension, run through
    one weightless copy of the module with torch.func (functional_call under vmap)."""

    def __init__(self, models: list[GPT]):
        self.params, self.buffers = stack_module_state(models)   # (seeds, ...) leaves that require grad
        names = {id(p): name for name, p in models[0].named_parameters()}
        self.ties = {name: names[id(p)] for name, p in models[0].named_parameters(remove_duplicate=False)
                     if name not in self.params}               # the output head is the token matrix
        self.skeleton = copy.deepcopy(models[0]).to("meta")
        self.train_losses = vmap(self._loss)                   # each seed its own batch: (seeds, B, T)
        self.eval_losses = vmap(self._loss, in_dims=(0, 0, None, None))   # every seed the same windows

    def _loss(self, p: dict, b: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        p = {**p, **{tied: p[name] for tied, name in self.ties.items()}}
        return functional_call(self.skeleton, (p, b), (x, y))[1]

    def losses(self, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig) -> torch.Tensor:
        """Every seed's loss on its own batch, (seeds,): the forward half of loop.step."""
        with autocast(cfg, x.device):
            return self.train_losses(self.params, self.buffers, x, y)

    def update(self, optimizer: torch.optim.Optimizer, losses: torch.Tensor, cfg: TrainConfig) -> None:
        """The backward half: each seed's gradient (they share no weights), clipped per seed, one step."""
        losses.sum().backward()
        if cfg.grad_clip > 0:
            clip_each([p.grad for p in self.params.values()], cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def weights(self, i: int) -> dict[str, torch.Tensor]:
        return {name: p[i].detach().clone() for name, p in self.params.items()}


def train_seeds(model_cfg: ModelConfig, train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
                seeds: list[int], *, label: str = "train", progress: bool = True) -> list[tuple[GPT, Trained]]:
    """loop.train for each seed, in one batched model; returns each seed's model and record, in order.

    Eager only (train.compile is not applied here); dropout must be 0, since vmap cannot give each seed
    the dropout masks of its separate run.
    """
    if train_cfg.compile != "none":
        raise ConfigError(f"compile={train_cfg.compile!r}: seeds batched train eagerly (use compile='none', "
                          "or train the seeds one after another to compile)")
    if model_cfg.dropout > 0:
        raise ConfigError(f"dropout={model_cfg.dropout}: training seeds batched needs dropout 0 "
                          "(train the seeds one after another instead)")
    if ranks().world > 1:
        raise ConfigError(f"torchrun: {ranks().world} processes, but seeds batched train in one process "
                          "(torchrun is for one run over several processes: the pipeline's run stage)")
    check_length("train", train_data, model_cfg.block_size)
    check_length("val", val_data, model_cfg.block_size)
    device = resolve_device(train_cfg.device)
    models = []
    for seed in seeds:                                   # each seed's initial weights, as its own run draws them
        torch.manual_seed(seed)
        models.append(GPT(model_cfg).to(device))
        perturb(models[-1], train_cfg.init_perturbation, seed)
    stacked = Stacked(models)
    optimizer = make_optimizer(stacked.params.values(), train_cfg, stacked=1)
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    n_eval = train_cfg.eval_iters * train_cfg.batch_size
    windows = [fixed_windows(d, model_cfg.block_size, n_eval) for d in (train_data, val_data)]

    @torch.no_grad()
    def mean_losses(x_all: torch.Tensor, y_all: torch.Tensor) -> list[float]:
        stacked.skeleton.eval()
        total = torch.zeros(len(seeds), dtype=torch.float64)
        for i in range(0, len(x_all), train_cfg.batch_size):
            x, y = x_all[i: i + train_cfg.batch_size].to(device), y_all[i: i + train_cfg.batch_size].to(device)
            with autocast(train_cfg, device):
                total += stacked.eval_losses(stacked.params, stacked.buffers, x, y).double().cpu() * y.numel()
        stacked.skeleton.train()
        return (total / len(x_all) / x_all[0].numel()).tolist()

    curves: list[list[Point]] = [[] for _ in seeds]
    losses_of: list[list[float]] = [[] for _ in seeds]
    watches = [Watch(math.log(model_cfg.vocab_size), train_cfg.warmup_iters) for _ in seeds]
    alive = [True] * len(seeds)
    steps = [train_cfg.iters] * len(seeds)
    final: list[dict | None] = [None] * len(seeds)       # a diverged seed's weights, before the bad step

    def evaluate(it: int) -> None:
        train_loss, val_loss = (mean_losses(*w) for w in windows)
        for i in range(len(seeds)):
            if alive[i]:
                curves[i].append(Point(it, train_loss[i], val_loss[i]))

    bar = tqdm(total=train_cfg.iters, desc=label, leave=False, disable=None if progress else True,
               file=sys.stderr, dynamic_ncols=True)
    step_secs, t0 = 0.0, time.perf_counter()
    for it in range(train_cfg.iters):
        if it % train_cfg.eval_interval == 0:
            evaluate(it)
        tick = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it, train_cfg)
        xs, ys = zip(*(get_batch(train_data, model_cfg.block_size, train_cfg.batch_size, g) for g in generators))
        losses = stacked.losses(torch.stack(xs).to(device), torch.stack(ys).to(device), train_cfg)
        for i, value in enumerate(losses.tolist()):
            if not alive[i]:
                continue
            if watches[i].diverges(it, value):           # this seed stops here, as its own run would
                alive[i], steps[i], final[i] = False, it, stacked.weights(i)
            else:
                losses_of[i].append(round(value, LOSS_DECIMALS))
        if not any(alive):
            break
        stacked.update(optimizer, losses, train_cfg)     # a stopped seed's copy runs on, unread
        step_secs += time.perf_counter() - tick
        bar.update()
    if any(alive):
        evaluate(train_cfg.iters)
    bar.close()
    secs, tokens = time.perf_counter() - t0, train_cfg.batch_size * model_cfg.block_size
    results = []
    for i, model in enumerate(models):
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_((final[i] or stacked.weights(i))[name])
        rate = steps[i] * tokens / step_secs if step_secs else 0.0   # this seed's share of the batched steps
        results.append((model, Trained(not alive[i], steps[i], tuple(curves[i]), secs, rate, str(device),
                                       losses=tuple(losses_of[i]))))
    return results
