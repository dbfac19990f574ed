"""Sandwich norm (Gemma 2 and 3; OLMo 2's reordered norm keeps the second half): besides the pre-norm inside each
branch, a norm on each branch's output before it joins the residual stream, x + norm(attn(norm(x))). The block
builds the two extra norms because the wiring names them."""

from ..core.errors import ConfigError
from . import Change, Claim

NORMS = ("norm1", "norm2", "post_attn_norm", "post_mlp_norm")


def sandwich(block, x, kv, ctx):
    x = x + block.post_attn_norm(block.attn(block.norm1(x), kv, ctx))
    return x + block.post_mlp_norm(block.mlp(block.norm2(x)))


def plugs(cfg, on: bool) -> dict:
    from ..nn.plugs import Wiring
    return {f"blocks.{i}.wiring": Wiring(sandwich, norms=NORMS) for i in range(cfg.n_layer)}


def check(cfg) -> None:
    if cfg.norm_placement != "pre":
        raise ConfigError(f"sandwich_norm=true with norm_placement={cfg.norm_placement!r}: the sandwich adds norms "
                          "to pre-norm's branches; use norm_placement: pre")


CHANGE = Change(name="sandwich_norm", values=(False, True), default=False, labels={True: "sandwich norm"},
                hf=None, plugs=plugs, check=check,
                claim=Claim(paper="Gemma Team 2024, Gemma 2 (arXiv:2408.00118); OLMo Team 2025, 2 OLMo 2 Furious "
                                  "(arXiv:2501.00656)", effect="stability",
                            scale="2B-27B params (Gemma 2), 7B-13B (OLMo 2): fewer loss spikes"))
