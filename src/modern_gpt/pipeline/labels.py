"""What a reader sees: a row's label from the change it makes, by the change's declaration (changes/). Display text
only: no run depends on it (a change of a new kind's own label lives in its file, which its own rows import)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..changes.builtin import declared

if TYPE_CHECKING:
    from ..config import ModelConfig

BASELINE = "Step 1 baseline"
BOOK = "the book's design"          # the second ladder's row 0: the main ladder's last row


def layer_pattern(cfg: ModelConfig) -> str:
    """The layers as nanochat writes them, first to last: S a sliding-window (short) layer, L a full (long) one."""
    return "".join("L" if w is None else "S" for w in cfg.windows)


def change_name(flag: str, value: Any, cfg: ModelConfig) -> str:
    """'RMSNorm', 'GQA (kv=2)', 'MQA (kv=1)', 'multi-head', 'logit soft-cap 15', 'sliding window 16 (SSSL)', or
    'flag=value'. cfg: the row's config (the head count, the layer pattern)."""
    n_head = cfg.n_head
    if flag in ("attn_window", "global_every") and cfg.attn_window:
        return f"sliding window {cfg.attn_window} ({layer_pattern(cfg)})"
    if flag == "attn_window":
        return "full attention"
    if flag == "n_kv_head":
        if value == n_head:
            return "multi-head"
        return f"{'MQA' if value == 1 else 'GQA'} (kv={value})"
    if flag == "logit_softcap" and value:
        return f"logit soft-cap {value:g}"
    change = declared(flag)                              # each change's labels: changes/ (builtin.py, or its file)
    return change.label(value) if change is not None else f"{flag}={value}"


def row_label(flag: str, value: Any, cfg: ModelConfig, changed: bool) -> str:
    """'+ RMSNorm', or '+ QK-norm (no change)' when the flag's two values agree."""
    return f"+ {change_name(flag, value, cfg)}" + ("" if changed else " (no change)")


def revert_label(flag: str, value: Any, cfg: ModelConfig) -> str:
    """A leave-one-out row: the full model without this change, '− RMSNorm'."""
    return f"− {change_name(flag, value, cfg)}"
