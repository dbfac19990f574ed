"""Incremental decoding: a prompt prefilled into the KV cache, then one token at a time, gives the logits of a
full recompute at every step, for every ladder row, both norm placements, and NoPE."""

import dataclasses
from pathlib import Path

import pytest
import torch

from modern_gpt.nn import GPT
from modern_gpt.nn.model import KVCache
from modern_gpt.pipeline.params import load

ROOT = Path(__file__).resolve().parents[1]
ROWS = load(ROOT / "params.yaml").rows(vocab_size=23)
CASES = [(r.label, dataclasses.replace(r.config, block_size=24, norm_placement=placement))
         for r in ROWS for placement in ("pre", "post")]
CASES.append(("NoPE", dataclasses.replace(ROWS[-1].config, block_size=24, pos="none")))


@pytest.mark.parametrize("label, cfg", CASES, ids=[f"{label}-{cfg.norm_placement}" for label, cfg in CASES])
def test_cached_decoding_gives_the_logits_of_a_full_recompute_at_every_step(label, cfg):
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    seq = torch.randint(0, cfg.vocab_size, (2, cfg.block_size), generator=torch.Generator().manual_seed(1))
    prompt = 5
    cache = KVCache(cfg, batch=2)
    with torch.no_grad():
        logits, _ = model(seq[:, :prompt], cache=cache)                              # prefill
        full, _ = model(seq[:, :prompt])
        torch.testing.assert_close(logits, full, atol=1e-5, rtol=0)
        for t in range(prompt, cfg.block_size):                                      # then one token at a time
            step, _ = model(seq[:, t:t + 1], cache=cache)
            full, _ = model(seq[:, :t + 1])
            torch.testing.assert_close(step[:, 0], full[:, -1], atol=1e-5, rtol=0)
    assert cache.length == cfg.block_size


def test_a_chunk_after_the_prompt_is_masked_causally():
    cfg = dataclasses.replace(ROWS[-1].config, block_size=16)
    model = GPT(cfg).eval()
    seq = torch.randint(0, cfg.vocab_size, (1, 16), generator=torch.Generator().manual_seed(2))
    cache = KVCache(cfg, batch=1)
    with torch.no_grad():
        model(seq[:, :6], cache=cache)
        chunk, _ = model(seq[:, 6:11], cache=cache)                                  # five tokens at once
        full, _ = model(seq[:, :11])
    torch.testing.assert_close(chunk, full[:, 6:11], atol=1e-5, rtol=0)


def test_the_cache_stores_only_the_kv_heads():
    gqa = ROWS[-1].config                                   # n_kv_head 2 of 4 heads
    mha = dataclasses.replace(gqa, n_kv_head=gqa.n_head)
    for cfg in (gqa, mha):
        cache = KVCache(cfg, batch=3)
        assert cache.kv.shape == (cfg.n_layer, 2, 3, cfg.n_kv_head, cfg.block_size, cfg.head_dim)
        assert cache.nbytes == 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim * cfg.block_size * 3 * 4
    assert KVCache(mha, 1).nbytes == 2 * KVCache(gqa, 1).nbytes


def test_the_cache_refuses_to_run_past_the_context():
    cfg = dataclasses.replace(ROWS[0].config, block_size=8)
    model, cache = GPT(cfg).eval(), KVCache(cfg, batch=1)
    with torch.no_grad():
        model(torch.zeros(1, 6, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError, match="sequence length 9 exceeds block_size=8"):
            model(torch.zeros(1, 3, dtype=torch.long), cache=cache)
