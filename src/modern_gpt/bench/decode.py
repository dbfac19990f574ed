"""Generation speed with the KV cache and by full recompute, at several contexts: `modern-gpt bench --decode`."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from ..nn import GPT
from ..pipeline.ladder import Row
from .training import _sync


@dataclass(frozen=True)
class DecodeTiming:
    row: str
    context: int
    cached: float          # seconds per new token, median, with the KV cache
    recompute: float       # ... recomputing the whole sequence at every step


@torch.no_grad()
def decode_times(model: GPT, context: int, steps: int, windows: int, device: torch.device) -> tuple[float, float]:
    """Seconds per token of the last `steps` tokens up to `context`, with the cache and by full recompute:
    the median over `windows` interleaved windows (after one untimed window of each)."""
    from ..nn.model import KVCache
    model.eval()
    seq = torch.randint(0, model.cfg.vocab_size, (1, context), generator=torch.Generator().manual_seed(0)).to(device)
    start = context - steps

    def cached() -> float:
        kv = KVCache(model.cfg, 1, device)
        model(seq[:, :start], cache=kv)                  # prefill: not timed
        _sync(device)
        t0 = time.perf_counter()
        for t in range(start, context):
            model(seq[:, t:t + 1], cache=kv)
        _sync(device)
        return (time.perf_counter() - t0) / steps

    def recompute() -> float:
        _sync(device)
        t0 = time.perf_counter()
        for t in range(start, context):
            model(seq[:, :t + 1])
        _sync(device)
        return (time.perf_counter() - t0) / steps

    cached(), recompute()
    runs = [(cached(), recompute()) for _ in range(windows)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def decode_bench(rows: list[Row], contexts: list[int], steps: int, windows: int,
                 device: torch.device) -> list[DecodeTiming]:
    out = []
    for row in rows:
        torch.manual_seed(0)
        model = GPT(row.config).to(device)
        for c in contexts:
            out.append(DecodeTiming(row.label, c, *decode_times(model, c, steps, windows, device)))
    return out


def format_decode(results: list[DecodeTiming]) -> str:
    """Tokens/s per row and context, with and without the cache, and each one's growth from the shortest
    context."""
    lines = ["| row | context | tokens/s, cache | tokens/s, recompute | cache speed-up | time per token vs shortest, "
             "cache | × vs shortest, recompute |", "|---|---:|---:|---:|---:|---:|---:|"]
    first: dict[str, DecodeTiming] = {}
    for r in results:
        f = first.setdefault(r.row, r)
        lines.append(f"| {r.row} | {r.context:,} | {1 / r.cached:,.0f} | {1 / r.recompute:,.0f} | "
                     f"{r.recompute / r.cached:.1f}× | {r.cached / f.cached:.2f}× | {r.recompute / f.recompute:.2f}× |")
    return "\n".join(lines)
