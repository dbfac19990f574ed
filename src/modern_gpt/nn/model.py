"""The GPT, read top to bottom: norms → positions → attention → MLPs → block → GPT.

Each switch of `ModelConfig` is one table here, value → module (NORMS, POSITIONS, MLPS, PLACEMENTS),
registered against the names config/choices.py defines (a table with other keys fails at import), so a
new value is its name there and one entry here. Optional pieces are
`module if flag else None` with a single `if ... is not None` in forward.

A change of a new kind (changes/<name>.py) fills plug points: slots of this file, each empty (None) with the
default computation written in place beside it, so that this file still says what is computed. Each module's
`SLOTS` names its points; every point is handed the forward call's `Pass` (token ids, positions, targets, the
cache, what a layer leaves for later layers, the auxiliary loss terms):
- GPT.inputs        (x, ctx) -> x                the input stream, after the embeddings (token ids: ctx.idx)
- Block's wiring    Wiring(join, norms)          how attention and the MLP meet the residual stream, and which
                                                 norms the block builds for it (given at construction)
- Attention.mix_values (q, k, v, ctx) -> q, k, v queries, keys and values after their projections, before QK-norm,
                                                 RoPE and the cache
- Attention.positions  (q, k, ctx) -> q, k       how positions reach q and k (default: RoPE's rotation, if any)
- Attention.attend     (q, k, v, mask, causal, ctx) -> y   the attention operation, each head's output
- Attention.mix_heads  (y, x, ctx) -> y          the heads' output before o_proj, with attention's input x at hand
- Block.mlp         (x) -> x                     the MLP (default: MLPS[cfg.mlp], replaced whole)
- GPT.final         (x, ctx) -> x                the final hidden state, before norm_f
- GPT.output        (logits, ctx) -> logits      the logits
- ctx.terms         {name: scalar}               an auxiliary loss term, written by any point that reads what it
                                                 needs (training minimises the cross-entropy plus every term)
- a plug module's `optim` {param: group}         the optimiser group of its parameters (optim_groups)
- a plug module's `inits` {param: rule}          the init of its parameters (init_weights); a change's `reinit`
                                                 declares new inits for the model's own weights
- ctx.held(point)                                a change's decoding state, kept by the KV cache beside K and V
A change's model code returns {point's path: its module}; GPT puts each in its slot (and refuses any other path).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import choices
from ..config.choices import registered
from .cache import KVCache, LayerKV
from .init import init_weights
from .plugs import Pass, Rope, Wiring, plugs_of

if TYPE_CHECKING:
    from ..config import ModelConfig

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


class Attention(nn.Module):
    """Multi-head or grouped-query self-attention; with a window, a sliding-window layer."""
    SLOTS = ("mix_values", "positions", "attend", "mix_heads")   # plug points (the module docstring)

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
        self.dropout = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)
        for slot in self.SLOTS:                          # empty plug points: the default computation runs
            self.register_module(slot, None)

    def forward(self, x: torch.Tensor, kv: LayerKV | None, ctx: Pass) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)     # (B, n_head, T, hd)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, hd)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, hd)
        if self.mix_values is not None:                  # plug: q, k, v as projected (default: as they are)
            q, k, v = self.mix_values(q, k, v, ctx)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)        # keeps q·k small whatever the weights grow to
        if self.positions is not None:                   # plug: how positions reach q and k
            q, k = self.positions(q, k, ctx)
        elif ctx.rope is not None:                       # default: RoPE rotates both (learned positions, NoPE: no-op)
            q, k = apply_rope(q, *ctx.rope), apply_rope(k, *ctx.rope)
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
        if self.attend is not None:                      # plug: the attention operation
            y = self.attend(q, k, v, mask, causal, ctx)
        else:
            # scale, causal mask, softmax, dropout and the weighted sum in one call; enable_gqa lets one
            # K/V head serve n_head / n_kv_head query heads without copying K and V
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, is_causal=causal, dropout_p=self.dropout if self.training else 0.0,
                enable_gqa=self.n_kv_head != self.n_head,
            )                                            # (B, n_head, T, hd)
        y = y.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim)
        if self.mix_heads is not None:                   # plug: the heads' output, attention's input at hand
            y = self.mix_heads(y, x, ctx)
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

def pre_norm(block: Block, x: torch.Tensor, kv: LayerKV | None, ctx: Pass) -> torch.Tensor:
    """Today's wiring: the norm sits inside each branch; the residual stream is never normalised."""
    x = x + block.attn(block.norm1(x), kv, ctx)
    return x + block.mlp(block.norm2(x))


def post_norm(block: Block, x: torch.Tensor, kv: LayerKV | None, ctx: Pass) -> torch.Tensor:
    """2017's wiring: normalise after each residual add."""
    x = block.norm1(x + block.attn(x, kv, ctx))
    return block.norm2(x + block.mlp(x))


PLACEMENTS = registered("norm_placement", choices.PLACEMENTS, {"pre": Wiring(pre_norm), "post": Wiring(post_norm)})


class Block(nn.Module):
    SLOTS = ("mlp",)                                     # plug points besides the wiring, which is given here

    def __init__(self, cfg: ModelConfig, window: int | None = None, wiring: Wiring | None = None):
        super().__init__()
        self.wiring = wiring or PLACEMENTS[cfg.norm_placement]   # a change's (plug), or the config's placement
        norms = self.wiring.norms
        self.norm1 = make_norm(cfg, cfg.n_embd) if "norm1" in norms else None
        self.attn = Attention(cfg, window)
        self.norm2 = make_norm(cfg, cfg.n_embd) if "norm2" in norms else None
        self.mlp = MLPS[cfg.mlp](cfg)                    # plug point: a change may put its own MLP here
        for name in norms:                               # any further norm the wiring names ('post_attn_norm')
            if name not in ("norm1", "norm2"):
                self.add_module(name, make_norm(cfg, cfg.n_embd))

    def forward(self, x: torch.Tensor, ctx: Pass, kv: LayerKV | None = None) -> torch.Tensor:
        return self.wiring.join(self, x, kv, ctx)


