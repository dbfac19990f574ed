"""Generation with the KV cache, and what it costs: a prompt prefilled, then one token at a time.

`generate` samples (temperature, top-k, a seeded generator of its own); `timings` measures prefill and decode
tokens per second, with the cache or by recomputing the whole sequence at every step (what the cache saves).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from ..config.sections import ServeConfig
from ..core.errors import ConfigError
from ..records.stages import ServeRecord
from ..nn import GPT
from ..nn.model import KVCache


def check_prompt(model: GPT, prompt: torch.Tensor) -> None:
    if prompt.dim() != 2 or prompt.size(1) < 1:
        raise ConfigError(f"prompt: must hold at least one token per sequence, got shape {tuple(prompt.shape)}")
    if prompt.size(1) > model.cfg.block_size:
        raise ConfigError(f"prompt: {prompt.size(1)} tokens, longer than the model's context "
                          f"(block_size={model.cfg.block_size})")


def pick(logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator) -> torch.Tensor:
    """The next token of each sequence from its last logits (B, V): greedy at temperature 0, else sampled from
    softmax(logits / temperature), restricted to the top_k most likely tokens when top_k is set."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs.cpu(), 1, generator=generator).to(logits.device)


@torch.no_grad()
def generate(model: GPT, prompt: torch.Tensor, new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, seed: int = 0, cache: bool = True) -> torch.Tensor:
    """prompt (B, P) followed by up to `new_tokens` sampled tokens, stopping at the context (block_size).
    cache=False recomputes the whole sequence at every step: the same tokens, slower."""
    check_prompt(model, prompt)
    if temperature < 0 or (top_k is not None and top_k < 1) or new_tokens < 0:
        raise ConfigError(f"temperature={temperature}, top_k={top_k}, new_tokens={new_tokens}: need temperature "
                          ">= 0, top_k >= 1 (or none), new_tokens >= 0")
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    steps = min(new_tokens, model.cfg.block_size - prompt.size(1))
    dtype = next(model.parameters()).dtype                 # the cache holds what the layers compute
    kv = KVCache(model.cfg, prompt.size(0), prompt.device, dtype) if cache else None
    seq = prompt
    logits = model(prompt, cache=kv)[0][:, -1]
    for i in range(steps):
        token = pick(logits, temperature, top_k, generator)
        seq = torch.cat([seq, token], dim=1)
        if i + 1 < steps:
            logits = (model(token, cache=kv) if cache else model(seq))[0][:, -1]
    return seq


@dataclass(frozen=True)
class Timing:
    prefill_tokens_per_sec: float   # the prompt's tokens (× batch) per second of the prefill forward pass
    decode_tokens_per_sec: float    # new tokens (× batch) per second, one forward pass per token
    repeats: int


@torch.no_grad()
def timings(model: GPT, batch: int, prompt_len: int, new_tokens: int, *, repeats: int = 5, cache: bool = True,
            device: torch.device | str = "cpu") -> Timing:
    """Median prefill and decode throughput over `repeats` (after one untimed warm-up): greedy decoding of
    `new_tokens` after a random prompt of `prompt_len` tokens, `batch` sequences at once."""
    if prompt_len + new_tokens > model.cfg.block_size:
        raise ConfigError(f"prompt {prompt_len} + new {new_tokens} tokens: more than the context "
                          f"(block_size={model.cfg.block_size})")
    model.eval()
    prompt = torch.randint(0, model.cfg.vocab_size, (batch, prompt_len), generator=torch.Generator().manual_seed(0))
    prompt = prompt.to(device)
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)

    def once() -> tuple[float, float]:
        kv = KVCache(model.cfg, batch, device, next(model.parameters()).dtype) if cache else None
        sync()
        t0 = time.perf_counter()
        logits = model(prompt, cache=kv)[0][:, -1]
        sync()
        t1 = time.perf_counter()
        seq = prompt
        for _ in range(new_tokens):
            token = logits.argmax(-1, keepdim=True)
            seq = torch.cat([seq, token], dim=1)
            logits = (model(token, cache=kv) if cache else model(seq))[0][:, -1]
        sync()
        return t1 - t0, time.perf_counter() - t1

    once()
    runs = [once() for _ in range(repeats)]
    prefill = statistics.median(r[0] for r in runs)
    decode = statistics.median(r[1] for r in runs)
    return Timing(batch * prompt_len / prefill, batch * new_tokens / decode if new_tokens else 0.0, repeats)


# ----------------------------------------------------------------------------------------- one row's serving

def serve_row(model: GPT, prompt: list[int], s: ServeConfig, device: torch.device | str = "cpu") -> dict:
    """What one trained model costs to serve, and what it writes: a sample after `prompt` (sampled with the
    settings `s`), the KV cache's bytes (computed, sliding-window layers capped at their window, and the cache
    tensor's real size: the two must agree), the weights' bytes, and
    prefill / decode tokens per second (median of s.repeats, s.batch sequences, greedy)."""
    from ..changes import decode_numbers
    from .kv_cache import kv_cache
    cfg = model.cfg
    if len(prompt) + 1 > cfg.block_size:
        raise ConfigError(f"serve.prompt_tokens={len(prompt)}: leaves no room to generate in the context "
                          f"(block_size={cfg.block_size})")
    new = min(s.new_tokens, cfg.block_size - len(prompt))
    out = generate(model, torch.tensor([prompt], device=device), new, temperature=s.temperature,
                   top_k=s.top_k or None, seed=s.seed)
    computed = kv_cache(cfg.n_layer, cfg.n_kv_head, cfg.head_dim, "float32", cfg.block_size, windows=cfg.windows,
                        state_numbers=decode_numbers(cfg))     # a change's decoding state counted beside K and V
    real = KVCache(cfg, batch=1, device=device)
    if real.nbytes != computed.bytes_per_sequence:            # the arithmetic and the tensor must agree
        raise AssertionError(f"KV cache: computed {computed.bytes_per_sequence} bytes, tensor {real.nbytes}")
    t = timings(model, s.batch, len(prompt), new, repeats=s.repeats, device=device)
    return {
        "sample": out[0, len(prompt):].tolist(),
        "n_kv_head": cfg.n_kv_head, "context": cfg.block_size, "windows": list(cfg.windows),
        "kv_bytes_per_token": computed.bytes_per_token, "kv_bytes_per_sequence": computed.bytes_per_sequence,
        "kv_bytes_tensor": real.nbytes,
        "weights_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "prefill_tokens_per_sec": round(t.prefill_tokens_per_sec, 1),
        "decode_tokens_per_sec": round(t.decode_tokens_per_sec, 1),
        "new_tokens": new,
    }


def serve_record(slug: str, seed: int, model: GPT, tokenizer, val_tokens: torch.Tensor, s: ServeConfig) -> ServeRecord:
    """The serve stage's record of one row: serve_row's figures for the run of `seed`, prompted with the start
    of the validation text, with the texts decoded and the machine that timed it."""
    import platform

    from ..training.single import machine
    prompt = val_tokens[:s.prompt_tokens].tolist()
    row = serve_row(model, prompt, s)
    return ServeRecord(slug=slug, seed=seed, settings=s, prompt=tuple(prompt), prompt_text=tokenizer.decode(prompt),
                       **{**row, "sample": tuple(row["sample"]), "windows": tuple(row["windows"])},
                       sample_text=tokenizer.decode(row["sample"]), machine=machine("cpu"), device="cpu",
                       threads=torch.get_num_threads(), torch=torch.__version__, python=platform.python_version())
