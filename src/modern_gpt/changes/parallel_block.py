"""A parallel block (GPT-J, PaLM): attention and the MLP read the same normalised input, side by side, and both
add to the residual stream at once: x + attn(norm(x)) + mlp(norm(x)), one norm shared where the sequential block
has two. The two branches' matrices can run as one, and PaLM reports ~15% faster training at large scale."""

from ..core.errors import ConfigError
from . import Change, Claim


def parallel(block, x, kv, ctx):
    h = block.norm1(x)                                  # one norm, shared by both branches
    return x + block.attn(h, kv, ctx) + block.mlp(h)


def plugs(cfg, on: bool) -> dict:
    from ..nn.plugs import Wiring
    wiring = Wiring(parallel, norms=("norm1",))         # the block builds no second norm: nothing left for it
    return {f"blocks.{i}.wiring": wiring for i in range(cfg.n_layer)}


def check(cfg) -> None:
    if cfg.norm_placement != "pre":
        raise ConfigError(f"parallel_block=true with norm_placement={cfg.norm_placement!r}: the parallel block "
                          "normalises inside its branches (pre-norm); use norm_placement: pre")


CHANGE = Change(name="parallel_block", values=(False, True), default=False, labels={True: "parallel block"},
                hf=None, plugs=plugs, check=check, drops=("blocks.*.norm2.*",),
                claim=Claim(paper="Chowdhery et al. 2022, PaLM (arXiv:2204.02311); Wang & Komatsuzaki 2021, GPT-J",
                            effect="speed", scale="8B-540B params: ~15% faster training, a small cost at 8B that "
                                                  "vanishes at 62B"))
