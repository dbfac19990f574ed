"""`modern-gpt ablate|bench|sample|repro|shard|explain|import-config|export|import`, also `python -m modern_gpt` and the book's `python modern_gpt.py --ablate`."""

from __future__ import annotations

import argparse
import dataclasses
import sys

import torch

from ..config.sections import GenerateConfig, section
from ..core.errors import ConfigError, DataError
from ..core.params import project_params, sections
from ..corpus.reading import read_corpus, split_text
from ..corpus.tokenizers import SymbolTokenizer
from ..pipeline.ladder import Row
from ..pipeline.params import parse
from ..reporting.report import quick_header, quick_line, quick_warnings
from ..reporting.settings import Settings
from ..training.batches import check_length
from ..config import TrainConfig
from ..config.choices import COMPILE_MODES, DTYPES
from ..training.loop import fast_matmuls, resolve_device
from . import ablate, bench
from . import explain as explain_cli
from . import hf_io, repro, sample, shard
from .profiles import SHAPE, SMOKE, cpu

COMMANDS = ("ablate", "bench")

# --smoke: the toy corpus and profiles.SMOKE; otherwise the pipeline's corpus and profiles.cpu()
SMOKE_CORPUS_CHARS = 2400


class Parser(argparse.ArgumentParser):
    """One-line errors, and no abbreviated options: `--smok` is an error, not `--smoke`."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        # one line, no usage block: what was wrong and where to look
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def add_shape_args(p: argparse.ArgumentParser, defaults: str) -> None:
    g = p.add_argument_group(f"shape (defaults: {defaults})")
    g.add_argument("--n-layer", type=int, help="transformer blocks")
    g.add_argument("--n-head", type=int, help="query heads")
    g.add_argument("--n-kv-head", type=int,
                   help="key/value heads of the GQA row (default: params.yaml's model.n_kv_head)")
    g.add_argument("--n-embd", type=int, help="residual width")
    g.add_argument("--block-size", type=int, help="context length in tokens")
    g.add_argument("--batch-size", type=int, help="sequences per step")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu", help="where to train (default cpu)")


def add_speed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--compile", choices=COMPILE_MODES, default="none",
                   help="torch.compile mode, or none for eager (default none; a cold compile takes a minute)")
    p.add_argument("--dtype", choices=DTYPES, default="float32", help="bfloat16: matmuls under bf16 autocast")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="modern-gpt", description="Measure what each piece of the modern transformer buys.",
                    epilog="The book's quick command, `python modern_gpt.py --ablate --smoke`, is `modern-gpt ablate "
                           "--smoke`: --ablate and --bench are accepted as the first argument for ablate and bench. "
                           "Each command has its own --help, e.g. `modern-gpt ablate --help`.")
    sub = parser.add_subparsers(dest="command", metavar="{ablate,bench,sample,repro,shard,explain,import-config,export,import}", parser_class=Parser)

    a = sub.add_parser("ablate", help="train every ladder row and print the ablation table")
    a.add_argument("--smoke", action="store_true", help="a tiny generated corpus and a tiny model: seconds on a CPU")
    a.add_argument("--corpus", help="a UTF-8 text file or a folder of .txt files (default: the generated Sanskrit)")
    a.add_argument("--iters", type=int, help="training steps per row")
    a.add_argument("--lr", type=float, help="peak learning rate")
    a.add_argument("--seeds", type=int, default=1, help="seeds per row; >1 adds mean±range and a spread verdict")
    a.add_argument("--val-fraction", type=float, default=0.1, help="the last fraction of the corpus validates")
    a.add_argument("--batch-seeds", action="store_true",
                   help="train a row's seeds as one batched model: the same numbers; faster where one small model "
                        "leaves the device idle (a GPU), slower on a CPU (docs/speed.md)")
    add_shape_args(a, "--smoke's tiny model, else params.yaml's model: shape and train.batch_size")
    add_speed_args(a)

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
    sample.add_parsers(sub)
    shard.add_parsers(sub)
    repro.add_parsers(sub)
    explain_cli.add_parsers(sub)
    hf_io.add_parsers(sub)
    parser.commands = sub.choices                      # name → its parser: for the hint in command_hint
    return parser


def command_hint(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """An option given before any command (`modern_gpt.py --smoke`): which commands take it, as one line."""
    if not argv or not argv[0].startswith("-") or argv[0] in ("-h", "--help"):
        return None
    option = argv[0].split("=", 1)[0]
    owners = [name for name, p in parser.commands.items() if option in p._option_string_actions]
    if not owners:
        return None
    example = " or ".join(f"`modern-gpt {name} {option}`" for name in owners)
    book = " (the book's spelling: `python modern_gpt.py --ablate --smoke`)" if "ablate" in owners else ""
    return f"{option} is an option of {', '.join(owners)}, not of modern-gpt itself: {example}{book}"


def settings_from(args: argparse.Namespace, profile: dict) -> dict:
    """The profile's values, overridden by any option the user gave."""
    return {k: v if getattr(args, k, None) is None else getattr(args, k) for k, v in profile.items()}


