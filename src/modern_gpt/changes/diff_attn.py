"""Differential attention (Ye et al. 2024, DIFF Transformer): each head splits its queries and keys in two halves and
takes the difference of the two softmax maps, (A₁ − λ·A₂)·v, so that attention both maps share (noise, sinks)
cancels; λ is learned per layer, re-parameterised as exp(λq₁·λk₁) − exp(λq₂·λk₂) + λ_init, λ_init = 0.8 −
0.6·exp(−0.3·(l−1)) for layer l; each head's output is then RMS-normalised and scaled by 1 − λ_init. Each half
attends with torch's scaled_dot_product_attention."""

from ..core.errors import ConfigError
from . import Change, Claim


def plugs(cfg, on: bool) -> dict:
    import math
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    half = cfg.head_dim // 2

    class DifferentialAttention(nn.Module):
        inits = {"lambda_q1": "normal", "lambda_k1": "normal", "lambda_q2": "normal", "lambda_k2": "normal",
                 "head_norm.weight": "ones"}

        def __init__(self, layer: int):
            super().__init__()
            self.lambda_init = 0.8 - 0.6 * math.exp(-0.3 * layer)      # layer counted from 0: l − 1
            self.lambda_q1, self.lambda_k1 = nn.Parameter(torch.zeros(half)), nn.Parameter(torch.zeros(half))
            self.lambda_q2, self.lambda_k2 = nn.Parameter(torch.zeros(half)), nn.Parameter(torch.zeros(half))
            self.head_norm = nn.RMSNorm(cfg.head_dim, eps=cfg.norm_eps)

        def forward(self, q, k, v, mask, causal, ctx):
            gqa = q.size(1) != k.size(1)
            a1 = F.scaled_dot_product_attention(q[..., :half], k[..., :half], v, attn_mask=mask, is_causal=causal,
                                                enable_gqa=gqa)
            a2 = F.scaled_dot_product_attention(q[..., half:], k[..., half:], v, attn_mask=mask, is_causal=causal,
                                                enable_gqa=gqa)
            lam = (torch.exp(self.lambda_q1 @ self.lambda_k1) - torch.exp(self.lambda_q2 @ self.lambda_k2)
                   + self.lambda_init)
            return self.head_norm(a1 - lam * a2) * (1 - self.lambda_init)      # (B, n_head, T, head_dim)

    return {f"blocks.{i}.attn.attend": DifferentialAttention(i) for i in range(cfg.n_layer)}


def check(cfg) -> None:
    if cfg.head_dim % 2:
        raise ConfigError(f"diff_attn=true with head_dim={cfg.head_dim}: each head splits in two halves; use an "
                          "even head_dim")


CHANGE = Change(name="diff_attn", values=(False, True), default=False, labels={True: "differential attention"},
                hf=None, plugs=plugs, check=check,
                claim=Claim(paper="Ye et al. 2024, Differential Transformer (arXiv:2410.05258, ICLR 2025)",
                            effect="lower", scale="830M-13B params (3B on 1T tokens): the loss of a Transformer "
                                                  "with ~38% more params or tokens"))
