"""Partial RoPE (GPT-NeoX-20B, GPT-J; later Phi, GLM, modded-nanogpt's variants): rotate only the first part of each
head's dimensions by position and leave the rest as they are, so some dimensions match by content alone."""

from ..core.errors import ConfigError
from . import Change, Claim


def plugs(cfg, fraction: float) -> dict:
    import torch
    import torch.nn as nn
    from ..nn.model import apply_rope, rope_cache

    rotated = int(cfg.head_dim * fraction)

    class PartialRotation(nn.Module):
        def __init__(self):
            super().__init__()
            cos, sin = rope_cache(rotated, cfg.block_size, cfg.rope_base)   # frequencies of the rotated part
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

        def forward(self, q, k, ctx):
            T = q.size(2)
            cos, sin = self.cos[ctx.start:ctx.start + T], self.sin[ctx.start:ctx.start + T]
            turn = lambda t: torch.cat([apply_rope(t[..., :rotated], cos, sin), t[..., rotated:]], dim=-1)
            return turn(q), turn(k)

    return {f"blocks.{i}.attn.positions": PartialRotation() for i in range(cfg.n_layer)}


def check(cfg) -> None:
    fraction = cfg.partial_rope
    if cfg.pos != "rope":
        raise ConfigError(f"partial_rope={fraction} with pos={cfg.pos!r}: it rotates part of RoPE's dimensions; "
                          "use pos: rope")
    if int(cfg.head_dim * fraction) % 2 or int(cfg.head_dim * fraction) < 2:
        raise ConfigError(f"partial_rope={fraction} with head_dim={cfg.head_dim}: the rotated part must be an even "
                          "number of dimensions, at least 2")


CHANGE = Change(name="partial_rope", values=(0.0, 0.25, 0.5), default=0.0,
                labels={0.25: "partial RoPE (25%)", 0.5: "partial RoPE (50%)"}, hf=None, plugs=plugs, check=check,
                claim=Claim(paper="Black et al. 2022, GPT-NeoX-20B (arXiv:2204.06745)", effect="none",
                            scale="125M-20B params: rotating 25% of the dimensions kept the loss and ran faster"))