def rows_for(settings: dict, vocab_size: int, n_kv_head: int | None) -> list[Row]:
    """params.yaml's ladder (baseline, model, flags) at the profile's shape; the GQA row's K/V heads from
    --n-kv-head when given. A null head_dim (and a null baseline n_kv_head) follows the shape, as in the pipeline."""
    p = parse(project_params())
    model = {**p.model, **{k: settings[k] for k in SHAPE}}
    if n_kv_head is not None:
        model["n_kv_head"] = n_kv_head
    return dataclasses.replace(p, model=model).rows(vocab_size)


def bundled_corpus(smoke: bool) -> str:
    """The generated Sanskrit corpus: 2,400 characters for --smoke, else the pipeline's (params.yaml's generate:)."""
    from ..corpus.sanskrit import generate
    if smoke:
        return generate(SMOKE_CORPUS_CHARS, seed=0)
    g = section(GenerateConfig, sections(project_params(), ("generate",))["generate"], "generate")
    return generate(g.chars, seed=g.seed)


def generated_floor() -> float:
    """The generated corpus's loss floor, nats per character: its process's entropy over 5,000 sentences (0.3 s;
    the generate stage uses 50,000 for the report, standard error 0.0005 against 0.0015 here)."""
    from ..corpus.sanskrit import entropy_per_char
    return entropy_per_char(5000, seed=1)[0]


