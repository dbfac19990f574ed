"""The GPT, read top to bottom: norms → positions → attention → MLPs → block → GPT.

Each switch of `ModelConfig` is one table here, value → module (NORMS, POSITIONS, MLPS, PLACEMENTS),
registered against the names config/choices.py defines (a table with other keys fails at import), so a
new value is its name there and one entry here. Optional pieces are
`module if flag else None` with a single `if ... is not None` in forward.

A change of a new kind (changes/<name>.py) plugs in at named points, by its install(gpt, value), which GPT calls
with the blocks built and before the weights are initialised: a block's `wiring` (how attention and the MLP meet
the residual stream), an attention's `mix_values` (its values, before the KV cache stores them), and `state`, one
dict per forward call that every block sees in turn (what a layer leaves for the layers after it).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import changes
from ..config import choices
from ..config.choices import registered

if TYPE_CHECKING:
    from ..config import ModelConfig

Rope = tuple[torch.Tensor, torch.Tensor]     # cos and sin of the positions in hand, (T, head_dim/2) each
State = dict[str, torch.Tensor]              # one forward call's: what a block leaves for the blocks after it


NORMS = registered("norm", choices.NORMS, {
    "layernorm": lambda dim, cfg: nn.LayerNorm(dim, eps=cfg.norm_eps, bias=cfg.bias),   # centre, scale, shift
    # LayerNorm without the centring: x / rms(x) · gain, no bias (F.rms_norm, torch's own kernel)
    "rmsnorm": lambda dim, cfg: nn.RMSNorm(dim, eps=cfg.norm_eps),
})


def make_norm(cfg: ModelConfig, dim: int) -> nn.Module:
    return NORMS[cfg.norm](dim, cfg)


# ----------------------------------------------------------------------------------------- positions

def rope_cache(head_dim: int, max_len: int, base: float) -> Rope:
    """cos and sin of position · frequency, one frequency per pair of dimensions: (max_len, head_dim/2)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (even, odd) pair of x's last dimension by its position's angle; cos and sin hold the angles
    of x's positions, (T, head_dim/2), broadcast over batch and heads."""
    x1, x2 = x[..., 0::2], x[..., 1::2]                   # (B, H, T, head_dim/2) each
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2).type_as(x)


