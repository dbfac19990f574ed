"""Training throughput side by side (a benchmark, not a test): `modern-gpt bench`.

A plain reference GPT and each ladder row, eager and compiled (and, with --seeds, several seeds batched),
are timed in one process, in interleaved windows, so that the machine's drift hits them alike; each
figure is a median, and each ratio is taken against the reference measured in the same run. The matmul
peak is measured in the same run too (it moves between runs), in the dtype in use.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from tabulate import tabulate
from torch.utils import benchmark

from ..config import ModelConfig, TrainConfig
from ..nn import GPT
from ..pipeline.ladder import Row
from ..training.batched import Stacked
from ..training.loop import One, make_optimizer, resolve_device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


# ------------------------------------------------------------------------------- the reference

class ReferenceBlock(nn.Module):
    def __init__(self, n_head: int, n_embd: int):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.fc, self.out = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, 2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class ReferenceGPT(nn.Module):
    """Step 1 written the most direct way, as nanoGPT's model.py does it: one fused q/k/v matrix, no
    switches, no tables. The yardstick the ladder's rows are timed against."""

    def __init__(self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(ReferenceBlock(n_head, n_embd) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.head.weight = self.wte.weight

    def optim_groups(self) -> dict[str, str]:
        """Each parameter's optimiser group by GPT's rule (nn/model.py's optim_groups): the blocks' matrices, other
        matrices, vectors."""
        return {n: "matrix" if n.startswith("blocks.") and p.dim() == 2 else "decay" if p.dim() >= 2 else "no_decay"
                for n, p in self.named_parameters()}

    def forward(self, idx: torch.Tensor, targets: torch.Tensor, terms: dict | None = None):
        """terms: the training loop's dict for changes' loss terms, which the reference has none of."""
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


# ------------------------------------------------------------------------------- contestants

@dataclass
class Contestant:
    label: str
    mode: str                       # 'eager', a compile mode, or 'N seeds batched'
    params: int
    flops_per_token: int
    tokens_per_step: int
    step: Callable[[torch.Tensor, torch.Tensor], object]
    seeds: int = 1
    warmup_secs: float = 0.0        # the untimed first steps: a cold or warm compile shows here
    rates: list[float] = field(default_factory=list)
    peak_bytes: int = 0


def flops_per_token(n_matmul: int, n_layer: int, n_embd: int, block_size: int) -> int:
    """Training FLOPs per token: 6 per matmul weight (forward 2, backward 4), plus attention's
    q·k and weights·v over the context (the PaLM appendix formula, as nanoGPT uses it)."""
    return 6 * n_matmul + 12 * n_layer * n_embd * block_size


def gpt_flops(model: GPT) -> int:
    cfg = model.cfg
    n_matmul = model.num_params(non_embedding=True) + cfg.vocab_size * cfg.n_embd    # + the output head
    return flops_per_token(n_matmul, cfg.n_layer, cfg.n_embd, cfg.block_size)


def reference(cfg: ModelConfig, tc: TrainConfig, device: torch.device, mode: str) -> Contestant:
    """The reference on plain AdamW (eager), or on the same fused AdamW and compile mode as the rows."""
    torch.manual_seed(0)
    model = ReferenceGPT(cfg.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd).to(device)
    if mode == "none":
        optimizer = torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=(tc.beta1, tc.beta2),
                                      weight_decay=tc.weight_decay)
    else:
        optimizer = make_optimizer(model, tc)
    learner = One(model, dataclasses.replace(tc, compile=mode), device, optimizer=optimizer)
    embeddings = model.wte.weight.numel() + model.wpe.weight.numel()
    n_matmul = sum(p.numel() for p in model.parameters()) - embeddings + cfg.vocab_size * cfg.n_embd
    return Contestant("reference (plain Step 1)", "eager" if mode == "none" else mode,
                      sum(p.numel() for p in model.parameters()),
                      flops_per_token(n_matmul, cfg.n_layer, cfg.n_embd, cfg.block_size),
                      tc.batch_size * cfg.block_size, lambda x, y: train_step(learner, x[None], y[None]))


def train_step(learner, x: torch.Tensor, y: torch.Tensor) -> None:
    """One step as loop.fit takes it: the forward half (every seed's loss), then the update."""
    learner.losses(x, y)
    learner.update()


def row_contestant(row: Row, tc: TrainConfig, device: torch.device, mode: str) -> Contestant:
    torch.manual_seed(0)
    model = GPT(row.config).to(device)
    learner = One(model, dataclasses.replace(tc, compile=mode), device)
    return Contestant(row.label, "eager" if mode == "none" else mode, model.num_params(), gpt_flops(model),
                      tc.batch_size * row.config.block_size, lambda x, y: train_step(learner, x[None], y[None]))


def batched_contestant(row: Row, tc: TrainConfig, device: torch.device, seeds: int) -> Contestant:
    """The row's seeds as one batched model (training.batched, eager): tokens/s counts every seed's tokens."""
    models = []
    for seed in range(seeds):
        torch.manual_seed(seed)
        models.append(GPT(row.config).to(device))
    stacked = Stacked(models, tc, device)
    return Contestant(row.label, f"{seeds} seeds batched", models[0].num_params(), gpt_flops(models[0]),
                      seeds * tc.batch_size * row.config.block_size,
                      lambda x, y: train_step(stacked, x.expand(seeds, *x.shape), y.expand(seeds, *y.shape)),
                      seeds=seeds)


# ------------------------------------------------------------------------------- measuring

def matmul_peak(device: torch.device, dtype: torch.dtype, reps: int = 3, rounds: int = 5) -> tuple[float, int]:
    """This machine's matmul rate in FLOP/s, in `dtype`: at each size the median over `rounds` rounds of `reps`
    products (torch.utils.benchmark's Timer: two untimed products before each round, the device synced, this
    process's threads), the best size taken (small products miss the ceiling, large ones fall out of cache).
    Returns (rate, size)."""
    sizes = (256, 512, 1024, 2048) if device.type == "cpu" else (2048, 4096, 8192)
    best = (0.0, 0)
    for n in sizes:
        a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
        timer = benchmark.Timer("a @ b", globals={"a": a, "b": b}, num_threads=torch.get_num_threads())
        seconds = statistics.median(timer.timeit(reps).median for _ in range(rounds))
        best = max(best, (2 * n**3 / seconds, n))
    return best


def measure(contestants: list[Contestant], batches: list[tuple[torch.Tensor, torch.Tensor]], device: torch.device,
            iters: int, windows: int, warmup: int) -> None:
    """Warm every contestant up (compiles happen here), then time `windows` rounds in which each contestant
    runs `iters` steps in turn: drift on a shared machine hits every contestant alike. Timed here, not by
    torch.utils.benchmark: its Timer times one statement at a time, with untimed runs of its own before each."""
    feed = itertools.cycle(batches)
    for c in contestants:
        t0 = time.perf_counter()
        for _ in range(warmup):
            c.step(*next(feed))
        _sync(device)
        c.warmup_secs = time.perf_counter() - t0
    for _ in range(windows):
        for c in contestants:
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            t0 = time.perf_counter()
            for _ in range(iters):
                c.step(*next(feed))
            _sync(device)
            c.rates.append(iters * c.tokens_per_step / (time.perf_counter() - t0))
            if device.type == "cuda":
                c.peak_bytes = max(c.peak_bytes, torch.cuda.max_memory_allocated(device))


def bench(rows: list[Row], tc: TrainConfig, modes: list[str], seeds: int, iters: int, windows: int,
          warmup: int) -> list[Contestant]:
    """The reference and every row in each mode (eager first), interleaved; + each row's seeds batched."""
    device = resolve_device(tc.device)
    cfg = rows[0].config
    g = torch.Generator().manual_seed(0)
    batches = [(xy[:, :-1].to(device), xy[:, 1:].to(device))
               for xy in torch.randint(cfg.vocab_size, (8, tc.batch_size, cfg.block_size + 1), generator=g)]
    contestants = [reference(cfg, tc, device, mode) for mode in modes]
    for row in rows:
        contestants += [row_contestant(row, tc, device, mode) for mode in modes]
        if seeds > 1:
            contestants.append(batched_contestant(row, tc, device, seeds))
    measure(contestants, batches, device, iters, windows, warmup)
    return contestants


def format_bench(contestants: list[Contestant], peak: float) -> str:
    """One line per contestant: median tokens/s and its spread, the ratio against the eager reference and
    against the reference in the same mode, achieved FLOP/s and MFU against this run's peak."""
    cuda = any(c.peak_bytes for c in contestants)
    ref = {c.mode: statistics.median(c.rates) for c in contestants if c.label.startswith("reference")}
    head = ["variant", "mode", "params", "tok/s", "min–max", "× ref", "× same", "GFLOP/s", "MFU", "warm-up"]
    body = []
    for c in contestants:
        rate = statistics.median(c.rates)
        same = ref.get(c.mode)
        achieved = c.flops_per_token * rate
        body.append([c.label, c.mode, f"{c.params / 1e6:.2f}M", f"{rate:,.0f}",
                     f"{min(c.rates):,.0f}–{max(c.rates):,.0f}", f"{rate / ref['eager']:.2f}",
                     f"{rate / same:.2f}" if same else "", f"{achieved / 1e9:.1f}", f"{achieved / peak:.1%}",
                     f"{c.warmup_secs:.1f}s"] + ([f"{c.peak_bytes / 2**30:.1f} GiB"] if cuda else []))
    head += ["peak mem"] if cuda else []
    return tabulate(body, headers=head, tablefmt="simple", colalign=["left", "left"] + ["right"] * (len(head) - 2),
                    disable_numparse=True)
