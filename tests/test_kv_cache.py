"""Incremental decoding: a prompt prefilled into the KV cache, then one token at a time, gives the logits of a
full recompute at every step, for every ladder row, both norm placements, and NoPE."""

import dataclasses
from pathlib import Path

import pytest
import torch

from modern_gpt.nn import GPT
from modern_gpt.nn.model import KVCache, apply_rope
from modern_gpt.serving.generate import generate
from modern_gpt.serving.kv_cache import kv_cache
from modern_gpt.pipeline.ladder_params import read_params

ROOT = Path(__file__).resolve().parents[1]
ROWS = read_params(ROOT / "params.yaml").rows(vocab_size=23)
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
        assert [t.shape for t in cache.kv] == [(2, 3, cfg.n_kv_head, cfg.block_size, cfg.head_dim)] * cfg.n_layer
        assert cache.nbytes == 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim * cfg.block_size * 3 * 4
    assert KVCache(mha, 1).nbytes == 2 * KVCache(gqa, 1).nbytes


def test_the_cache_refuses_to_run_past_the_context():
    cfg = dataclasses.replace(ROWS[0].config, block_size=8)
    model, cache = GPT(cfg).eval(), KVCache(cfg, batch=1)
    with torch.no_grad():
        model(torch.zeros(1, 6, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError, match="sequence length 9 exceeds block_size=8"):
            model(torch.zeros(1, 3, dtype=torch.long), cache=cache)


# ----------------------------------------------------------------------------------------- sliding windows

WINDOWED = dataclasses.replace(ROWS[-1].config, block_size=24, attn_window=5, global_every=2)   # S L S L


@pytest.mark.parametrize("global_every", [2, 0])
@pytest.mark.parametrize("chunks", [[7, 1, 1, 1, 1, 1, 12], [1] * 24, [3, 9, 12], [24]])
def test_a_windowed_cache_gives_the_logits_of_a_full_recompute(global_every, chunks):
    """Prefill and decode in chunks shorter and longer than the window: the ring holds what each query sees."""
    cfg = dataclasses.replace(WINDOWED, global_every=global_every)
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    seq = torch.randint(0, cfg.vocab_size, (2, 24), generator=torch.Generator().manual_seed(3))
    cache, start = KVCache(cfg, batch=2), 0
    with torch.no_grad():
        full, _ = model(seq)
        for n in chunks:
            step, _ = model(seq[:, start:start + n], cache=cache)
            torch.testing.assert_close(step, full[:, start:start + n], atol=1e-5, rtol=0)
            start += n
    assert cache.length == 24


def test_a_sliding_window_layer_keeps_only_its_window():
    cache = KVCache(WINDOWED, batch=3)
    w, bs = WINDOWED.attn_window, WINDOWED.block_size
    assert [t.shape[3] for t in cache.kv] == [w, bs, w, bs]           # layers 1 and 3 local, 2 and 4 global
    per_token_layer = 2 * WINDOWED.n_kv_head * WINDOWED.head_dim * 4 * 3
    assert cache.nbytes == per_token_layer * (2 * w + 2 * bs)
    computed = kv_cache(WINDOWED.n_layer, WINDOWED.n_kv_head, WINDOWED.head_dim, "float32", bs, batch=3,
                        windows=WINDOWED.windows)
    assert cache.nbytes == computed.bytes_total                       # explain's arithmetic is the tensor's size


def test_the_ring_holds_the_last_window_tokens_at_slot_position_mod_window():
    cfg = dataclasses.replace(WINDOWED, global_every=0)
    model, cache = GPT(cfg).eval(), KVCache(cfg, batch=1)
    seq = torch.randint(0, cfg.vocab_size, (1, 13), generator=torch.Generator().manual_seed(4))
    keys = {}
    hook = model.blocks[0].attn.k_proj.register_forward_hook(lambda m, i, o: keys.setdefault(len(keys), o))
    with torch.no_grad():
        model(seq, cache=cache)                                       # positions 0..12 in one call
    hook.remove()
    k = keys[0].view(1, 13, cfg.n_kv_head, cfg.head_dim).transpose(1, 2)
    k = model.blocks[0].attn.k_norm(k)
    cos, sin = model.pos.rope(0, 13)
    k = apply_rope(k, cos, sin)
    ring = cache.kv[0][0]                                             # layer 1's keys: (1, kv heads, 5, hd)
    for p in range(8, 13):                                            # the last five positions, slot p mod 5
        torch.testing.assert_close(ring[:, :, p % 5], k[:, :, p])


def test_greedy_tokens_with_the_windowed_cache_equal_those_without_it_past_the_window():
    for global_every in (2, 0):
        cfg = dataclasses.replace(WINDOWED, global_every=global_every)
        torch.manual_seed(1)
        model = GPT(cfg).eval()
        with torch.no_grad():                     # large random weights: sharp logits (ties would be luck), and
            for p in model.parameters():          # tokens that change, unlike a fresh model's one repeated token
                p.normal_(0, 0.5)
        prompt = torch.randint(0, cfg.vocab_size, (2, 3), generator=torch.Generator().manual_seed(5))
        fast = generate(model, prompt, 21, temperature=0)
        slow = generate(model, prompt, 21, temperature=0, cache=False)
        assert fast.shape == (2, 24) and 21 > 4 * cfg.attn_window
        assert torch.equal(fast, slow)
        assert len(set(fast[0, 3:].tolist())) > 1                      # a sequence, not one token repeated


def test_a_changes_decoding_state_is_counted_by_the_cache_the_arithmetic_and_the_serve_record():
    """smear keeps one position of n_embd numbers per sequence besides K and V: the cache allocates it, its nbytes,
    kv_cache()'s arithmetic and serve_row's record count it, and the two agree."""
    from modern_gpt.changes import decode_numbers
    from modern_gpt.config import ModelConfig
    from modern_gpt.config.sections import ServeConfig
    from modern_gpt.nn import GPT
    from modern_gpt.serving.generate import serve_row
    from modern_gpt.serving.kv_cache import kv_cache
    cfg = ModelConfig(vocab_size=19, block_size=12, n_layer=2, n_head=4, n_kv_head=2, n_embd=16,
                      pos="rope").replace(smear=True)
    plain = KVCache(cfg.replace(smear=False), batch=3)
    cache = KVCache(cfg, batch=3)
    assert decode_numbers(cfg) == 16 and cache.held["inputs"].shape == (3, 1, 16)
    assert cache.nbytes == plain.nbytes + 3 * 16 * 4
    size = kv_cache(cfg.n_layer, cfg.n_kv_head, cfg.head_dim, "float32", cfg.block_size, batch=3,
                    state_numbers=decode_numbers(cfg))
    assert size.bytes_total == cache.nbytes and size.bytes_per_token == 2 * 2 * 2 * 4 * 4
    s = ServeConfig(prompt_tokens=3, new_tokens=4, temperature=0.0, top_k=0, seed=0, batch=1, repeats=1, run_seed=0)
    record = serve_row(GPT(cfg).eval(), [1, 2, 3], s)
    assert record["kv_bytes_tensor"] == record["kv_bytes_per_sequence"] == plain.nbytes // 3 + 16 * 4


# ----------------------------------------------------------------------------------------- the attention op's contract

class HandAttention(torch.nn.Module):
    """The `attend` slot's contract (docs/own-change.md), written out by hand: q (B, n_head, T, hd) after QK-norm and
    positions; k and v (B, n_kv_head, S, hd), query head h reading K/V head h // (n_head / n_kv_head); `causal` only
    where the keys are the queries' own positions (S == T), else `mask` (T, S), True where a query may look, or no mask
    at all (one new token after the cache: every key is an earlier one); dropout only while training."""

    def forward(self, q, k, v, mask, causal, ctx):
        group = q.size(1) // k.size(1)
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        T, S = q.size(2), k.size(2)
        if causal:
            assert mask is None and S == T
            mask = torch.ones(T, S, dtype=torch.bool).tril()
        scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
        if mask is not None:
            assert mask.shape == (T, S) and mask.dtype == torch.bool
            scores = scores.masked_fill(~mask, float("-inf"))
        return scores.softmax(-1) @ v


@pytest.mark.parametrize("global_every, chunks", [(2, [7, 1, 1, 3, 12]), (0, [1] * 6 + [18]), (2, [24])])
def test_attention_written_out_by_hand_in_the_attend_slot_gives_the_defaults_logits(global_every, chunks):
    """The book's design (GQA) with sliding-window layers: the hand-written op in every layer's slot gives the default's
    logits on the one-model path and through the cache, chunks shorter and longer than the window (the ring)."""
    cfg = dataclasses.replace(WINDOWED, global_every=global_every)
    assert cfg.n_kv_head < cfg.n_head and cfg.attn_window < 24
    models = []
    for hand in (False, True):
        torch.manual_seed(0)
        models.append(GPT(cfg).eval())
        for block in models[-1].blocks if hand else ():
            block.attn.attend = HandAttention()
    seq = torch.randint(0, cfg.vocab_size, (2, 24), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        full = [m(seq)[0] for m in models]
        torch.testing.assert_close(full[1], full[0], atol=1e-6, rtol=0)
        caches, start = [KVCache(cfg, batch=2) for _ in models], 0
        for n in chunks:
            steps = [m(seq[:, start:start + n], cache=c)[0] for m, c in zip(models, caches)]
            torch.testing.assert_close(steps[1], steps[0], atol=1e-6, rtol=0)
            torch.testing.assert_close(steps[1], full[0][:, start:start + n], atol=1e-5, rtol=0)
            start += n