class LearnedPositions(nn.Module):
    """Step 1: one learned vector per position, added to the token embeddings."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.table = nn.Embedding(cfg.block_size, cfg.n_embd)

    def add(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        return x + self.table(torch.arange(start, start + x.size(1), device=x.device))

    def rope(self, start: int, T: int) -> Rope | None:
        return None


class RotaryPositions(nn.Module):
    """RoPE: nothing added to the embeddings; queries and keys are rotated by position in attention."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        cos, sin = rope_cache(cfg.head_dim, cfg.block_size, cfg.rope_base)
        self.register_buffer("cos", cos, persistent=False)   # a table, not weights: not saved
        self.register_buffer("sin", sin, persistent=False)

    def add(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        return x

    def rope(self, start: int, T: int) -> Rope | None:
        """The angles of positions start .. start+T-1: absolute positions, also one token at a time."""
        return self.cos[start:start + T], self.sin[start:start + T]


class NoPositions(nn.Module):
    """NoPE: no position signal at all; the causal mask alone lets a token tell how far in it is."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()

    def add(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        return x

    def rope(self, start: int, T: int) -> Rope | None:
        return None


POSITIONS = registered("pos", choices.POSITIONS,
                       {"learned": LearnedPositions, "rope": RotaryPositions, "none": NoPositions})


# ----------------------------------------------------------------------------------------- attention

def window_mask(q_pos: torch.Tensor, k_pos: torch.Tensor, window: int) -> torch.Tensor:
    """Which keys each query of a sliding-window layer sees, (len(q_pos), len(k_pos)) bool: a key at or before
    the query and fewer than `window` positions back (the query's own token and the window - 1 before it)."""
    back = q_pos[:, None] - k_pos[None, :]
    return (back >= 0) & (back < window)


class KVCache:
    """Every layer's keys and values of `batch` sequences: only the n_kv_head K/V heads are stored (under GQA,
    n_head / n_kv_head times less than multi-head attention keeps), after QK-norm and RoPE, so a stored key never
    changes. A full-attention layer keeps block_size positions; a sliding-window layer keeps only its window, a
    ring buffer in which position p sits at slot p mod window. GPT.forward(idx, cache=...) appends idx's tokens."""

    def __init__(self, cfg: ModelConfig, batch: int, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32):
        self.block_size = cfg.block_size
        self.windows = cfg.windows
        # per layer: (K or V, batch, K/V head, position or slot, head_dim)
        self.kv = [torch.zeros(2, batch, cfg.n_kv_head, w or cfg.block_size, cfg.head_dim, device=device,
                               dtype=dtype) for w in self.windows]
        self.length = 0                                   # tokens stored per sequence

    @property
    def nbytes(self) -> int:
        """The bytes the cache holds: K and V of every layer, a window's worth in sliding-window layers."""
        return sum(t.numel() * t.element_size() for t in self.kv)

    def layer(self, i: int) -> LayerKV:
        return LayerKV(self.kv[i][0], self.kv[i][1], self.length, self.windows[i])


@dataclass(frozen=True)
class LayerKV:
    """One layer's slice of a KVCache, and where the new tokens go."""
    k: torch.Tensor                 # (B, n_kv_head, block_size or window, head_dim)
    v: torch.Tensor
    start: int                      # tokens already stored
    window: int | None = None       # None: full attention

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Full attention: store the new tokens' keys and values; return every stored token's."""
        end = self.start + k.size(2)
        self.k[:, :, self.start:end] = k
        self.v[:, :, self.start:end] = v
        return self.k[:, :, :end], self.v[:, :, :end]

    def slide(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A sliding-window layer: the keys and values the new tokens may see (the ring's, then their own) with
        those keys' positions; then the last `window` of the new tokens replace the oldest in the ring."""
        T, W = k.size(2), self.window
        held = torch.arange(max(0, self.start - W), self.start, device=k.device)   # positions the ring holds
        new = torch.arange(self.start, self.start + T, device=k.device)
        keys = torch.cat([self.k[:, :, held % W], k], dim=2)
        values = torch.cat([self.v[:, :, held % W], v], dim=2)
        kept = new[-W:]
        self.k[:, :, kept % W] = k[:, :, -W:]
        self.v[:, :, kept % W] = v[:, :, -W:]
        return keys, values, torch.cat([held, new])


class Attention(nn.Module):
    """Multi-head or grouped-query self-attention; with a window, a sliding-window layer."""

    def __init__(self, cfg: ModelConfig, window: int | None = None):
        super().__init__()
        self.window = window
        if window is not None:                           # training's mask, sliced to the length in hand
            pos = torch.arange(cfg.block_size)
            self.register_buffer("local", window_mask(pos, pos, window), persistent=False)
        self.n_head, self.n_kv_head, self.head_dim = cfg.n_head, cfg.n_kv_head, cfg.head_dim
        self.q_proj = nn.Linear(cfg.n_embd, cfg.n_head * self.head_dim, bias=cfg.bias)
        self.k_proj = nn.Linear(cfg.n_embd, cfg.n_kv_head * self.head_dim, bias=cfg.bias)  # narrower under GQA
        self.v_proj = nn.Linear(cfg.n_embd, cfg.n_kv_head * self.head_dim, bias=cfg.bias)  # narrower under GQA
        self.o_proj = nn.Linear(cfg.n_head * self.head_dim, cfg.n_embd, bias=cfg.bias)
        self.q_norm = make_norm(cfg, self.head_dim) if cfg.qk_norm else None
        self.k_norm = make_norm(cfg, self.head_dim) if cfg.qk_norm else None
        self.mix_values = None                           # a change's: (v, state) -> v, before the cache stores v
        self.dropout = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, rope: Rope | None, kv: LayerKV | None = None,
                state: State | None = None) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)     # (B, n_head, T, hd)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, hd)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, hd)
        if self.mix_values is not None:
            v = self.mix_values(v, state)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)        # keeps q·k small whatever the weights grow to
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        mask, causal = None, True
        if self.window is not None:                      # a sliding-window layer: the mask holds causality too
            causal = False
            if kv is None:
                mask = self.local[:T, :T]
            else:                                        # the ring's keys and the new ones, by position
                k, v, k_pos = kv.slide(k, v)
                mask = window_mask(torch.arange(kv.start, kv.start + T, device=x.device), k_pos, self.window)
        elif kv is not None:                             # generation: attend to the stored tokens too
            k, v = kv.extend(k, v)
            if kv.start > 0:                             # query i sits at position start + i
                causal = False
                if T > 1:
                    mask = torch.ones(T, kv.start + T, dtype=torch.bool, device=x.device).tril(kv.start)
        # scale, causal mask, softmax, dropout and the weighted sum in one call; enable_gqa lets one
        # K/V head serve n_head / n_kv_head query heads without copying K and V
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, dropout_p=self.dropout if self.training else 0.0,
            enable_gqa=self.n_kv_head != self.n_head,
        )                                                # (B, n_head, T, hd)
        y = y.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim)
        return self.resid_dropout(self.o_proj(y))


