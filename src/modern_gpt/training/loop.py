"""The training loop: one plain function, nanoGPT-shaped.

Everything random comes from `seed`: the model's initial weights and dropout from torch's global
generator, the training batches from a generator of their own. So two variants trained with the same
seed see the same batches in the same order, and the same config and seed give the same losses.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from typing import Mapping

import torch
from tqdm import tqdm

from ..config import ModelConfig, TrainConfig
from ..core.errors import ConfigError
from ..records.run_record import Point
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


def make_optimizer(model: GPT, cfg: TrainConfig, params: Mapping[str, torch.Tensor] | None = None):
    """train.optimizer over the model's parameters, each in its group (GPT.optim_groups: the rule, or a change's
    declaration). params: other tensors in the model's parameters' places (batched seeds' stacked copies).

    'adamw': AdamW, fused (one kernel for all tensors, on CPU and CUDA alike); weight decay on the groups 'matrix'
    and 'decay' (matrices), none on 'no_decay' (gains, biases and other vectors).
    'muon': torch.optim.Muon on the 'matrix' group (the blocks' attention and MLP projections), AdamW as above on
    the rest (token table, output head, norms, biases), as nanochat and modded-nanogpt split them. Muon's
    adjust_lr_fn='match_rms_adamw' scales each matrix's step to the RMS an AdamW step has, so train.lr, the
    schedule and the grid's multiples mean the same for both; its weight decay is train.weight_decay, its
    momentum (0.95, Nesterov) its own default."""
    group = model.optim_groups()
    named = [(name, p) for name, p in (params or dict(model.named_parameters())).items() if p.requires_grad]
    muon = [p for name, p in named if cfg.optimizer == "muon" and group[name] == "matrix"]
    rest = [(name, p) for name, p in named if not any(p is m for m in muon)]
    groups = [
        {"params": [p for name, p in rest if group[name] != "no_decay"], "weight_decay": cfg.weight_decay},
        {"params": [p for name, p in rest if group[name] == "no_decay"], "weight_decay": 0.0},
    ]
    adamw = torch.optim.AdamW([g for g in groups if g["params"]], lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=True)
    if not muon:
        return adamw
    return Optimizers(torch.optim.Muon(muon, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                       adjust_lr_fn="match_rms_adamw"), adamw)


class Optimizers:
    """Several optimisers stepped as one (Muon on the matrices, AdamW on the rest): what the loop uses of an
    optimiser, param_groups (the schedule sets each group's lr), step and zero_grad."""

    def __init__(self, *optimizers: torch.optim.Optimizer):
        self.optimizers = optimizers

    @property
    def param_groups(self) -> list[dict]:
        return [g for o in self.optimizers for g in o.param_groups]

    def step(self) -> None:
        for o in self.optimizers:
            o.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)


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


class One:
    """One model as the loop trains it: through torch.compile's wrapper (train.compile) and, under torchrun,
    DistributedDataParallel, each process on its slice of the global batch. The loop's other learner is
    batched.Stacked (several seeds as one model); both give the loop every seed's loss of a step before
    any update, then update."""

    def __init__(self, model: GPT, cfg: TrainConfig, device: torch.device, ranks: Ranks = Ranks(),
                 optimizer: torch.optim.Optimizer | Optimizers | None = None):
        self.model, self.cfg, self.device, self.ranks = model, cfg, device, ranks
        self.fast = accelerate(model, cfg, device)
        self.stepped = wrap(self.fast, device)         # DistributedDataParallel under torchrun, else fast itself
        self.optimizer = optimizer or make_optimizer(model, cfg)
        self.loss: torch.Tensor | None = None         # the next-token loss (the curve's) ...
        self.objective: torch.Tensor | None = None    # ... and what the step minimises: it plus the changes' terms

    def losses(self, x: torch.Tensor, y: torch.Tensor) -> list[float]:
        """The forward half of a step on x, y of shape (1, batch, block): the global batch's loss (under
        torchrun: over every process's slice), its graph kept for update()."""
        mine = self.ranks.rows(self.cfg.batch_size)                                # this process's slice
        terms: dict[str, torch.Tensor] = {}
        with autocast(self.cfg, self.device):
            _, self.loss = self.stepped(x[0][mine].to(self.device), y[0][mine].to(self.device), terms=terms)
        self.objective = self.loss + sum(terms.values()) if terms else self.loss
        return [global_mean(self.loss)]

    def update(self) -> None:
        """The backward half: gradients, clipping, one optimiser step."""
        self.objective.backward()
        if self.cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.loss = self.objective = None

    def evaluate(self, windows: tuple[torch.Tensor, torch.Tensor]) -> list[tuple[float, dict[str, float]]]:
        return [mean_loss(self.fast, windows, self.cfg)]

    def weights(self, i: int) -> dict[str, torch.Tensor]:
        return {name: p.detach().clone() for name, p in self.model.named_parameters()}

    def models(self, final: list[dict | None]) -> list[GPT]:
        """The trained model, with a diverged run's weights from before its bad step (final[0])."""
        if final[0] is not None:
            self.model.load_state_dict(final[0], strict=False)
        return [self.model]


@dataclass(frozen=True)
class Trained:
    """What the loop measured; evaluation of the final weights is training.single's job."""
    diverged: bool                 # Watch stopped the run: a non-finite loss, or 10% above uniform past warm-up
    steps: int
    curve: tuple[Point, ...]
    secs: float
    tokens_per_sec: float
    device: str
    graphs: tuple[int, int] = (0, 0)   # torch.compile: graphs (compiled, loaded from the kernel cache)
    losses: tuple[float, ...] = ()     # every step's training-batch loss, before its update (spikes: the report)
    processes: int = 1                 # torchrun's processes that trained it together (DistributedDataParallel)


def init(model_cfg: ModelConfig, train_cfg: TrainConfig, seed: int, device: torch.device) -> GPT:
    """A seed's initial weights (torch's global generator, seeded: dropout then draws from it), perturbed by
    train.init_perturbation."""
    torch.manual_seed(seed)
    model = GPT(model_cfg).to(device)
    perturb(model, train_cfg.init_perturbation, seed)
    return model


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
        graphs_before = graph_counts()
        learner = One(init(model_cfg, train_cfg, seed, device), train_cfg, device, ranks)
        [(model, trained)] = fit(learner, model_cfg, train_cfg, train_data, val_data, [seed], label=label,
                                 progress=progress and ranks.rank == 0, processes=ranks.world)
        graphs = tuple(after - before for after, before in zip(graph_counts(), graphs_before))
        return model, dataclasses.replace(trained, graphs=graphs)


def fit(learner, model_cfg: ModelConfig, train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
        seeds: list[int], *, label: str, progress: bool, processes: int = 1) -> list[tuple[GPT, Trained]]:
    """The training loop, for one model (One) or several seeds as one (batched.Stacked): each seed its own
    batches (a generator seeded by it), the same fixed windows for the loss curve, the lr schedule, each
    seed's divergence watch, the progress bar and the timing. A seed whose loss diverges stops there, its
    weights those before the bad step; the loop ends when every seed has stopped or at train.iters."""
    n = len(seeds)
    batches = [torch.Generator().manual_seed(seed) for seed in seeds]
    n_eval = train_cfg.eval_iters * train_cfg.batch_size
    windows = [fixed_windows(d, model_cfg.block_size, n_eval) for d in (train_data, val_data)]
    bar = tqdm(total=train_cfg.iters, desc=label, leave=False, disable=None if progress else True,
               file=sys.stderr, dynamic_ncols=True)
    curves: list[list[Point]] = [[] for _ in seeds]
    losses: list[list[float]] = [[] for _ in seeds]
    watches = [Watch(math.log(model_cfg.vocab_size), train_cfg.warmup_iters) for _ in seeds]
    stopped: list[int | None] = [None] * n            # the step at which each seed diverged
    final: list[dict | None] = [None] * n             # its weights then

    def evaluate(it: int) -> None:
        on_train, on_val = (learner.evaluate(w) for w in windows)      # each seed's (loss, {term: mean})
        points = [Point(it, t, v, terms) for (t, terms), (v, _) in zip(on_train, on_val)]
        for i in range(n):
            if stopped[i] is None:
                curves[i].append(points[i])
        vals = ", ".join(f"{p.val:.4f}" for p in points)
        if progress and bar.disable:                  # not a terminal: a line per point, for logs
            losses_text = f"train {points[0].train:.4f} val {vals}" if n == 1 else f"val {vals}"
            print(f"{label} step {it}/{train_cfg.iters}: {losses_text}", file=sys.stderr, flush=True)
        bar.set_postfix(val=vals, refresh=False)

    step_secs, t0 = 0.0, time.perf_counter()
    for it in range(train_cfg.iters):
        if it % train_cfg.eval_interval == 0:
            evaluate(it)
        tick = time.perf_counter()
        for group in learner.optimizer.param_groups:
            group["lr"] = get_lr(it, train_cfg)
        xs, ys = zip(*(get_batch(train_data, model_cfg.block_size, train_cfg.batch_size, g) for g in batches))
        for i, value in enumerate(learner.losses(torch.stack(xs), torch.stack(ys))):
            if stopped[i] is not None:
                continue
            if watches[i].diverges(it, value):        # this seed stops here, before the update
                stopped[i], final[i] = it, learner.weights(i)
            else:
                losses[i].append(round(value, LOSS_DECIMALS))
        if all(s is not None for s in stopped):
            break
        learner.update()                              # a stopped seed's stacked copy runs on, unread
        step_secs += time.perf_counter() - tick
        bar.update()
    if any(s is None for s in stopped):
        evaluate(train_cfg.iters)
    bar.close()
    secs, tokens = time.perf_counter() - t0, train_cfg.batch_size * model_cfg.block_size
    steps = [train_cfg.iters if s is None else s for s in stopped]
    return [(model, Trained(stopped[i] is not None, steps[i], tuple(curves[i]), secs,
                            steps[i] * tokens / step_secs if step_secs else 0.0, str(learner.device),
                            losses=tuple(losses[i]), processes=processes))
            for i, model in enumerate(learner.models(final))]