def cmd_ablate(args: argparse.Namespace) -> None:
    settings = settings_from(args, SMOKE if args.smoke else cpu())
    if args.seeds < 1:
        raise ConfigError(f"--seeds={args.seeds}: must be at least 1")
    text = read_corpus(args.corpus) if args.corpus else bundled_corpus(args.smoke)
    train_text, val_text = split_text(text, args.val_fraction)
    tok = SymbolTokenizer.fit({"kind": "char"}, train_text, val_text)
    train_data, val_data = torch.tensor(tok.encode(train_text)), torch.tensor(tok.encode(val_text))
    rows = rows_for(settings, tok.vocab_size, args.n_kv_head)
    iters = settings["iters"]
    train_cfg = TrainConfig(
        iters=iters, batch_size=settings["batch_size"], lr=settings["lr"], min_lr=settings["lr"] / 10,
        warmup_iters=min(iters // 10, 100), eval_interval=max(1, iters // 10), device=args.device,
        compile=args.compile, dtype=args.dtype,
    )
    device = resolve_device(train_cfg.device)        # every check before the first line of output
    check_length("train", train_data, settings["block_size"])
    check_length("val", val_data, settings["block_size"])
    print(f"device={device} vocab={tok.vocab_size} tokens={len(train_data) + len(val_data):,}")
    print()
    print(quick_header(args.seeds), flush=True)
    # a live progress bar on a terminal; nothing extra when the output is captured
    results = ablate.run_ladder(rows, train_cfg, train_data, val_data, list(range(args.seeds)),
                                val_chars=len(val_text), progress=sys.stderr.isatty(),
                                on_row=lambda r: print(quick_line(r), flush=True), batch_seeds=args.batch_seeds)
    print()
    settings = Settings(floor=None if args.corpus else generated_floor())   # params.yaml's report thresholds
    for line in quick_warnings(results, settings, train_chars=len(train_text)):
        print(line)


def cmd_decode_bench(args: argparse.Namespace) -> None:
    try:
        contexts = sorted({int(c) for c in args.contexts.split(",")})
    except ValueError:
        raise ConfigError(f"--contexts={args.contexts!r}: give context lengths, e.g. 64,256,1024") from None
    steps = args.iters
    if contexts[0] <= steps or args.windows < 1:
        raise ConfigError(f"--contexts={args.contexts}, --iters={steps}, --windows={args.windows}: every context "
                          "must exceed --iters (the timed tokens), and --windows must be at least 1")
    settings = settings_from(args, {k: v for k, v in cpu().items() if k not in ("iters", "lr")})
    settings["block_size"] = max(contexts)
    rows = rows_for(settings, args.vocab_size, args.n_kv_head)
    rows = [rows[0], rows[-1]]
    device = resolve_device(args.device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"device={device} ({where}) torch={torch.__version__} untrained models: {settings['n_layer']} layers, "
          f"{settings['n_head']} heads, {settings['n_embd']} wide, context {max(contexts)}, batch 1")
    print(f"seconds per token: the last {steps} tokens up to each context, median of {args.windows} interleaved "
          "windows (cache and recompute alternate)\n", flush=True)
    print(bench.format_decode(bench.decode_bench(rows, contexts, steps, args.windows, device)))


def cmd_bench(args: argparse.Namespace) -> None:
    if args.decode:
        return cmd_decode_bench(args)
    settings = settings_from(args, {k: v for k, v in cpu().items() if k not in ("iters", "lr")})
    rows = rows_for(settings, args.vocab_size, args.n_kv_head)
    if args.rows:
        wanted = args.rows.split(",")
        unknown = [r for r in wanted if r not in [row.slug for row in rows]]
        if unknown:
            raise ConfigError(f"--rows: no row {', '.join(unknown)} (rows: {', '.join(row.slug for row in rows)})")
        rows = [row for row in rows if row.slug in wanted]
    for name in ("iters", "windows", "seeds"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name}={getattr(args, name)}: must be at least 1")
    train_cfg = TrainConfig(batch_size=settings["batch_size"], device=args.device, dtype=args.dtype)
    device = resolve_device(train_cfg.device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"device={device} ({where}) torch={torch.__version__} dtype={args.dtype} "
          f"shape: {settings['n_layer']} layers, {settings['n_head']} heads, {settings['n_embd']} wide, "
          f"{settings['block_size']} context, batch {settings['batch_size']}")
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    fast_matmuls(device)                                 # the peak in the precision the rows train in
    peak, size = bench.matmul_peak(device, dtype)
    tf32 = " (TF32)" if device.type == "cuda" and args.dtype == "float32" else ""
    print(f"{args.dtype}{tf32} matmul peak (best size {size}², median of 5): {peak / 1e9:,.1f} GFLOP/s")
    print(f"tokens/s: median of {args.windows} interleaved windows × {args.iters} steps, after {args.warmup} "
          "warm-up steps\n", flush=True)
    modes = ["none"] + ([args.compile] if args.compile != "none" else [])
    results = bench.bench(rows, train_cfg, modes, args.seeds, args.iters, args.windows, args.warmup)
    print(bench.format_bench(results, peak))
    print("\n× ref: against the plain reference, eager; × same: against the reference in the same mode. "
          "MFU = (6 · matmul params + 12 · layers · width · context) · tokens/s ÷ the peak above")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("--") and argv[0][2:] in COMMANDS:   # the book's `--ablate` spelling
        argv[0] = argv[0][2:]
    try:
        parser = build_parser()                      # its help shows params.yaml's values: a bad file stops here
    except ConfigError as e:
        print(f"modern-gpt: error: {e}", file=sys.stderr)
        return 2
    if hint := command_hint(parser, argv):
        print(f"modern-gpt: error: {hint}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        {"ablate": cmd_ablate, "bench": cmd_bench, **sample.COMMANDS, **shard.COMMANDS, **repro.COMMANDS, **explain_cli.COMMANDS, **hf_io.COMMANDS}[args.command](args)
    except (ConfigError, DataError) as e:
        print(f"modern-gpt: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
