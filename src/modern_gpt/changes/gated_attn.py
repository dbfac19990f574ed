"""Gated attention (Qiu et al. 2025, Qwen): each head's output is gated elementwise by a sigmoid of the layer's
input before o_proj, y ← y ⊙ g(x·W), which adds a non-linearity between the value and output projections and keeps
a head from having to attend somewhere when it has nothing to add. Here g = 2·sigmoid and W starts at zero, so
the gate starts open at exactly 1: the model starts as the one without it (the paper's g is sigmoid)."""

from . import Change, Claim


def plugs(cfg, on: bool) -> dict:
    import torch
    import torch.nn as nn

    class OutputGate(nn.Module):
        inits = {"proj.weight": "zeros"}                 # 2·sigmoid(0) = 1: the gate starts open

        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(cfg.n_embd, cfg.n_head * cfg.head_dim, bias=False)

        def forward(self, y, x, ctx):
            return y * 2 * torch.sigmoid(self.proj(x))     # (B, T, n_head · head_dim)

    return {f"blocks.{i}.attn.mix_heads": OutputGate() for i in range(cfg.n_layer)}


CHANGE = Change(name="gated_attn", values=(False, True), default=False, labels={True: "gated attention"},
                hf=None, plugs=plugs, neutral=True,
                claim=Claim(paper="Qiu et al. 2025, Gated Attention for Large Language Models (arXiv:2505.06708)",
                            effect="lower", scale="1.7B dense and 15B MoE params, 400B-3.5T tokens"))
