"""`modern-gpt explain CONFIG.json` and `modern-gpt import-config CONFIG.json [--write params.yaml]`; either takes a
model's folder for its config.json."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import yaml
from ruamel.yaml import YAML

from ..core.errors import ConfigError, DataError
from ..core.files import write_bytes
from ..config.params import read_yaml
from ..hf.config_json import read_config
from ..hf.explain_config import explain
from ..hf.import_config import model_section
from ..serving.kv_cache import DTYPE_BYTES


def add_parsers(sub) -> None:
    e = sub.add_parser("explain", help="every field of a Hugging Face config.json, parameters and KV cache")
    e.add_argument("config", metavar="CONFIG.json", help="a model's config.json, or the folder that holds it")
    e.add_argument("--context", type=int, help="tokens per sequence (default: the model's max_position_embeddings)")
    e.add_argument("--batch", type=int, default=1, help="concurrent sequences (default 1)")
    e.add_argument("--dtype", default="bf16", choices=tuple(DTYPE_BYTES), help="KV cache dtype (default bf16)")
    e.set_defaults(func=cmd_explain)

    i = sub.add_parser("import-config", help="a params.yaml model: section with that model's flags at a toy size")
    i.add_argument("config", metavar="CONFIG.json", help="a model's config.json, or the folder that holds it")
    i.add_argument("--n-layer", type=int, help="transformer blocks (default: params.yaml's model.n_layer)")
    i.add_argument("--n-embd", type=int, help="residual width (default: params.yaml's model.n_embd)")
    i.add_argument("--n-head", type=int, help="query heads (default: params.yaml's model.n_head)")
    i.add_argument("--block-size", type=int, help="context length (default: params.yaml's model.block_size)")
    i.add_argument("--write", metavar="PARAMS.yaml", help="replace this file's model: section, keep the rest")
    i.set_defaults(func=cmd_import_config)


def config_file(path: str | Path) -> Path:
    """CONFIG.json as given, or a folder's config.json (a Hugging Face model folder); a folder without one is a
    one-line error."""
    path = Path(path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise DataError(f"{path}: a folder without config.json (give a model's config.json, or the folder "
                            "that holds it)")
        return path / "config.json"
    return path


def cmd_explain(args: argparse.Namespace) -> None:
    if args.context is not None and args.context < 1:
        raise ConfigError(f"--context={args.context}: must be a positive integer")
    if args.batch < 1:
        raise ConfigError(f"--batch={args.batch}: must be a positive integer")
    print(explain(read_config(config_file(args.config)), args.context, args.batch, args.dtype))


def cmd_import_config(args: argparse.Namespace) -> None:
    section, missing = model_section(read_config(config_file(args.config)), n_layer=args.n_layer, n_embd=args.n_embd,
                                     n_head=args.n_head, block_size=args.block_size)
    notes = [f"# not modelled: {m}" for m in missing] or ["# every feature of this model is modelled"]
    if args.write is None:
        print(yaml.safe_dump({"model": section}, sort_keys=False).rstrip())
        print("\n".join(notes))
        return
    path = Path(args.write)
    params = read_yaml(path)                    # everything is checked before the file is touched
    if not isinstance(params, dict):
        raise ConfigError(f"{path}: must be a mapping of sections")
    # round-trip YAML (ruamel, as DVC's own `-S` uses): the file's comments and order survive
    rt = YAML()
    doc = rt.load(path.read_text(encoding="utf-8"))
    model = doc.setdefault("model", {})
    for key in [k for k in model if k not in section]:
        del model[key]
    for key, value in section.items():
        model[key] = value
    out = io.StringIO()
    rt.dump(doc, out)
    write_bytes(path, out.getvalue().encode("utf-8"))
    print(f"{path}: model section replaced from {args.config}")
    print("\n".join(notes))
