"""Generation speed with the KV cache and by full recompute, at several contexts: `modern-gpt bench --decode`.

Each figure comes from serving's own timings (serving/generate.py, the serve stage's): one greedy generation of
the last `steps` tokens up to the context, after an untimed one, with the cache and by recomputing the whole
sequence, alternating in windows so that the machine's drift hits both alike; the median of the windows.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch
from tabulate import tabulate

from ..nn import GPT
from ..pipeline.ladder import Row
from ..serving.generate import timings


@dataclass(frozen=True)
class DecodeTiming:
    row: str
    context: int
    cached: float          # seconds per new token, median, with the KV cache
    recompute: float       # ... recomputing the whole sequence at every step


def decode_times(model: GPT, context: int, steps: int, windows: int, device: torch.device) -> tuple[float, float]:
    """Seconds per token of the last `steps` tokens up to `context`, with the cache and by full recompute:
    the median over `windows` windows, each timing one generation of each."""
    def per_token(cache: bool) -> float:
        t = timings(model, 1, context - steps, steps, repeats=1, cache=cache, device=device)
        return 1 / t.decode_tokens_per_sec

    runs = [(per_token(True), per_token(False)) for _ in range(windows)]
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
    context (a Markdown table)."""
    head = ["row", "context", "tokens/s, cache", "tokens/s, recompute", "cache speed-up",
            "time per token vs shortest, cache", "× vs shortest, recompute"]
    first: dict[str, DecodeTiming] = {}
    body = []
    for r in results:
        f = first.setdefault(r.row, r)
        body.append([r.row, f"{r.context:,}", f"{1 / r.cached:,.0f}", f"{1 / r.recompute:,.0f}",
                     f"{r.recompute / r.cached:.1f}×", f"{r.cached / f.cached:.2f}×",
                     f"{r.recompute / f.recompute:.2f}×"])
    return tabulate(body, headers=head, tablefmt="pipe", colalign=["left"] + ["right"] * (len(head) - 1),
                    disable_numparse=True)
