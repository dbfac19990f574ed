"""The built-in switches, declared as every change is (changes/__init__.py's Change): fields of ModelConfig (the
book's six, the 2017 wiring and the second ladder's) and TrainConfig's optimiser. Their model code is inline in
nn/model.py (and training/loop.py for the optimiser), so that the model reads top to bottom; the Hugging Face
bridge maps them by config/hf_class.py's allow-list. Display text: no run imports this file.

`values` are the values each takes; for a numeric field (n_kv_head, logit_softcap, attn_window) examples of them,
which the every-change test (tests/test_changes.py) switches on at its tiny shape (4 heads, 16 tokens). `drops`: the
weights of the design without it that a value removes or reshapes (the test copies every other one across).
"""

from __future__ import annotations

from ..config.choices import MLPS, NORMS, OPTIMIZERS, PLACEMENTS, POSITIONS
from . import Change, plugged, plugged_names

HF_RULE = {"rule": "config/hf_class.py"}      # the allow-list that maps (or refuses) a built-in switch


def _builtin(name: str, values: tuple, default, labels: dict, section: str = "model", drops: tuple = (),
             neutral: bool = False) -> Change:
    return Change(name, values, default, labels, hf=HF_RULE, section=section,
                  source="modern_gpt/changes/builtin.py", drops=drops, neutral=neutral)


BUILTIN: tuple[Change, ...] = (
    # the book's six
    _builtin("norm", NORMS, "layernorm", {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"}, drops=("*norm*.bias",)),
    _builtin("pos", POSITIONS, "learned", {"rope": "RoPE", "learned": "learned positions", "none": "NoPE"},
             drops=("pos.table.weight",)),
    _builtin("mlp", MLPS, "gelu", {"swiglu": "SwiGLU", "gelu": "GELU", "relu2": "ReLU²"}, drops=("blocks.*.mlp.*",)),
    _builtin("bias", (True, False), True, {False: "no bias", True: "bias"}, drops=("*.bias",),
             neutral=True),                                # biases start at 0: removing them changes no logit yet
    _builtin("n_kv_head", (4, 2, 1), 4, {},                      # labels.change_name: 'GQA (kv=2)', 'MQA (kv=1)'
             drops=("blocks.*.attn.k_proj.*", "blocks.*.attn.v_proj.*")),
    _builtin("qk_norm", (False, True), False, {True: "QK-norm", False: "no QK-norm"}),
    # 2017's wiring (baseline.norm_placement: post)
    _builtin("norm_placement", PLACEMENTS, "pre", {"pre": "pre-norm", "post": "post-norm"}),
    # the second ladder's (params.yaml's beyond:)
    _builtin("tie_embeddings", (True, False), True, {False: "untied head", True: "tied head"},
             neutral=True),                                # the head starts as a copy of the token matrix
    _builtin("logit_softcap", (0.0, 15.0), 0.0, {0.0: "no logit soft-cap"}),   # labels.change_name: 'logit soft-cap 15'
    _builtin("attn_window", (0, 8), 0, {}),                       # labels.change_name: 'sliding window 8 (SL)'
    _builtin("optimizer", OPTIMIZERS, "adamw", {"muon": "Muon", "adamw": "AdamW"}, section="train",
             neutral=True),                                # the same model: only training differs
)


def declared(name: str) -> Change | None:
    """A built-in switch's declaration or a change file's, or None."""
    return next((c for c in BUILTIN if c.name == name), None) or plugged(name)


def every() -> tuple[Change, ...]:
    """Every change there is: the built-in switches, then each file's."""
    return BUILTIN + tuple(plugged(n) for n in plugged_names())
