"""`modern-gpt bench` (the book's `python modern_gpt.py --bench`): training tokens/s side by side, or with
--decode generation tokens/s; the measuring lives in the bench tool (modern_gpt.bench)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..config import TrainConfig
from ..config.choices import COMPILE_MODES, DTYPES
from ..core.errors import ConfigError
from ..pipeline.ladder import Row
from .support.profiles import add_shape_args, cpu, rows_for, settings_from

if TYPE_CHECKING:
    import torch


def add_parsers(sub) -> None:
    b = sub.add_parser("bench", help="training tokens/s side by side: a plain reference, each row eager and compiled")
    b.add_argument("--iters", type=int, default=10, help="steps per timed window (default 10)")
    b.add_argument("--windows", type=int, default=5, help="timed windows; the median is reported (default 5)")
    b.add_argument("--warmup", type=int, default=5, help="untimed steps first, compiles included (default 5)")
    b.add_argument("--vocab-size", type=int, default=65, help="tokens in the vocabulary (default 65)")
    b.add_argument("--rows", help="comma-separated row slugs to time, e.g. baseline,qk_norm (default: every row)")
    b.add_argument("--seeds", type=int, default=1, help=">1: also each row's seeds as one batched model (eager)")
    b.add_argument("--compile", choices=COMPILE_MODES, default="default",
                   help="the compile mode timed next to eager (default: default; none: eager only)")
    b.add_argument("--dtype", choices=DTYPES, default="float32", help="bfloat16: matmuls under bf16 autocast")
    b.add_argument("--decode", action="store_true",
                   help="instead: generation tokens/s with the KV cache and by full recompute, at each of --contexts, "
                        "for untrained baseline and full models (context up to the largest)")
    b.add_argument("--contexts", default="64,256,1024", help="--decode: context lengths (default 64,256,1024)")
    add_shape_args(b, "params.yaml's model: shape and train.batch_size, now {n_layer} layers, {n_head} heads, "
                      "{n_embd} wide, {block_size} context, batch {batch_size}".format(**cpu()))
    b.set_defaults(func=cmd_bench)


def bench_settings(args: argparse.Namespace) -> dict:
    """The CPU profile's shape and batch (no steps or rate: the bench trains none to the end), as overridden."""
    return settings_from(args, {k: v for k, v in cpu().items() if k not in ("iters", "lr")})


def where(device: torch.device) -> str:
    import torch
    return torch.cuda.get_device_name(device) if device.type == "cuda" else f"{torch.get_num_threads()} threads"


def cmd_decode_bench(args: argparse.Namespace) -> None:
    import torch

    from ..bench import decode
    from ..training.loop import resolve_device
    try:
        contexts = sorted({int(c) for c in args.contexts.split(",")})
    except ValueError:
        raise ConfigError(f"--contexts={args.contexts!r}: give context lengths, e.g. 64,256,1024") from None
    steps = args.iters
    if steps < 1:
        raise ConfigError(f"--iters={steps}: must be at least 1 (the timed tokens)")
    if contexts[0] <= steps or args.windows < 1:
        raise ConfigError(f"--contexts={args.contexts}, --iters={steps}, --windows={args.windows}: every context "
                          "must exceed --iters (the timed tokens), and --windows must be at least 1")
    settings = {**bench_settings(args), "block_size": max(contexts)}
    rows = rows_for(settings, args.vocab_size, args.n_kv_head)
    rows = [rows[0], rows[-1]]
    device = resolve_device(args.device)
    print(f"device={device} ({where(device)}) torch={torch.__version__} untrained models: {settings['n_layer']} "
          f"layers, {settings['n_head']} heads, {settings['n_embd']} wide, context {max(contexts)}, batch 1")
    print(f"seconds per token: the last {steps} tokens up to each context, median of {args.windows} interleaved "
          "windows (cache and recompute alternate)\n", flush=True)
    print(decode.format_decode(decode.decode_bench(rows, contexts, steps, args.windows, device)))


def chosen_rows(rows: list[Row], wanted: str | None) -> list[Row]:
    """--rows: the rows of those slugs (every row without it), or a one-line error naming an unknown one."""
    if not wanted:
        return rows
    slugs = wanted.split(",")
    unknown = [r for r in slugs if r not in [row.slug for row in rows]]
    if unknown:
        raise ConfigError(f"--rows: no row {', '.join(unknown)} (rows: {', '.join(row.slug for row in rows)})")
    return [row for row in rows if row.slug in slugs]


def cmd_bench(args: argparse.Namespace) -> None:
    if args.decode:
        return cmd_decode_bench(args)
    import torch

    from ..bench import training
    from ..training.loop import fast_matmuls, resolve_device
    settings = bench_settings(args)
    rows = chosen_rows(rows_for(settings, args.vocab_size, args.n_kv_head), args.rows)
    for name in ("iters", "windows", "seeds"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name}={getattr(args, name)}: must be at least 1")
    train_cfg = TrainConfig(batch_size=settings["batch_size"], device=args.device, dtype=args.dtype)
    device = resolve_device(train_cfg.device)
    print(f"device={device} ({where(device)}) torch={torch.__version__} dtype={args.dtype} "
          f"shape: {settings['n_layer']} layers, {settings['n_head']} heads, {settings['n_embd']} wide, "
          f"{settings['block_size']} context, batch {settings['batch_size']}")
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    fast_matmuls(device)                                 # the peak in the precision the rows train in
    peak, size = training.matmul_peak(device, dtype)
    tf32 = " (TF32)" if device.type == "cuda" and args.dtype == "float32" else ""
    print(f"{args.dtype}{tf32} matmul peak (best size {size}², median of 5): {peak / 1e9:,.1f} GFLOP/s")
    print(f"tokens/s: median of {args.windows} interleaved windows × {args.iters} steps, after {args.warmup} "
          "warm-up steps\n", flush=True)
    modes = ["none"] + ([args.compile] if args.compile != "none" else [])
    results = training.bench(rows, train_cfg, modes, args.seeds, args.iters, args.windows, args.warmup)
    print(training.format_bench(results, peak))
    print("\n× ref: against the plain reference, eager; × same: against the reference in the same mode. "
          "MFU = (6 · matmul params + 12 · layers · width · context) · tokens/s ÷ the peak above")
