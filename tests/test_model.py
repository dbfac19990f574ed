"""Reference checks for each modern change: every test here can fail if the piece is wrong."""

import dataclasses
import math
import re
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from conftest import tiny_rows
from modern_gpt.config import ModelConfig
from modern_gpt.config.choices import MLP_HIDDEN
from modern_gpt.core.errors import ConfigError
from modern_gpt.nn.model import NORMS, GPT, Attention, NoPositions, Pass, RotaryPositions, apply_rope, match_mlp, rope_cache


def test_rmsnorm_matches_its_formula():
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    norm = NORMS["rmsnorm"](8, SimpleNamespace(norm_eps=1e-6)).double()
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 2.0, 8))
    expected = x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6) * norm.weight
    torch.testing.assert_close(norm(x), expected)
    # no centring: a constant shift of the input is not removed, unlike LayerNorm
    assert not torch.allclose(norm(x + 3.0), norm(x))
    assert [n for n, _ in norm.named_parameters()] == ["weight"]


def at(x: torch.Tensor, rope=None) -> Pass:
    """The forward call's context a layer is handed, for x's positions 0.. (its token ids unread here)."""
    return Pass(torch.zeros(x.shape[:2], dtype=torch.long), 0, rope)


def manual_attention(attn: Attention, x: torch.Tensor, rope=None, window: int | None = None) -> torch.Tensor:
    """Step 1's attention written out: projections, explicit K/V copies per group, masked softmax."""
    B, T, C = x.shape
    hd = attn.head_dim
    q = attn.q_proj(x).view(B, T, attn.n_head, hd).transpose(1, 2)
    k = attn.k_proj(x).view(B, T, attn.n_kv_head, hd).transpose(1, 2)
    v = attn.v_proj(x).view(B, T, attn.n_kv_head, hd).transpose(1, 2)
    if attn.q_norm is not None:
        q, k = attn.q_norm(q), attn.k_norm(k)
    if rope is not None:
        q, k = apply_rope(q, *rope), apply_rope(k, *rope)
    rep = attn.n_head // attn.n_kv_head
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    if window is not None:                              # and keys window or more positions back, one by one
        for i in range(T):
            for j in range(T):
                mask[i, j] |= i - j >= window
    weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
    return attn.o_proj((weights @ v).transpose(1, 2).reshape(B, T, attn.n_head * hd))


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
@pytest.mark.parametrize("qk_norm", [False, True])
@pytest.mark.parametrize("pos", ["learned", "rope"])
def test_sdpa_attention_matches_manual_masked_softmax(n_kv_head, qk_norm, pos):
    cfg = ModelConfig(vocab_size=11, block_size=10, n_head=4, n_kv_head=n_kv_head, n_embd=16, qk_norm=qk_norm, pos=pos)
    attn = Attention(cfg).double().eval()
    x = torch.randn(2, 10, 16, dtype=torch.float64)
    rope = tuple(t.double() for t in rope_cache(cfg.head_dim, 10, cfg.rope_base)) if pos == "rope" else None
    torch.testing.assert_close(attn(x, None, at(x, rope)), manual_attention(attn, x, rope))


@pytest.mark.parametrize("window", [1, 3, 9])
@pytest.mark.parametrize("n_kv_head", [4, 2])
def test_a_sliding_window_layer_matches_a_hand_masked_softmax(window, n_kv_head):
    cfg = ModelConfig(vocab_size=11, block_size=10, n_head=4, n_kv_head=n_kv_head, n_embd=16, qk_norm=True, pos="rope")
    attn = Attention(cfg, window).double().eval()
    x = torch.randn(2, 10, 16, dtype=torch.float64)
    rope = tuple(t.double() for t in rope_cache(cfg.head_dim, 10, cfg.rope_base))
    torch.testing.assert_close(attn(x, None, at(x, rope)), manual_attention(attn, x, rope, window))
    if window < 9:                                      # the window changes the output: it is not full attention
        assert not torch.allclose(attn(x, None, at(x, rope)), manual_attention(attn, x, rope))


