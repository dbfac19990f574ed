"""Value-residual learning (ResFormer, Zhou et al. 2024; modded-nanogpt's speedruns): every layer after the first
mixes its attention values with the first layer's, v ← λ·v + (1 − λ)·v₁, λ learned per layer (from 0.5), so
that the token's own information reaches deep layers directly and no layer's values collapse.

The first layer leaves v₁ in the forward call's carry; each later layer reads it there. The mix happens before
the KV cache stores a layer's values, so a cached value is already mixed and generation needs no v₁ of the past.
"""

from ..core.errors import ConfigError
from . import Change, Claim


def plugs(cfg, on: bool) -> dict:
    import torch
    import torch.nn as nn

    class FirstValues(nn.Module):
        def forward(self, q, k, v, ctx):
            ctx.carry["v1"] = v                              # (B, n_kv_head, T, head_dim)
            return q, k, v

    class MixValues(nn.Module):
        inits = {"lamb": 0.5}                            # half its own values, half the first layer's

        def __init__(self):
            super().__init__()
            self.lamb = nn.Parameter(torch.tensor(0.5))

        def forward(self, q, k, v, ctx):
            return q, k, self.lamb * v + (1 - self.lamb) * ctx.carry["v1"]

    return {f"blocks.{i}.attn.mix_values": FirstValues() if i == 0 else MixValues() for i in range(cfg.n_layer)}


def check(cfg) -> None:
    if cfg.n_layer < 2:
        raise ConfigError(f"value_residual=true with n_layer={cfg.n_layer}: the first layer has no layer before it "
                          "to mix with; use n_layer >= 2")


CHANGE = Change(name="value_residual", values=(False, True), default=False, labels={True: "value residual"},
                hf=None, plugs=plugs, check=check,
                claim=Claim(paper="Zhou et al. 2024, Value Residual Learning (ResFormer, arXiv:2410.17897)",
                            effect="lower", scale="82M-468M params, 20B tokens: the same loss with ~10-13% fewer "
                                                  "params or tokens"))