# ----------------------------------------------------------------------------------------- MLPs

def relu2(x: torch.Tensor) -> torch.Tensor:
    """ReLU, squared: zero below 0, x² above (So et al. 2021's Primer; nanochat's and modded-nanogpt's MLP)."""
    return F.relu(x).square()


class MLP(nn.Module):
    """Two matrices around an activation: Step 1's GELU, or ReLU², each 4·d hidden units (or cfg.mlp_hidden)."""

    def __init__(self, cfg: ModelConfig, act=F.gelu):
        super().__init__()
        self.up = nn.Linear(cfg.n_embd, cfg.hidden, bias=cfg.bias)
        self.down = nn.Linear(cfg.hidden, cfg.n_embd, bias=cfg.bias)
        self.act = act
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(self.act(self.up(x))))


class SwiGLU(nn.Module):
    """A gated feed-forward: silu(gate(x)) decides how much of up(x) gets through (2/3 of GELU's width)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gate = nn.Linear(cfg.n_embd, cfg.hidden, bias=cfg.bias)
        self.up = nn.Linear(cfg.n_embd, cfg.hidden, bias=cfg.bias)
        self.down = nn.Linear(cfg.hidden, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(F.silu(self.gate(x)) * self.up(x)))


MLPS = registered("mlp", choices.MLPS, {                  # hidden widths: choices.MLP_HIDDEN
    "gelu": MLP, "swiglu": SwiGLU, "relu2": lambda cfg: MLP(cfg, act=relu2)})


# ----------------------------------------------------------------------------------------- block

def pre_norm(block: Block, x: torch.Tensor, rope: Rope | None, kv: LayerKV | None, state: State) -> torch.Tensor:
    """Today's wiring: the norm sits inside each branch; the residual stream is never normalised."""
    x = x + block.attn(block.norm1(x), rope, kv, state)
    return x + block.mlp(block.norm2(x))


def post_norm(block: Block, x: torch.Tensor, rope: Rope | None, kv: LayerKV | None, state: State) -> torch.Tensor:
    """2017's wiring: normalise after each residual add."""
    x = block.norm1(x + block.attn(x, rope, kv, state))
    return block.norm2(x + block.mlp(x))


PLACEMENTS = registered("norm_placement", choices.PLACEMENTS, {"pre": pre_norm, "post": post_norm})


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, window: int | None = None):
        super().__init__()
        self.norm1 = make_norm(cfg, cfg.n_embd)
        self.attn = Attention(cfg, window)
        self.norm2 = make_norm(cfg, cfg.n_embd)
        self.mlp = MLPS[cfg.mlp](cfg)
        self.wiring = PLACEMENTS[cfg.norm_placement]    # a change may rewire: (block, x, rope, kv, state) -> x

    def forward(self, x: torch.Tensor, rope: Rope | None, kv: LayerKV | None = None,
                state: State | None = None) -> torch.Tensor:
        return self.wiring(self, x, rope, kv, {} if state is None else state)