def test_the_windows_follow_global_every_one_based():
    cfg = ModelConfig(block_size=64, n_layer=6, attn_window=16, global_every=3)
    assert cfg.windows == (16, 16, None, 16, 16, None)                # Gemma's count: layers 3 and 6 global
    assert ModelConfig(block_size=64, n_layer=4, attn_window=16, global_every=0).windows == (16,) * 4
    assert ModelConfig(n_layer=4, global_every=4).windows == (None,) * 4   # no window: global_every does nothing
    model = GPT(ModelConfig(vocab_size=11, block_size=64, n_layer=6, attn_window=16, global_every=3))
    assert [b.attn.window for b in model.blocks] == list(cfg.windows)
    assert not any("local" in k for k in model.state_dict())          # the mask is not saved with the weights


@pytest.mark.parametrize("kw, message", [
    (dict(attn_window=32), "attn_window=32: must be 0 (full attention) or a window below block_size=32"),
    (dict(attn_window=-1), "attn_window=-1: must be 0"),
    (dict(attn_window=8, global_every=1), "global_every=1 with attn_window=8: every layer would be global"),
    (dict(attn_window=8, global_every=3, n_layer=2), "global_every=3: must be 0 (every layer local) or 1..n_layer=2"),
    (dict(global_every=-2), "global_every=-2: must be 0"),
])
def test_bad_windows_are_refused_naming_the_field(kw, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        ModelConfig(**kw)


def test_rope_score_depends_only_on_the_distance():
    head_dim = 8
    cos, sin = rope_cache(head_dim, 64, 10000.0)
    q, k = torch.randn(head_dim, dtype=torch.float64), torch.randn(head_dim, dtype=torch.float64)

    def score(m: int, n: int) -> float:
        seq_q = torch.zeros(1, 1, 64, head_dim, dtype=torch.float64)
        seq_k = torch.zeros(1, 1, 64, head_dim, dtype=torch.float64)
        seq_q[0, 0, m], seq_k[0, 0, n] = q, k
        rq, rk = apply_rope(seq_q, cos.double(), sin.double()), apply_rope(seq_k, cos.double(), sin.double())
        return float(rq[0, 0, m] @ rk[0, 0, n])

    for distance in (0, 1, 7, 30):
        scores = [score(n + distance, n) for n in (0, 5, 20, 33)]
        assert max(scores) - min(scores) < 1e-6, (distance, scores)   # the cache is float32
    assert abs(score(10, 3) - score(10, 4)) > 1e-3          # a different distance gives another score
    assert abs(float(q @ k) - score(5, 5)) < 1e-6            # distance 0: the plain dot product


def test_rope_removes_the_position_table_and_has_no_parameters(tiny_cfg):
    learned = GPT(tiny_cfg)
    rope = GPT(dataclasses.replace(tiny_cfg, pos="rope"))
    assert isinstance(rope.pos, RotaryPositions) and list(rope.pos.parameters()) == []
    assert learned.num_params() - rope.num_params() == tiny_cfg.block_size * tiny_cfg.n_embd
    assert not any("cos" in k or "sin" in k for k in rope.state_dict())   # a cache, not saved with the weights


def test_gqa_with_all_heads_is_multi_head_attention(tiny_cfg):
    attn = Attention(tiny_cfg).eval()
    assert attn.k_proj.out_features == attn.q_proj.out_features == tiny_cfg.n_embd
    x = torch.randn(2, 9, tiny_cfg.n_embd)
    torch.testing.assert_close(attn(x, None, at(x, None)), manual_attention(attn, x))


@pytest.mark.parametrize("bias", [True, False])
def test_gqa_saves_exactly_the_narrower_key_value_projections(tiny_cfg, bias):
    mha = GPT(dataclasses.replace(tiny_cfg, bias=bias))
    for kv in (2, 1):
        gqa = GPT(dataclasses.replace(tiny_cfg, bias=bias, n_kv_head=kv))
        dropped_width = (tiny_cfg.n_head - kv) * tiny_cfg.head_dim        # per K and per V
        per_layer = 2 * dropped_width * (tiny_cfg.n_embd + (1 if bias else 0))
        assert mha.num_params() - gqa.num_params() == tiny_cfg.n_layer * per_layer


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("qk_norm", [False, True])
@pytest.mark.parametrize("mlp", ["gelu", "swiglu"])
def test_no_bias_leaves_no_bias_anywhere(tiny_cfg, norm, qk_norm, mlp):
    model = GPT(dataclasses.replace(tiny_cfg, bias=False, norm=norm, qk_norm=qk_norm, mlp=mlp))
    assert [n for n, _ in model.named_parameters() if "bias" in n] == []
    assert all(getattr(m, "bias", None) is None for m in model.modules())
    with_bias = GPT(dataclasses.replace(tiny_cfg, bias=True, norm=norm, qk_norm=qk_norm, mlp=mlp))
    assert any("bias" in n for n, _ in with_bias.named_parameters())


@pytest.mark.parametrize("n_embd, multiple, hidden", [(64, 64, 192), (128, 64, 384), (96, 64, 256),
                                                       (48, 64, 128), (128, 32, 352), (24, 1, 64)])
def test_swiglu_hidden_is_two_thirds_of_four_d_rounded_up(n_embd, multiple, hidden):
    cfg = ModelConfig(n_embd=n_embd, n_head=4, mlp="swiglu", mlp_multiple=multiple)
    assert MLP_HIDDEN["swiglu"](cfg.n_embd, cfg.mlp_multiple) == cfg.hidden == hidden == GPT(dataclasses.replace(cfg, vocab_size=8)).blocks[0].mlp.up.out_features
    mlp = GPT(cfg).blocks[0].mlp
    assert mlp.gate.out_features == mlp.up.out_features == mlp.down.in_features == hidden


def test_swiglu_and_gelu_rows_have_comparable_parameter_counts():
    cfg = ModelConfig(n_embd=96, n_head=4, mlp_multiple=32)        # 2/3·4·96 = 256 exactly
    gelu = GPT(cfg).blocks[0].mlp
    swiglu = GPT(dataclasses.replace(cfg, mlp="swiglu")).blocks[0].mlp
    count = lambda m: sum(p.numel() for p in m.parameters() if p.dim() == 2)
    assert count(gelu) == count(swiglu)


def variants():
    rows = tiny_rows()
    yield from ((row.slug, row.config) for row in rows)
    yield "post-norm", dataclasses.replace(rows[0].config, norm_placement="post")
    yield "post-norm modern", dataclasses.replace(rows[-1].config, norm_placement="post")
    yield "NoPE", dataclasses.replace(rows[-1].config, pos="none")
    yield "head_dim 12", dataclasses.replace(rows[-1].config, head_dim=12)


@pytest.mark.parametrize("name, cfg", list(variants()), ids=[n for n, _ in variants()])
def test_no_logit_sees_a_future_token(name, cfg):
    model = GPT(cfg).eval()
    idx = torch.randint(cfg.vocab_size, (2, cfg.block_size))
    logits, _ = model(idx)
    for t in (0, 5, cfg.block_size - 2):
        changed = idx.clone()
        changed[:, t + 1:] = (changed[:, t + 1:] + 1) % cfg.vocab_size   # rewrite the whole future
        new_logits, _ = model(changed)
        torch.testing.assert_close(new_logits[:, : t + 1], logits[:, : t + 1], rtol=0, atol=1e-6)
        assert not torch.allclose(new_logits[:, t + 1], logits[:, t + 1])  # the future did change


def test_parameter_counts_total_and_without_embeddings(tiny_cfg):
    model = GPT(tiny_cfg)
    total = sum(p.numel() for p in model.parameters())
    assert model.num_params() == total
    assert model.lm_head.weight is model.tok_emb.weight                   # tied: counted once
    tables = (tiny_cfg.vocab_size + tiny_cfg.block_size) * tiny_cfg.n_embd
    assert model.num_params(non_embedding=True) == total - tables


def test_longer_sequence_than_block_size_is_refused(tiny_cfg):
    with pytest.raises(ValueError, match="block_size"):
        GPT(tiny_cfg)(torch.zeros(1, tiny_cfg.block_size + 1, dtype=torch.long))


def test_loss_is_cross_entropy_of_the_logits(tiny_cfg):
    model = GPT(tiny_cfg)
    idx = torch.randint(tiny_cfg.vocab_size, (2, 8))
    logits, loss = model(idx, idx)
    torch.testing.assert_close(loss, F.cross_entropy(logits.flatten(0, 1), idx.flatten()))


def test_parameter_matching_sizes_the_mlp_to_the_target():
    base = ModelConfig(vocab_size=48, block_size=32, n_layer=2, n_head=4, n_embd=64)
    modern = dataclasses.replace(base, norm="rmsnorm", pos="rope", mlp="swiglu", bias=False, n_kv_head=2, qk_norm=True)
    target = GPT(base).num_params(non_embedding=True)
    unmatched = GPT(modern).num_params(non_embedding=True)
    matched = match_mlp(modern, target)
    got = GPT(matched).num_params(non_embedding=True)
    assert matched.mlp_hidden > 0 and matched.hidden == matched.mlp_hidden
    per_unit = 3 * modern.n_embd * modern.n_layer                         # gate, up, down: one column each
    assert abs(got - target) <= per_unit / 2 < abs(unmatched - target)


def same_weights(cfg: ModelConfig, **changes) -> tuple[GPT, GPT]:
    """Two models whose parameters are equal, the second built with `changes` (which add no parameters)."""
    a = GPT(cfg).eval()
    b = GPT(dataclasses.replace(cfg, **changes)).eval()
    b.load_state_dict(a.state_dict())
    return a, b


def test_rope_base_changes_the_output(tiny_cfg):
    cfg = dataclasses.replace(tiny_cfg, pos="rope")
    a, b = same_weights(cfg, rope_base=500.0)
    idx = torch.randint(cfg.vocab_size, (2, cfg.block_size))
    assert not torch.allclose(a(idx)[0][:, 1:], b(idx)[0][:, 1:])
    torch.testing.assert_close(a(idx)[0][:, 0], b(idx)[0][:, 0])        # position 0 is not rotated


def test_every_block_rotates_with_the_models_tables(tiny_cfg, monkeypatch):
    """RoPE with its tables set to no rotation (cos 1, sin 0) is NoPE; with the real tables it is not."""
    rope, nope = same_weights(dataclasses.replace(tiny_cfg, pos="rope"), pos="none")
    assert isinstance(nope.pos, NoPositions)
    idx = torch.randint(tiny_cfg.vocab_size, (2, tiny_cfg.block_size))
    assert not torch.allclose(rope(idx)[0], nope(idx)[0])
    seen = []
    real_forward = Attention.forward
    monkeypatch.setattr(Attention, "forward", lambda self, x, kv, ctx:
                        seen.append(ctx.rope) or real_forward(self, x, kv, ctx))
    rope(idx)
    assert len(seen) == tiny_cfg.n_layer                 # every layer gets views of the model's own tables
    assert all(c.data_ptr() == rope.pos.cos.data_ptr() and s.data_ptr() == rope.pos.sin.data_ptr()
               and c.shape == (tiny_cfg.block_size, tiny_cfg.head_dim // 2) for c, s in seen)
    with torch.no_grad():
        rope.pos.cos.fill_(1.0)
        rope.pos.sin.zero_()
    torch.testing.assert_close(rope(idx)[0], nope(idx)[0])


def test_nope_has_no_position_signal(tiny_cfg):
    """A constant sequence: without positions every position sees the same thing; a position table tells them apart."""
    idx = torch.full((1, tiny_cfg.block_size), 3)
    nope = GPT(dataclasses.replace(tiny_cfg, pos="none")).eval()
    logits = nope(idx)[0][0]
    torch.testing.assert_close(logits, logits[:1].expand_as(logits))
    assert nope.num_params() == GPT(tiny_cfg).num_params() - tiny_cfg.block_size * tiny_cfg.n_embd
    learned = GPT(tiny_cfg).eval()(idx)[0][0]
    assert not torch.allclose(learned, learned[:1].expand_as(learned))


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_norm_placement_wires_the_block_as_written(tiny_cfg, placement):
    from modern_gpt.nn.model import Block
    block = Block(dataclasses.replace(tiny_cfg, norm_placement=placement)).eval()
    with torch.no_grad():                                 # gains and shifts away from 1 and 0, so a norm shows
        for norm in (block.norm1, block.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 7, tiny_cfg.n_embd)
    if placement == "pre":
        h = x + block.attn(block.norm1(x), None, at(x))
        expected = h + block.mlp(block.norm2(h))
    else:
        h = block.norm1(x + block.attn(x, None, at(x, None)))
        expected = block.norm2(h + block.mlp(h))
    torch.testing.assert_close(block(x, at(x)), expected)
    other = Block(dataclasses.replace(tiny_cfg, norm_placement="post" if placement == "pre" else "pre")).eval()
    other.load_state_dict(block.state_dict())
    assert not torch.allclose(other(x, at(x)), expected)


def test_head_dim_apart_from_width_over_heads(tiny_cfg):
    cfg = dataclasses.replace(tiny_cfg, head_dim=12, n_kv_head=2, pos="rope")   # 4 heads x 12 = 48, width 32
    attn = Attention(cfg).double().eval()
    assert (attn.q_proj.out_features, attn.k_proj.out_features, attn.o_proj.in_features) == (48, 24, 48)
    x = torch.randn(2, 9, cfg.n_embd, dtype=torch.float64)
    rope = tuple(t.double() for t in rope_cache(12, 9, cfg.rope_base))
    torch.testing.assert_close(attn(x, None, at(x, rope)), manual_attention(attn, x, rope))


# ----------------------------------------------------------------------------------------- past the book

def test_relu2_mlp_is_two_matrices_around_relu_squared(tiny_cfg):
    cfg = dataclasses.replace(tiny_cfg, mlp="relu2")
    assert cfg.hidden == MLP_HIDDEN["relu2"](cfg.n_embd, cfg.mlp_multiple) == 4 * cfg.n_embd
    mlp = GPT(cfg).blocks[0].mlp.double()
    assert [n for n, p in mlp.named_parameters() if p.dim() == 2] == ["up.weight", "down.weight"]
    x = torch.randn(3, 5, cfg.n_embd, dtype=torch.float64)
    h = x @ mlp.up.weight.T + mlp.up.bias
    expected = torch.where(h > 0, h * h, torch.zeros_like(h)) @ mlp.down.weight.T + mlp.down.bias
    torch.testing.assert_close(mlp(x), expected)
    gelu = GPT(dataclasses.replace(cfg, mlp="gelu")).blocks[0].mlp.double()
    gelu.load_state_dict(mlp.state_dict())
    assert not torch.allclose(gelu(x), expected)


def test_an_untied_head_is_its_own_matrix_and_counted_as_embedding(tiny_cfg):
    tied, untied = GPT(tiny_cfg), GPT(dataclasses.replace(tiny_cfg, tie_embeddings=False))
    assert untied.lm_head.weight is not untied.tok_emb.weight
    assert untied.num_params() - tied.num_params() == tiny_cfg.vocab_size * tiny_cfg.n_embd
    assert untied.num_params(non_embedding=True) == tied.num_params(non_embedding=True)
    assert "lm_head.weight" in dict(untied.named_parameters()) and "lm_head.weight" not in dict(tied.named_parameters())
    idx = torch.randint(tiny_cfg.vocab_size, (2, 6))
    logits, _ = untied.eval()(idx)
    h = untied.pos.add(untied.tok_emb(idx))                       # the head reads its own matrix
    for block in untied.blocks:
        h = block(h, at(h))
    torch.testing.assert_close(logits, untied.norm_f(h) @ untied.lm_head.weight.T)


@pytest.mark.parametrize("cap", [0.0, 0.5, 15.0])
def test_logit_softcap_is_cap_tanh_logits_over_cap(tiny_cfg, cap):
    plain = GPT(tiny_cfg).eval()
    capped = GPT(dataclasses.replace(tiny_cfg, logit_softcap=cap)).eval()
    capped.load_state_dict(plain.state_dict())
    idx = torch.randint(tiny_cfg.vocab_size, (2, 6))
    raw, _ = plain(idx)
    logits, loss = capped(idx, idx)
    torch.testing.assert_close(logits, raw if cap == 0 else cap * torch.tanh(raw / cap))
    torch.testing.assert_close(loss, F.cross_entropy(logits.flatten(0, 1), idx.flatten()))
    if cap:
        assert logits.abs().max() < cap


@pytest.mark.parametrize("field, value, message", [
    ("logit_softcap", -1.0, "logit_softcap=-1.0: must be 0 \\(off\\) or a positive number"),
    ("logit_softcap", float("nan"), "logit_softcap=nan: must be 0"),
    ("tie_embeddings", "no", "tie_embeddings='no': must be true or false"),
    ("mlp", "relu", "mlp='relu': allowed values are gelu, swiglu, relu2"),
])
def test_the_new_switches_refuse_bad_values_in_one_line(field, value, message):
    from modern_gpt.core.errors import ConfigError
    with pytest.raises(ConfigError, match=message):
        ModelConfig(**{field: value})
