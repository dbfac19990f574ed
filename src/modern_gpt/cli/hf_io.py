"""`modern-gpt export RUN_DIR OUT_DIR` and `modern-gpt import HF_DIR`: the Hugging Face bridge.

export writes a run's weights as a GPT-2, Llama, Mistral or Qwen3 folder (config.json + model.safetensors,
and the tokenizer where there is one); import reads such a folder (or one Hugging Face saved) back
and prints the ModelConfig it resolves to. Errors are ConfigError / DataError: one line each.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ..core.errors import DataError
from .support.run_folder import check_run


def add_parsers(sub) -> None:
    """Add the export and import subcommands to the main CLI's subparsers."""
    e = sub.add_parser("export", help="write a run's model as a Hugging Face folder (GPT-2, Llama, Mistral or Qwen3)")
    e.add_argument("run_dir", metavar="RUN_DIR", help="a run folder: data/runs/<slug>/<seed>/ (model.pt + run.json)")
    e.add_argument("out_dir", metavar="OUT_DIR", help="the folder to write config.json and model.safetensors into")
    e.add_argument("--tokenizer", metavar="PATH",
                   help="the pipeline's tokenizer file (default: data/tokenized/tokenizer.json next to the runs)")
    e.add_argument("--force", action="store_true",
                   help="write into a folder that already holds files, replacing those of the same names")
    e.set_defaults(func=cmd_export)

    i = sub.add_parser("import", help="read a Hugging Face GPT-2, Llama, Mistral or Qwen3 folder and print its config")
    i.add_argument("hf_dir", metavar="HF_DIR", help="a folder with config.json and the weights")
    i.add_argument("--approximate-gelu", action="store_true",
                   help="accept GPT-2's tanh GELU ('gelu_new') and run it as exact GELU (logits differ slightly)")
    i.set_defaults(func=cmd_import)


def quiet() -> None:
    """No transformers progress bars: the CLI prints its own lines."""
    try:
        from transformers.utils import logging
        logging.disable_progress_bar()
    except ImportError:                                 # the bridge itself says what is missing
        pass


def cmd_export(args: argparse.Namespace) -> None:
    from ..hf.folder import export
    check_run(args.run_dir)
    quiet()
    result = export(args.run_dir, args.out_dir, tokenizer=args.tokenizer, force=args.force)
    print(f"exported {args.run_dir} as {result.hf_class} to {result.out_dir}")
    print(f"wrote: {', '.join(result.files)}")
    print(result.tokenizer_note)


def cmd_import(args: argparse.Namespace) -> None:
    from ..hf.config_map import arch_of
    from ..hf.folder import import_folder, read_hf_config
    if not Path(args.hf_dir).is_dir():
        raise DataError(f"{args.hf_dir}: no such folder (import reads a Hugging Face model folder: config.json "
                        "and the weights; `modern-gpt export RUN_DIR OUT_DIR` writes one)")
    quiet()
    name = arch_of(read_hf_config(args.hf_dir))
    cfg, model = import_folder(args.hf_dir, approximate_gelu=getattr(args, "approximate_gelu", False))
    print(f"{args.hf_dir}: {name}, {model.num_params():,} parameters")
    width = max(len(f.name) for f in dataclasses.fields(cfg))
    for f in dataclasses.fields(cfg):
        print(f"  {f.name:<{width}}  {getattr(cfg, f.name)!r}")
    print(f"  {'(head_dim)':<{width}}  {cfg.head_dim}")
    print(f"  {'(mlp hidden)':<{width}}  {cfg.hidden}")
