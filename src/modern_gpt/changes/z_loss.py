"""z-loss (PaLM, Chowdhery et al. 2022): an auxiliary term 1e-4 · log²Z, Z the softmax's normaliser of each
position's logits, pulls log Z towards 0 so the logits cannot drift to large values; the logits themselves are
untouched. A loss-only change: it owns no parameters and computes nothing else."""

from . import Change, Claim

WEIGHT = 1e-4


def plugs(cfg, on: bool) -> dict:
    import torch.nn as nn

    class ZLoss(nn.Module):
        def forward(self, logits, ctx):
            if ctx.targets is not None:
                ctx.terms["z_loss"] = WEIGHT * logits.float().logsumexp(-1).square().mean()
            return logits

    return {"output": ZLoss()}


CHANGE = Change(name="z_loss", values=(False, True), default=False, labels={True: "z-loss"},
                hf=None, plugs=plugs, neutral=True,
                claim=Claim(paper="Chowdhery et al. 2022, PaLM (arXiv:2204.02311)", effect="stability",
                            scale="8B-540B params: stable training"))
