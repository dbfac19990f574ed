"""A mixture of experts in place of the MLP (Mixtral, DeepSeekMoE, Qwen3-MoE, gpt-oss): a router picks the top 2 of
4 SwiGLU experts for each token and mixes their outputs by its renormalised softmax weights. Each expert is half the
dense MLP's width, so a token's active parameters match the dense MLP's. Every expert runs on every token and the
unpicked ones are weighted 0: the same result as dispatching, with shapes that batched seeds can stack."""

from . import Change, Claim

EXPERTS, TOP = 4, 2


def plugs(cfg, on: bool) -> dict:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    width = max(1, cfg.hidden // TOP)

    class MoE(nn.Module):
        inits = {"router.weight": "normal",
                 **{f"experts.{e}.{n}.weight": "residual" if n == "down" else "normal"
                    for e in range(EXPERTS) for n in ("gate", "up", "down")}}
        optim = {"router.weight": "decay"}              # a router: AdamW, not Muon

        def __init__(self):
            super().__init__()
            self.router = nn.Linear(cfg.n_embd, EXPERTS, bias=False)
            self.experts = nn.ModuleList(nn.ModuleDict({"gate": nn.Linear(cfg.n_embd, width, bias=False),
                                                        "up": nn.Linear(cfg.n_embd, width, bias=False),
                                                        "down": nn.Linear(width, cfg.n_embd, bias=False)})
                                         for _ in range(EXPERTS))

        def forward(self, x):
            scores = self.router(x).softmax(-1)                            # (B, T, experts)
            top, picked = scores.topk(TOP, dim=-1)
            weights = torch.zeros_like(scores).scatter(-1, picked, top / top.sum(-1, keepdim=True))
            outs = torch.stack([e["down"](F.silu(e["gate"](x)) * e["up"](x)) for e in self.experts], dim=-1)
            return (outs * weights.unsqueeze(-2)).sum(-1)                  # (B, T, n_embd)

    return {f"blocks.{i}.mlp": MoE() for i in range(cfg.n_layer)}


CHANGE = Change(name="moe", values=(False, True), default=False, labels={True: "MoE (top-2 of 4)"},
                hf=None, plugs=plugs, drops=("blocks.*.mlp.*",),
                claim=Claim(paper="Jiang et al. 2024, Mixtral of Experts (arXiv:2401.04088); Dai et al. 2024, "
                                  "DeepSeekMoE (arXiv:2401.06066)", effect="lower",
                            scale="2B-145B total params: a lower loss at the same active params"))
