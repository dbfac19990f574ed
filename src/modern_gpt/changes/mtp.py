"""Multi-token prediction (Gloeckle et al. 2024; DeepSeek-V3): besides the next token, the final hidden state is
trained to predict the token after it, through one more small layer and a head of its own; its cross-entropy,
weighted by 0.3 (DeepSeek-V3's), is an auxiliary loss term. Generation ignores it: the logits are the model's."""

from . import Change, Claim

WEIGHT = 0.3


def plugs(cfg, on: bool) -> dict:
    import torch.nn as nn
    import torch.nn.functional as F

    class SecondToken(nn.Module):
        inits = {"norm.weight": "ones", "proj.weight": "residual", "head_norm.weight": "ones", "head.weight": "normal"}

        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(cfg.n_embd, eps=cfg.norm_eps)
            self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)
            self.head_norm = nn.RMSNorm(cfg.n_embd, eps=cfg.norm_eps)
            self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

        def forward(self, x, ctx):
            if ctx.targets is not None and x.size(1) > 1:
                h = x + self.proj(self.norm(x))
                logits = self.head(self.head_norm(h))[:, :-1]        # at position t: the token at t + 2
                ctx.terms["mtp"] = WEIGHT * F.cross_entropy(logits.reshape(-1, logits.size(-1)),
                                                            ctx.targets[:, 1:].reshape(-1))
            return x

    return {"final": SecondToken()}


CHANGE = Change(name="mtp", values=(False, True), default=False, labels={True: "multi-token prediction"},
                hf=None, plugs=plugs, neutral=True,
                claim=Claim(paper="Gloeckle et al. 2024, Better & Faster LLMs via Multi-token Prediction "
                                  "(arXiv:2404.19737); DeepSeek-AI 2024, DeepSeek-V3 (arXiv:2412.19437)",
                            effect="lower", scale="gains from ~3B params up (Gloeckle: worse below 1B; DeepSeek-V3: "
                                                  "15.7B and 228.7B MoE), measured on benchmarks"))
