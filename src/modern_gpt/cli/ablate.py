"""`modern-gpt ablate` (the book's `python modern_gpt.py --ablate`): train each ladder row on each seed and print
one table.

Verdicts come from the same rule and the same function as the report's (stats.paired.compare). The parser needs
no model library: torch, training and the report's libraries are imported by the functions that use them, so
`modern-gpt --help` starts none of them (tests/test_cli.py checks sys.modules).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING, Callable

from ..config import TrainConfig
from ..config.choices import COMPILE_MODES, DTYPES
from ..config.sections import PARSERS, GenerateConfig
from ..core.errors import ConfigError
from ..config.params import project_params, sections
from ..pipeline.ladder import Row
from ..pipeline.ladder_params import parse
from .support.profiles import SMOKE, add_shape_args, cpu, rows_for, settings_from

if TYPE_CHECKING:
    import torch

    from ..reporting.results import RowResult

# --smoke: the toy corpus and profiles.SMOKE; otherwise the pipeline's corpus and profiles.cpu()
SMOKE_CORPUS_CHARS = 2400


def add_parsers(sub) -> None:
    a = sub.add_parser("ablate", help="train every ladder row and print the ablation table")
    a.add_argument("--smoke", action="store_true", help="a tiny generated corpus and a tiny model: seconds on a CPU")
    a.add_argument("--corpus", help="a UTF-8 text file or a folder of .txt files (default: the generated Sanskrit)")
    a.add_argument("--iters", type=int, help="training steps per row")
    a.add_argument("--lr", type=float, help="peak learning rate")
    a.add_argument("--seeds", type=int, default=1, help="seeds per row; >1 adds mean±range and a spread verdict")
    a.add_argument("--val-fraction", type=float, default=0.1, help="the last fraction of the corpus validates")
    a.add_argument("--beyond", action="store_true",
                   help="the second ladder (params.yaml's beyond:, your own changes' rows included) from the book's "
                        "design, in place of the main ladder")
    a.add_argument("--catalogue", action="store_true",
                   help="the catalogue (params.yaml's catalogue:): each change alone on the book's design, each row "
                        "against row 0, in place of the main ladder")
    a.add_argument("--batch-seeds", action="store_true",
                   help="train a row's seeds as one batched model: the same numbers; faster where one small model "
                        "leaves the device idle (a GPU), slower on a CPU (docs/speed.md)")
    add_shape_args(a, "--smoke's tiny model, else params.yaml's model: shape and train.batch_size")
    a.add_argument("--compile", choices=COMPILE_MODES, default="none",
                   help="torch.compile mode, or none for eager (default none; a cold compile takes a minute)")
    a.add_argument("--dtype", choices=DTYPES, default="float32", help="bfloat16: matmuls under bf16 autocast")
    a.set_defaults(func=cmd_ablate)


def bundled_corpus(smoke: bool) -> str:
    """The generated Sanskrit corpus: 2,400 characters for --smoke, else the pipeline's (params.yaml's generate:)."""
    from ..corpus.sanskrit import generate
    if smoke:
        return generate(SMOKE_CORPUS_CHARS, seed=0)
    g: GenerateConfig = PARSERS["generate"](sections(project_params(), ("generate",))["generate"], "generate")
    return generate(g.chars, seed=g.seed)


def generated_floor() -> float:
    """The generated corpus's loss floor, nats per character: its process's entropy over 5,000 sentences (0.3 s;
    the generate stage uses 50,000 for the report, standard error 0.0005 against 0.0015 here)."""
    from ..corpus.sanskrit import entropy_per_char
    return entropy_per_char(5000, seed=1)[0]


def second_ladder_train(row: Row, given: TrainConfig) -> dict:
    """What a second-ladder row switches of params.yaml's train: (its optimiser: Muon), for the quick recipe."""
    return {k: v for k, v in row.train.to_dict().items() if getattr(given, k) != v}


def run_ladder(rows: list[Row], train_cfg: TrainConfig, train_data: torch.Tensor, val_data: torch.Tensor,
               seeds: list[int], val_chars: int, progress: bool = True,
               on_row: Callable[[RowResult], None] | None = None, batch_seeds: bool = False,
               star: bool = False) -> list[RowResult]:
    """Every row on every seed, each row compared with the one above it (star: with row 0, the catalogue's way).
    batch_seeds: a row's seeds train as one batched model (training.batched), the same numbers to rounding."""
    from ..reporting.results import row_result
    from ..training.batched import run_seeds
    from ..training.single import run
    results: list[RowResult] = []
    given = parse(project_params()).train if any(row.train for row in rows) else None    # read once, not per row
    for row in rows:
        row_train = train_cfg if row.train is None else dataclasses.replace(train_cfg,
                                                                            **second_ladder_train(row, given))
        if batch_seeds:
            runs = [r for _, r in run_seeds(row.slug, row.config, row_train, train_data, val_data, seeds,
                                            val_chars=val_chars, label=row.label, progress=progress)]
        else:
            runs = [run(row.slug, row.config, row_train, train_data, val_data, seed, val_chars=val_chars,
                        label=f"{row.label} (seed {seed})" if len(seeds) > 1 else row.label, progress=progress)[1]
                    for seed in seeds]
        ref = (results[0] if star else results[-1]) if results else None
        results.append(row_result(row.slug, row.label, runs, ref))
        if on_row is not None:
            on_row(results[-1])
    return results


def cmd_ablate(args: argparse.Namespace) -> None:
    import torch

    from ..corpus.reading import read_corpus, split_text
    from ..corpus.tokenizers import SymbolTokenizer
    from ..reporting.findings import quick_warnings
    from ..reporting.settings import Settings
    from ..reporting.table import quick_header, quick_line
    from ..training.batches import check_length
    from ..training.loop import resolve_device
    settings = settings_from(args, SMOKE if args.smoke else cpu())
    if args.seeds < 1:
        raise ConfigError(f"--seeds={args.seeds}: must be at least 1")
    text = read_corpus(args.corpus) if args.corpus else bundled_corpus(args.smoke)
    train_text, val_text = split_text(text, args.val_fraction)
    tok = SymbolTokenizer.fit({"kind": "char"}, train_text, val_text)
    train_data, val_data = torch.tensor(tok.encode(train_text)), torch.tensor(tok.encode(val_text))
    if args.beyond and args.catalogue:
        raise ConfigError("--beyond and --catalogue: one ladder at a time (the second ladder, or the catalogue)")
    rows = rows_for(settings, tok.vocab_size, args.n_kv_head, beyond=args.beyond, catalogue=args.catalogue)
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
    results = run_ladder(rows, train_cfg, train_data, val_data, list(range(args.seeds)),
                         val_chars=len(val_text), progress=sys.stderr.isatty(),
                         on_row=lambda r: print(quick_line(r), flush=True), batch_seeds=args.batch_seeds,
                         star=args.catalogue)
    print()
    settings = Settings(floor=None if args.corpus else generated_floor())   # params.yaml's report thresholds
    for line in quick_warnings(results, settings, train_chars=len(train_text)):
        print(line)
