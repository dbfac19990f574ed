"""Value-residual learning (ResFormer, Zhou et al. 2024; modded-nanogpt's speedruns): every layer after the first
mixes its attention values with the first layer's, v ← λ·v + (1 − λ)·v₁, λ learned per layer (from 0.5), so
that the token's own information reaches deep layers directly and no layer's values collapse.

The first layer leaves v₁ in the forward call's state; each later layer reads it there. The mix happens before
the KV cache stores a layer's values, so a cached value is already mixed and generation needs no v₁ of the past.
"""

from ..core.errors import ConfigError
from . import Change


def install(gpt, on: bool) -> None:
    import torch
    import torch.nn as nn

    class FirstValues(nn.Module):
        def forward(self, v, state):
            state["v1"] = v                                  # (B, n_kv_head, T, head_dim)
            return v

    class MixValues(nn.Module):
        def __init__(self):
            super().__init__()
            self.lamb = nn.Parameter(torch.tensor(0.5))      # 0.5: half its own values, half the first layer's

        def forward(self, v, state):
            return self.lamb * v + (1 - self.lamb) * state["v1"]

    for i, block in enumerate(gpt.blocks):
        block.attn.mix_values = FirstValues() if i == 0 else MixValues()


def check(cfg) -> None:
    if cfg.n_layer < 2:
        raise ConfigError(f"value_residual=true with n_layer={cfg.n_layer}: the first layer has no layer before it "
                          "to mix with; use n_layer >= 2")


CHANGE = Change(name="value_residual", values=(False, True), default=False, labels={True: "value residual"},
                hf=None, install=install, check=check)
