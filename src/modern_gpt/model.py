"""The GPT, read top to bottom: norms → RoPE → attention → MLPs → block → GPT.

Every ablation flag of `ModelConfig` is read once, at construction, as one branch. Optional pieces
are `module if flag else None` with a single `if ... is not None` in forward.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import ModelConfig


class RMSNorm(nn.Module):
    """LayerNorm without the centring: divide by the root-mean-square, times a gain. No bias."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(cfg: ModelConfig, dim: int) -> nn.Module:
    if cfg.norm == "rmsnorm":
        return RMSNorm(dim, cfg.norm_eps)
    return nn.LayerNorm(dim, eps=cfg.norm_eps, bias=cfg.bias)


def rope_cache(head_dim: int, max_len: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position · frequency, one frequency per pair of dimensions: (max_len, head_dim/2)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (even, odd) pair of x's last dimension by its position's angle."""
    T = x.size(-2)
    x1, x2 = x[..., 0::2], x[..., 1::2]                   # (B, H, T, head_dim/2) each
    c, s = cos[:T], sin[:T]                              # (T, head_dim/2), broadcast over B and H
    return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_head, self.n_kv_head, self.head_dim = cfg.n_head, cfg.n_kv_head, cfg.head_dim
        self.q_proj = nn.Linear(cfg.n_embd, cfg.n_head * cfg.head_dim, bias=cfg.bias)
        self.k_proj = nn.Linear(cfg.n_embd, cfg.n_kv_head * cfg.head_dim, bias=cfg.bias)  # narrower under GQA
        self.v_proj = nn.Linear(cfg.n_embd, cfg.n_kv_head * cfg.head_dim, bias=cfg.bias)  # narrower under GQA
        self.o_proj = nn.Linear(cfg.n_head * cfg.head_dim, cfg.n_embd, bias=cfg.bias)
        self.q_norm = make_norm(cfg, cfg.head_dim) if cfg.qk_norm else None
        self.k_norm = make_norm(cfg, cfg.head_dim) if cfg.qk_norm else None
        self.dropout = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)     # (B, n_head, T, hd)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, hd)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, hd)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)        # keeps q·k small whatever the weights grow to
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        # scale, causal mask, softmax, dropout and the weighted sum in one call; enable_gqa lets one
        # K/V head serve n_head / n_kv_head query heads without copying K and V
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0,
            enable_gqa=self.n_kv_head != self.n_head,
        )                                                # (B, n_head, T, hd)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.o_proj(y))


class MLP(nn.Module):
    """Step 1's feed-forward: 4·d hidden units (or cfg.mlp_hidden), GELU."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.up = nn.Linear(cfg.n_embd, cfg.hidden, bias=cfg.bias)
        self.down = nn.Linear(cfg.hidden, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(F.gelu(self.up(x))))


class SwiGLU(nn.Module):
    """A gated feed-forward: silu(gate(x)) decides how much of up(x) gets through."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        hidden = cfg.hidden
        self.gate = nn.Linear(cfg.n_embd, hidden, bias=cfg.bias)
        self.up = nn.Linear(cfg.n_embd, hidden, bias=cfg.bias)
        self.down = nn.Linear(hidden, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(F.silu(self.gate(x)) * self.up(x)))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm1 = make_norm(cfg, cfg.n_embd)
        self.attn = Attention(cfg)
        self.norm2 = make_norm(cfg, cfg.n_embd)
        self.mlp = SwiGLU(cfg) if cfg.mlp == "swiglu" else MLP(cfg)
        self.post_norm = cfg.norm_placement == "post"

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        if self.post_norm:                               # 2017: normalise after each residual add
            x = self.norm1(x + self.attn(x, rope))
            return self.norm2(x + self.mlp(x))
        x = x + self.attn(self.norm1(x), rope)           # pre-norm: the residual stream is never normalised
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd) if cfg.pos == "learned" else None
        if cfg.pos == "rope":                            # no parameters: a cos/sin table, not saved
            cos, sin = rope_cache(cfg.head_dim, cfg.block_size, cfg.rope_base)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm_f = make_norm(cfg, cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight        # tied: one matrix reads and writes tokens
        self.apply(self._init_weights)
        for name, p in self.named_parameters():          # residual outputs scaled down with depth (GPT-2)
            if name.endswith(("o_proj.weight", "down.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def num_params(self, non_embedding: bool = False) -> int:
        """All parameters (the tied token matrix once), or without the token and position tables."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.tok_emb.weight.numel()
            if self.pos_emb is not None:
                n -= self.pos_emb.weight.numel()
        return n

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size={self.cfg.block_size}")
        x = self.tok_emb(idx)                            # (B, T, n_embd)
        rope = None
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(T, device=idx.device))
        else:
            rope = (self.rope_cos, self.rope_sin)
        x = self.drop(x)
        for block in self.blocks:
            x = block(x, rope)
        logits = self.lm_head(self.norm_f(x))            # (B, T, vocab_size)
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