# ----------------------------------------------------------------------------------------- GPT

# The init rule, an allow-list: every Linear is one of these by name. Inputs (and the head) start at std 0.02; the
# projections that write into the residual stream at 0.02 / sqrt(2 · n_layer) (GPT-2), so that the stream's
# variance does not grow with depth. A change that adds a Linear names it as one of them, or the model refuses it.
INPUT_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "gate", "up", "lm_head")
OUTPUT_PROJECTIONS = ("o_proj", "down")


def check_init_covers(model: nn.Module) -> None:
    """A TypeError naming any Linear the init rule does not know (it would train with another init, unnoticed)."""
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] not in INPUT_PROJECTIONS + OUTPUT_PROJECTIONS:
            raise TypeError(f"{name}: a Linear the init rule does not know; name it as an input projection "
                            f"({', '.join(INPUT_PROJECTIONS)}) or as one that writes into the residual stream "
                            f"({', '.join(OUTPUT_PROJECTIONS)}): nn/model.py's INPUT_PROJECTIONS, OUTPUT_PROJECTIONS")


class GPT(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = POSITIONS[cfg.pos](cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, w) for w in cfg.windows)   # w: None, or a sliding window
        self.norm_f = make_norm(cfg, cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight    # tied: one matrix reads and writes tokens
        for name, value in cfg.changes:                  # changes of a new kind plug in here (changes/<name>.py)
            changes.plugged(name).install(self, value)
        check_init_covers(self)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():          # residual outputs scaled down with depth (GPT-2)
            if name.endswith(tuple(f"{n}.weight" for n in OUTPUT_PROJECTIONS)):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def num_params(self, non_embedding: bool = False) -> int:
        """All parameters (a tied token matrix once, an untied head besides it), or the non-embedding ones:
        without the vocabulary-sized matrices (the token table, and the output head when it is untied) and the
        position table, as Kaplan et al. (2020) count N."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.tok_emb.weight.numel() + sum(p.numel() for p in self.pos.parameters())
            if not self.cfg.tie_embeddings:
                n -= self.lm_head.weight.numel()
        return n

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, cache: KVCache | None = None):
        """Logits of every position of idx (and the mean loss against targets). With a cache, idx continues
        the sequences stored in it (positions cache.length onwards), and its keys and values are added."""
        B, T = idx.shape
        start = cache.length if cache is not None else 0
        if start + T > self.cfg.block_size:
            raise ValueError(f"sequence length {start + T} exceeds block_size={self.cfg.block_size}")
        x = self.drop(self.pos.add(self.tok_emb(idx), start))   # (B, T, n_embd)
        rope = self.pos.rope(start, T)
        state: State = {}                                # this call's, passed from block to block
        for i, block in enumerate(self.blocks):
            x = block(x, rope, cache.layer(i) if cache is not None else None, state)
        if cache is not None:
            cache.length += T
        logits = self.lm_head(self.norm_f(x))            # (B, T, vocab_size)
        if self.cfg.logit_softcap > 0:                   # smoothly bounded to (-cap, cap): no logit runs away
            logits = self.cfg.logit_softcap * torch.tanh(logits / self.cfg.logit_softcap)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def match_mlp(cfg: ModelConfig, target: int) -> ModelConfig:
    """cfg with the MLP hidden size that brings its non-embedding parameter count closest to
    `target`, so that a row's capacity matches the row it is compared with (what SwiGLU's 2/3
    rule does for one change, done for any)."""

    def count(hidden: int) -> int:
        with torch.device("meta"):                       # shapes only: no memory, no initialisation cost
            return GPT(dataclasses.replace(cfg, mlp_hidden=hidden)).num_params(non_embedding=True)

    one, per_unit = count(1), count(2) - count(1)        # the count is linear in the hidden size
    return dataclasses.replace(cfg, mlp_hidden=max(1, round(1 + (target - one) / per_unit)))
