"""The names every switch of the configs accepts, defined here once and torch-free.

nn/model.py registers one module per name (its tables must have exactly these keys: it checks at import),
training/ one behaviour per device, compile mode and dtype. A new norm, position scheme or MLP is its name
here, its class and table entry in nn/model.py, and its ladder label (pipeline/labels.py); an optimiser is
its name here and its branch in training/loop.make_optimizer.
"""

from __future__ import annotations

import math
from typing import Callable

NORMS = ("layernorm", "rmsnorm")                 # centre + scale + bias | scale only
POSITIONS = ("learned", "rope", "none")         # a table added | q and k rotated | NoPE: no position signal
PLACEMENTS = ("pre", "post")                    # the norm inside the residual branch | after the sum (2017)


def _swiglu_hidden(n_embd: int, multiple: int) -> int:
    """2/3 of GELU's 4·d keeps the three matrices near GELU's two; rounded up to a multiple of `multiple`."""
    return multiple * math.ceil(int(2 / 3 * 4 * n_embd) / multiple)


# each MLP's name and its own rule for the hidden width from (n_embd, mlp_multiple) (mlp_hidden > 0 overrides it)
MLP_HIDDEN: dict[str, Callable[[int, int], int]] = {
    "gelu": lambda n_embd, multiple: 4 * n_embd,     # Step 1: 4·d hidden units
    "swiglu": _swiglu_hidden,
    "relu2": lambda n_embd, multiple: 4 * n_embd,    # ReLU² (nanochat, modded-nanogpt): two matrices, 4·d, as GELU
}
MLPS = tuple(MLP_HIDDEN)

DEVICES = ("cpu", "cuda", "auto")
COMPILE_MODES = ("none", "default", "reduce-overhead", "max-autotune")   # torch.compile's modes, or eager
DTYPES = ("float32", "bfloat16")
OPTIMIZERS = ("adamw", "muon")   # AdamW on every weight | Muon on the blocks' matrices, AdamW on the rest


def registered(axis: str, names: tuple[str, ...], table: dict) -> dict:
    """`table` (name → module) if its keys are exactly `names`, else a TypeError naming the difference."""
    if set(table) != set(names):
        raise TypeError(f"{axis}: the modules registered ({', '.join(table)}) are not the config's names "
                        f"({', '.join(names)})")
    return table