# ----------------------------------------------------------------------------------------- GPT

class GPT(nn.Module):
    SLOTS = ("inputs", "final", "output")                # plug points of the whole model (the module docstring)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.plugs = plugs_of(cfg, plug_points(cfg))                       # {point's path: a change's module or wiring}
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = POSITIONS[cfg.pos](cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, w, self.plugs.get(f"blocks.{i}.wiring"))   # w: None, or a window
                                    for i, w in enumerate(cfg.windows))
        self.norm_f = make_norm(cfg, cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight    # tied: one matrix reads and writes tokens
        for slot in self.SLOTS:                          # empty plug points: the default computation runs
            self.register_module(slot, None)
        for path, module in self.plugs.items():          # each change's module into its slot, and nowhere else
            if not path.endswith(".wiring"):
                self._fill(path, module)
        init_weights(self)

    def _fill(self, path: str, module: nn.Module) -> None:
        parent_path, _, slot = path.rpartition(".")
        parent = self.get_submodule(parent_path) if parent_path else self
        if slot not in getattr(type(parent), "SLOTS", ()) or not isinstance(module, nn.Module):
            raise TypeError(f"{path}: not a plug point (a module of nn/model.py's slots: {', '.join(plug_points(self.cfg))})")
        setattr(parent, slot, module)

    def plug_of(self, module_name: str) -> str | None:
        """The plug point whose change's module holds the module `module_name` (itself or within), or None: the
        model's own."""
        return next((path for path, m in self.plugs.items() if isinstance(m, nn.Module)
                     and (module_name == path or module_name.startswith(path + "."))), None)

    def optim_groups(self) -> dict[str, str]:
        """Each parameter's optimiser group: what a change's module declares (`optim`: {param: group}) for its own,
        else the rule: the blocks' matrices 'matrix' (Muon's under train.optimizer=muon, else AdamW with weight
        decay), other matrices 'decay' (AdamW, weight decay), vectors and scalars 'no_decay'."""
        groups = {n: "matrix" if n.startswith("blocks.") and p.dim() == 2 else "decay" if p.dim() >= 2 else "no_decay"
                  for n, p in self.named_parameters()}
        for path, module in self.plugs.items():
            for pname, group in getattr(module, "optim", {}).items():
                if group not in OPTIM_GROUPS:
                    raise TypeError(f"{path}.{pname}: optimiser group {group!r}; allowed: {', '.join(OPTIM_GROUPS)}")
                groups[f"{path}.{pname}"] = group
        return groups

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

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, cache: KVCache | None = None,
                terms: dict[str, torch.Tensor] | None = None):
        """Logits of every position of idx (and the mean next-token cross-entropy against targets). With a cache,
        idx continues the sequences stored in it (positions cache.length onwards), and its keys and values are
        added. `terms`, a dict given by training: the changes' auxiliary loss terms are put there."""
        B, T = idx.shape
        start = cache.length if cache is not None else 0
        if start + T > self.cfg.block_size:
            raise ValueError(f"sequence length {start + T} exceeds block_size={self.cfg.block_size}")
        ctx = Pass(idx, start, self.pos.rope(start, T), targets, cache)   # this call's, handed to every point
        x = self.drop(self.pos.add(self.tok_emb(idx), start))   # (B, T, n_embd)
        if self.inputs is not None:                      # plug: the input stream (default: as embedded)
            x = self.inputs(x, ctx)
        for i, block in enumerate(self.blocks):
            x = block(x, ctx, cache.layer(i) if cache is not None else None)
        if cache is not None:
            cache.length += T
        if self.final is not None:                       # plug: the final hidden state (default: as it is)
            x = self.final(x, ctx)
        logits = self.lm_head(self.norm_f(x))            # (B, T, vocab_size)
        if self.cfg.logit_softcap > 0:                   # smoothly bounded to (-cap, cap): no logit runs away
            logits = self.cfg.logit_softcap * torch.tanh(logits / self.cfg.logit_softcap)
        if self.output is not None:                      # plug: the logits (default: as they are)
            logits = self.output(logits, ctx)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        if terms is not None:
            terms.update(ctx.terms)
        return logits, loss


OPTIM_GROUPS = ("matrix", "decay", "no_decay")


def plug_points(cfg: ModelConfig) -> list[str]:
    """Every plug point's path at this config's depth."""
    blocks = [f"blocks.{i}.{slot}" for i in range(cfg.n_layer)
              for slot in ("wiring", *Block.SLOTS, *(f"attn.{s}" for s in Attention.SLOTS))]
    return [*GPT.SLOTS, *blocks]


def match_mlp(cfg: ModelConfig, target: int) -> ModelConfig:
    """cfg with the MLP hidden size that brings its non-embedding parameter count closest to
    `target`, so that a row's capacity matches the row it is compared with (what SwiGLU's 2/3
    rule does for one change, done for any)."""

    def count(hidden: int) -> int:
        with torch.device("meta"):                       # shapes only: no memory, no initialisation cost
            return GPT(dataclasses.replace(cfg, mlp_hidden=hidden)).num_params(non_embedding=True)

    one, per_unit = count(1), count(2) - count(1)        # the count is linear in the hidden size
    return dataclasses.replace(cfg, mlp_hidden=max(1, round(1 + (target - one) / per_unit)))
