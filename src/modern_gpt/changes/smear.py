"""Token shift (RWKV, Peng et al. 2023; modded-nanogpt's "smear", 2025): each position's input stream takes in a
learned share of the previous position's, x_t ← x_t + g ⊙ x_{t−1}, g per channel from 0 (the model starts as the
one without it). Decoding with the KV cache needs the previous token's input, which no key or value holds: the
change declares it as decoding state (one position of n_embd numbers per sequence), kept by the cache."""

from . import Change, Claim, DecodeState


def plugs(cfg, on: bool) -> dict:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Smear(nn.Module):
        inits = {"gate": "zeros"}

        def __init__(self):
            super().__init__()
            self.gate = nn.Parameter(torch.zeros(cfg.n_embd))

        def forward(self, x, ctx):
            held = ctx.held("inputs")                    # (B, 1, n_embd): the last stored token's input, or None
            if held is None:
                prev = F.pad(x, (0, 0, 1, 0))[:, :-1]    # position 0 has no previous token
            else:                                        # zeros before the first token, as the padding
                prev = torch.cat([held, x[:, :-1]], dim=1)
                held.copy_(x[:, -1:])
            return x + self.gate * prev

    return {"inputs": Smear()}


CHANGE = Change(name="smear", values=(False, True), default=False, labels={True: "token shift (smear)"},
                hf=None, plugs=plugs, neutral=True, state=(DecodeState(point="inputs", width="n_embd", keep=1),),
                claim=Claim(paper="Peng et al. 2023, RWKV (arXiv:2305.13048); modded-nanogpt speedrun records "
                                  "(smear, 2025)", effect="lower",
                            scale="124M params, FineWeb (speedrun: the same val loss in fewer steps)"))
