"""Several seeds of one config trained as one batched model (torch.func.vmap over stacked weights).

For the quick command and the bench, where one small model leaves a GPU idle; the pipeline keeps one
run per stage. Each seed gets exactly what its separate run gets: its own initial weights, its own
batches, its own gradient clipping and learning-rate schedule, its own divergence stop. So its losses
equal the separate run's up to rounding (batched kernels add in another order).
"""

from __future__ import annotations

import copy
import time
import warnings

import torch
from torch.func import functional_call, stack_module_state, vmap

from ..config import ModelConfig, TrainConfig
from ..core.errors import ConfigError
from ..records.run_record import RunRecord
from ..nn import GPT
from .batches import check_length
from .distributed import ranks
from .evaluate import autocast
from .loop import Trained, fit, init, make_optimizer, resolve_device
from .single import record

# vmap runs scaled_dot_product_attention one seed at a time (it has no batching rule yet) and says so
# at every call: measured, and in the README, so not repeated to the user
warnings.filterwarnings("ignore", message="There is a performance drop because we have not yet implemented "
                        "the batching rule for aten::_scaled_dot_product")


def clip_each(grads: list[torch.Tensor], max_norm: float) -> None:
    """clip_grad_norm_ for every stacked model at once: each seed's global norm, each seed's factor."""
    norms = torch.stack([g.reshape(len(g), -1).norm(dim=1) for g in grads], dim=1).norm(dim=1)   # (seeds,)
    factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(factor.view(-1, *[1] * (g.dim() - 1)))


