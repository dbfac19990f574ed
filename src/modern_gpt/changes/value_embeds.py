"""Value embeddings (modded-nanogpt's speedruns, 2024-25): each layer looks its tokens up in a table of its own and
adds the result to attention's values, v ← v + E_l[token], so the token's identity reaches every layer's values
directly. The tables start at zero (the model starts as the one without them) and train with AdamW without weight
decay, as embeddings do, not with Muon as the blocks' matrices would by their rank."""

from . import Change, Claim


def plugs(cfg, on: bool) -> dict:
    import torch.nn as nn

    class ValueEmbedding(nn.Module):
        inits = {"table.weight": "zeros"}                # starts as the model without it
        optim = {"table.weight": "no_decay"}             # an embedding table, not a matrix for Muon

        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(cfg.vocab_size, cfg.n_kv_head * cfg.head_dim)

        def forward(self, q, k, v, ctx):
            B, _, T, hd = v.shape
            e = self.table(ctx.idx).view(B, T, -1, hd).transpose(1, 2)     # (B, n_kv_head, T, head_dim)
            return q, k, v + e

    return {f"blocks.{i}.attn.mix_values": ValueEmbedding() for i in range(cfg.n_layer)}


CHANGE = Change(name="value_embeds", values=(False, True), default=False, labels={True: "value embeddings"},
                hf=None, plugs=plugs, neutral=True,
                claim=Claim(paper="Jordan et al. 2024-25, modded-nanogpt speedrun records (value embeddings)",
                            effect="lower", scale="124M params, FineWeb: the same val loss in fewer steps"))
