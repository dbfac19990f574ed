"""A Hugging Face model folder, written and read: config.json, model.safetensors and the tokenizer's files.

`export` writes a run (or a GPT) as such a folder through transformers' save_pretrained, staging the files beside
the target so a failure leaves it as it was; `write_tokenizer` adds the pipeline's tokenizer (HF's tokenizer.json
for BPE, this project's vocab.json for char and akshara, which no HF class represents). `import_folder` reads a
folder back, ours or one transformers saved, refusing a config our model cannot compute before any weight is read.
transformers and safetensors are imported only when a function needs them.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..config import ModelConfig
from ..core.errors import DataError
from ..nn import GPT
from ..nn.checkpoint import load_run
from ..config.hf_class import hf_class
from .config_json import read_config
from .config_map import arch_of, config_from_hf, require_transformers
from .models import from_hf, to_hf


@dataclass
class Exported:
    """What export wrote: the folder, the HF class, the files (sorted) and the line saying how to load the tokenizer."""
    out_dir: Path
    hf_class: str
    files: list[str] = field(default_factory=list)
    tokenizer_note: str = ""


def default_tokenizer(run_dir: Path) -> Path | None:
    """The pipeline's tokenizer for a run folder data/runs/<slug>/<seed>/: data/tokenized/tokenizer.json."""
    p = run_dir.resolve().parents[2] / "tokenized" / "tokenizer.json" if len(run_dir.resolve().parents) > 2 else None
    return p if p is not None and p.is_file() else None


def write_tokenizer(tokenizer_path: str | Path, out_dir: Path, vocab_size: int,
                    final_dir: Path | None = None) -> tuple[list[str], str]:
    """Tokenizer files for the export folder, and a line for the user. BPE: HF tokenizers' tokenizer.json;
    char / akshara: our own small vocab file (HF has no class for one token per symbol / syllable), and the line
    gives the call that loads it from final_dir (where the files end up; out_dir by default)."""
    path = Path(tokenizer_path)
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        kind = spec["kind"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{path}: not a tokenizer file of this project ({type(e).__name__}: {e})") from None
    if kind == "bpe":
        tok = spec.get("tokenizer")
        if not isinstance(tok, dict):
            raise DataError(f"{path}: kind 'bpe' without a 'tokenizer' object")
        size = len(tok.get("model", {}).get("vocab", {})) + len(tok.get("added_tokens") or [])
        if size > vocab_size:
            raise DataError(f"{path}: {size} tokens, but the model has vocab_size={vocab_size}")
        (out_dir / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
        (out_dir / "tokenizer_config.json").write_text(
            json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}, indent=1) + "\n", encoding="utf-8")
        return ["tokenizer.json", "tokenizer_config.json"], \
            "tokenizer: byte-level BPE written as tokenizer.json (AutoTokenizer loads it)"
    if kind in ("char", "akshara"):
        symbols = spec.get("symbols")
        if not isinstance(symbols, list):
            raise DataError(f"{path}: kind {kind!r} without a 'symbols' list")
        if len(symbols) != vocab_size:
            raise DataError(f"{path}: {len(symbols)} symbols, but the model has vocab_size={vocab_size}")
        (out_dir / "vocab.json").write_text(
            json.dumps({"kind": kind, "symbols": symbols}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        unit = "Unicode code point" if kind == "char" else "Devanagari syllable (akshara)"
        vocab = str((final_dir or out_dir) / "vocab.json")
        return ["vocab.json"], (f"tokenizer: {kind!r} (one token per {unit}) written as vocab.json; Hugging Face has "
                                "no tokenizer class for it, so encode with this project's: `import json; from "
                                "modern_gpt.corpus.tokenizers import load_tokenizer; tok = load_tokenizer(json.load("
                                f"open({vocab!r}, encoding='utf-8')))`, then tok.encode(text)")
    raise DataError(f"{path}: tokenizer kind {kind!r} is not one of char, akshara, bpe")


def export(source: str | Path | GPT, out_dir: str | Path, tokenizer: str | Path | None = None,
           attn_implementation: str | None = None, force: bool = False) -> Exported:
    """Write config.json + model.safetensors (and tokenizer files when there is one) into out_dir.

    source: a GPT, or a run folder (its tokenizer defaults to the pipeline's data/tokenized/tokenizer.json).
    A folder that already holds files is refused unless force; then files of the same names are replaced and
    the others kept. Everything is written to a folder beside out_dir first, so a failure leaves out_dir as it was.
    """
    if isinstance(source, GPT):
        model, tok_path = source, tokenizer
    else:
        model = load_run(source)
        tok_path = tokenizer if tokenizer is not None else default_tokenizer(Path(source))
    name = hf_class(model.cfg)                          # refuse before writing anything
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"{out}: exists and is not a folder")
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if held and not force:
        raise DataError(f"{out}: not empty ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''}); export into "
                        "an empty or new folder, or pass --force to replace files of the same names")
    hf = to_hf(model, attn_implementation)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        staging = Path(tmp)
        hf.save_pretrained(staging)
        note = "tokenizer: none found (pass --tokenizer PATH); only the weights were written"
        if tok_path is not None:
            _, note = write_tokenizer(tok_path, staging, model.cfg.vocab_size, out)
        out.mkdir(exist_ok=True)
        written = sorted(p.name for p in staging.iterdir())
        for file in written:
            os.replace(staging / file, out / file)
    return Exported(out, name, written, note)


def read_hf_config(hf_dir: str | Path) -> dict:
    """A model folder's config.json as a mapping; a folder without one is a one-line DataError."""
    path = Path(hf_dir) / "config.json"
    if not path.is_file():
        raise DataError(f"{path}: not found (a Hugging Face model folder has config.json)")
    return read_config(path)                            # the one reader's, as explain reads a file


def import_folder(hf_dir: str | Path, approximate_gelu: bool = False,
                  dtype: torch.dtype | None = None) -> tuple[ModelConfig, GPT]:
    """Our (ModelConfig, GPT) from a folder holding an HF GPT-2, Llama, Mistral or Qwen3 (ours or HF's own)."""
    transformers = require_transformers()
    conf = read_hf_config(hf_dir)
    name = arch_of(conf)
    cfg = config_from_hf(conf, approximate_gelu)         # refuse before reading any weights
    kw = {"dtype": dtype} if dtype is not None else {}
    try:
        hf = getattr(transformers, name).from_pretrained(str(hf_dir), **kw)
    except (OSError, ValueError) as e:
        raise DataError(f"{hf_dir}: {name} weights not loadable ({str(e).splitlines()[0]})") from None
    model = from_hf(hf, approximate_gelu)
    return cfg, model