class Stacked:
    """Several GPTs of one config as one, for loop.fit: their weights stacked on a leading dimension, run
    through one weightless copy of the module with torch.func (functional_call under vmap)."""

    def __init__(self, models: list[GPT], cfg: TrainConfig, device: torch.device):
        self.cfg, self.device, self._models = cfg, device, models
        self.params, self.buffers = stack_module_state(models)   # (seeds, ...) leaves that require grad
        names = {id(p): name for name, p in models[0].named_parameters()}
        self.ties = {name: names[id(p)] for name, p in models[0].named_parameters(remove_duplicate=False)
                     if name not in self.params}               # the output head is the token matrix
        self.skeleton = copy.deepcopy(models[0]).to("meta")
        self.train_losses = vmap(self._loss)                   # each seed its own batch: (seeds, B, T)
        self.eval_losses = vmap(self._loss, in_dims=(0, 0, None, None))   # every seed the same windows
        self.optimizer = make_optimizer(models[0], cfg, self.params)
        self.loss: torch.Tensor | None = None            # each seed's next-token loss, and what its step minimises
        self.objective: torch.Tensor | None = None

    def _loss(self, p: dict, b: dict, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """One seed's next-token loss and the changes' auxiliary terms."""
        p = {**p, **{tied: p[name] for tied, name in self.ties.items()}}
        terms: dict[str, torch.Tensor] = {}
        loss = functional_call(self.skeleton, (p, b), (x, y), {"terms": terms})[1]
        return loss, terms

    def losses(self, x: torch.Tensor, y: torch.Tensor) -> list[float]:
        """Every seed's loss on its own batch, x and y (seeds, batch, block): the forward half of a step."""
        with autocast(self.cfg, self.device):
            self.loss, terms = self.train_losses(self.params, self.buffers, x.to(self.device), y.to(self.device))
        self.objective = self.loss + sum(terms.values()) if terms else self.loss
        return self.loss.tolist()

    def update(self) -> None:
        """The backward half: each seed's gradient (they share no weights), clipped per seed, one step."""
        self.objective.sum().backward()
        if self.cfg.grad_clip > 0:
            clip_each([p.grad for p in self.params.values()], self.cfg.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.loss = self.objective = None

    @torch.no_grad()
    def evaluate(self, windows: tuple[torch.Tensor, torch.Tensor]) -> list[tuple[float, dict[str, float]]]:
        """Every seed's mean loss on the same fixed windows, in batches of train.batch_size, and its mean of each
        auxiliary term."""
        x_all, y_all = windows
        self.skeleton.eval()
        total = torch.zeros(len(self._models), dtype=torch.float64)
        sums: dict[str, torch.Tensor] = {}
        for i in range(0, len(x_all), self.cfg.batch_size):
            x = x_all[i: i + self.cfg.batch_size].to(self.device)
            y = y_all[i: i + self.cfg.batch_size].to(self.device)
            with autocast(self.cfg, self.device):
                loss, terms = self.eval_losses(self.params, self.buffers, x, y)
            total += loss.double().cpu() * y.numel()
            for name, term in terms.items():
                sums[name] = sums.get(name, 0) + term.double().cpu() * y.numel()
        self.skeleton.train()
        n = len(x_all) * x_all[0].numel()
        means = {name: (s / n).tolist() for name, s in sums.items()}
        return [(loss, {name: m[i] for name, m in means.items()}) for i, loss in enumerate((total / len(x_all) / x_all[0].numel()).tolist())]

    def weights(self, i: int) -> dict[str, torch.Tensor]:
        return {name: p[i].detach().clone() for name, p in self.params.items()}

    def models(self, final: list[dict | None]) -> list[GPT]:
        """Each seed's model with its trained weights (a diverged seed's from before its bad step)."""
        with torch.no_grad():
            for i, model in enumerate(self._models):
                weights = final[i] or self.weights(i)
                for name, p in model.named_parameters():
                    p.copy_(weights[name])
        return self._models


def train_seeds(model_cfg: ModelConfig, train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
                seeds: list[int], *, label: str = "train", progress: bool = True) -> list[tuple[GPT, Trained]]:
    """loop.train for each seed, in one batched model through the same loop (loop.fit); returns each seed's
    model and record, in order.

    Eager only (train.compile is not applied here); dropout must be 0, since vmap cannot give each seed
    the dropout masks of its separate run; AdamW only (torch.optim.Muon refuses stacked matrices).
    """
    if train_cfg.compile != "none":
        raise ConfigError(f"compile={train_cfg.compile!r}: seeds batched train eagerly (use compile='none', "
                          "or train the seeds one after another to compile)")
    if train_cfg.optimizer == "muon":
        raise ConfigError("optimizer='muon': torch.optim.Muon steps 2-D matrices, and seeds batched stack each "
                          "matrix 3-D (train the seeds one after another instead, as the pipeline does)")
    if model_cfg.dropout > 0:
        raise ConfigError(f"dropout={model_cfg.dropout}: training seeds batched needs dropout 0 "
                          "(train the seeds one after another instead)")
    if ranks().world > 1:
        raise ConfigError(f"torchrun: {ranks().world} processes, but seeds batched train in one process "
                          "(torchrun is for one run over several processes: the pipeline's run stage)")
    check_length("train", train_data, model_cfg.block_size)
    check_length("val", val_data, model_cfg.block_size)
    device = resolve_device(train_cfg.device)
    models = [init(model_cfg, train_cfg, seed, device) for seed in seeds]   # as each seed's own run draws them
    return fit(Stacked(models, train_cfg, device), model_cfg, train_cfg, train_data, val_data, seeds,
               label=label, progress=progress)


def run_seeds(slug: str, model_cfg: ModelConfig, train_cfg: TrainConfig, train_data: torch.Tensor,
              val_data: torch.Tensor, seeds: list[int], *, val_chars: int, label: str | None = None,
              progress: bool = True) -> list[tuple[GPT, RunRecord]]:
    """training.single.run() for several seeds trained as one batched model: the same records, to rounding. The quick
    command's (--batch-seeds); the pipeline's run stage trains one seed per run and never imports this file."""
    t0 = time.perf_counter()
    done = train_seeds(model_cfg, train_cfg, train_data, val_data, seeds, label=label or slug, progress=progress)
    secs = (time.perf_counter() - t0) / len(seeds)       # each seed's share of the wall clock
    return [(model, record(slug, seed, model_cfg, train_cfg, model, trained, len(val_data), val_chars, secs))
            for seed, (model, trained) in zip(seeds, done)]
