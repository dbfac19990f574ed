"""`modern-gpt sample RUN_DIR`: text from a trained run, generated with the KV cache and decoded by the run's
own tokenizer."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..config.sections import PARSERS, ServeConfig
from ..core.errors import ConfigError, DataError
from ..core.files import read_json
from ..config.params import project_params, sections
from .support.run_folder import check_run


def add_parsers(sub) -> None:
    serve: ServeConfig = PARSERS["serve"](sections(project_params(), ("serve",))["serve"], "serve")   # its defaults
    s = sub.add_parser("sample", help="generate text from a trained run (KV cache; temperature, top-k, a seed)")
    s.add_argument("run_dir", metavar="RUN_DIR", help="a run folder: data/runs/<slug>/<seed>/ (model.pt + run.json)")
    s.add_argument("--data", default="data/tokenized",
                   help="the tokenized corpus: its tokenizer and validation text (default data/tokenized)")
    s.add_argument("--prompt", help="the text to continue (default: the start of the validation text)")
    s.add_argument("--prompt-tokens", type=int, default=serve.prompt_tokens,
                   help="without --prompt: this many tokens of the validation text "
                        f"(default: params.yaml's serve.prompt_tokens, now {serve.prompt_tokens})")
    s.add_argument("--tokens", type=int, default=256, help="new tokens, at most up to the context (default 256)")
    s.add_argument("--temperature", type=float, default=serve.temperature,
                   help=f"0: greedy (default: params.yaml's serve.temperature, now {serve.temperature})")
    s.add_argument("--top-k", type=int, default=serve.top_k,
                   help=f"sample among the k most likely tokens; 0: all (default: params.yaml's serve.top_k, "
                        f"now {serve.top_k})")
    s.add_argument("--seed", type=int, default=serve.seed,
                   help=f"the sampler's seed (default: params.yaml's serve.seed, now {serve.seed})")
    s.set_defaults(func=cmd_sample)


def prompt_ids(tokenizer, data: Path, prompt: str | None, prompt_tokens: int) -> list[int]:
    """The prompt as token ids: the given text (characters outside the vocabulary are a one-line error naming
    them), or the first `prompt_tokens` tokens of the validation text."""
    if prompt is not None:
        if not prompt:
            raise ConfigError("--prompt: empty; give some text, or leave it out for the validation text's start")
        try:
            return tokenizer.encode(prompt)
        except DataError as e:
            raise DataError(f"--prompt: {str(e).removeprefix('text: ')}") from None
    if prompt_tokens < 1:
        raise ConfigError(f"--prompt-tokens={prompt_tokens}: must be at least 1")
    from ..training.batches import load_tokens
    return load_tokens(data / "val.bin")[:prompt_tokens].tolist()


@dataclass(frozen=True)
class SampledText:
    prompt: str
    continuation: str
    prompt_tokens: int
    new_tokens: int
    asked: int              # --tokens
    context: int            # the model's block_size: generation stops there


def sample_text(run_dir: str | Path, data: str | Path = "data/tokenized", prompt: str | None = None, *,
                prompt_tokens: int, tokens: int, temperature: float, top_k: int | None, seed: int) -> SampledText:
    """The prompt and its continuation as text, with their token counts (the defaults: `modern-gpt sample`'s,
    params.yaml's serve: section)."""
    import torch

    from ..corpus.tokenizers import load_tokenizer
    from ..nn.checkpoint import load_run
    from ..serving.generate import generate
    data = Path(data)
    check_run(run_dir)
    if not (data / "tokenizer.json").is_file():
        raise DataError(f"{data / 'tokenizer.json'}: not found (--data: the folder the tokenize stage writes; "
                        "`dvc repro tokenize` writes it, `dvc pull tokenize` fetches it)")
    model = load_run(run_dir)
    tokenizer = load_tokenizer(read_json(data / "tokenizer.json"))
    if tokenizer.vocab_size != model.cfg.vocab_size:
        raise DataError(f"{data / 'tokenizer.json'}: {tokenizer.vocab_size} tokens, but the run's model has "
                        f"vocab_size={model.cfg.vocab_size} (another corpus or tokenizer)")
    ids = prompt_ids(tokenizer, data, prompt, prompt_tokens)
    out = generate(model, torch.tensor([ids]), tokens, temperature=temperature, top_k=top_k or None, seed=seed)
    new = out[0, len(ids):].tolist()
    return SampledText(tokenizer.decode(ids), tokenizer.decode(new), len(ids), len(new), tokens, model.cfg.block_size)


def check_settings(args: argparse.Namespace) -> None:
    """Each bad setting on its own line, before the run is loaded (generate() would name them all at once)."""
    if args.tokens < 0:
        raise ConfigError(f"--tokens={args.tokens}: must be at least 0")
    if not args.temperature >= 0:                     # NaN too
        raise ConfigError(f"--temperature={args.temperature}: must be at least 0 (0: greedy)")
    if args.top_k < 0:
        raise ConfigError(f"--top-k={args.top_k}: must be at least 0 (0: all tokens)")


def cmd_sample(args: argparse.Namespace) -> None:
    check_settings(args)
    s = sample_text(args.run_dir, args.data, args.prompt, prompt_tokens=args.prompt_tokens,
                    tokens=args.tokens, temperature=args.temperature, top_k=args.top_k, seed=args.seed)
    capped = (f"; the model's context of {s.context} tokens stops it there, short of --tokens {s.asked}"
              if s.new_tokens < s.asked else "")
    print(f"── prompt ({s.prompt_tokens} tokens) ──")
    print(s.prompt)
    print(f"── generated ({s.new_tokens} tokens{capped}) ──")
    print(s.continuation)
