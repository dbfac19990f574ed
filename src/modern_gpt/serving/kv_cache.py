"""The KV-cache arithmetic: what keeping every past token's keys and values costs, per token and per sequence.

Each layer stores a key and a value vector per K/V head per token: 2 × kv_heads × head_dim numbers. A layer
with a sliding window keeps at most `window` tokens, so at context C a sequence holds
Σ over layers of 2 × kv_heads × head_dim × bytes × min(C, window_of_layer), plus the fixed-size decoding state a
change may keep besides (a token shift's last input: changes.DecodeState), `state_numbers` numbers a sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core.errors import ConfigError

DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "fp8": 1, "int8": 1}


def dtype_bytes(name: str) -> int:
    """Bytes per number of a dtype name: fp32/float32 4, bf16/fp16 2, fp8/int8 1."""
    if name not in DTYPE_BYTES:
        raise ConfigError(f"dtype={name!r}: allowed values are {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[name]


@dataclass(frozen=True)
class KVCacheSize:
    """What a KV cache costs in bytes (the tensors themselves: nn.model.KVCache)."""
    bytes_per_token: int          # every layer's K and V for one token, no window reached
    bytes_per_sequence: int       # one sequence at `context` tokens, sliding-window layers capped
    bytes_total: int              # bytes_per_sequence × batch
    context: int
    batch: int


def kv_cache(n_layer: int, n_kv_head: int, head_dim: int, dtype: str | int, context: int, batch: int = 1,
             windows: Sequence[int | None] | None = None, state_numbers: int = 0) -> KVCacheSize:
    """The cache of `batch` sequences of `context` tokens. windows: one entry per layer, None = full attention.
    state_numbers: what each sequence keeps besides K and V, whatever its length (changes.decode_numbers)."""
    nbytes = dtype if isinstance(dtype, int) else dtype_bytes(dtype)
    for name, v in (("n_layer", n_layer), ("n_kv_head", n_kv_head), ("head_dim", head_dim),
                    ("context", context), ("batch", batch), ("dtype bytes", nbytes)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"{name}={v!r}: must be a positive integer")
    windows = [None] * n_layer if windows is None else list(windows)
    if len(windows) != n_layer:
        raise ConfigError(f"windows: {len(windows)} entries for {n_layer} layers")
    per_layer_token = 2 * n_kv_head * head_dim * nbytes
    if not isinstance(state_numbers, int) or isinstance(state_numbers, bool) or state_numbers < 0:
        raise ConfigError(f"state_numbers={state_numbers!r}: must be a whole number >= 0")
    per_seq = sum(per_layer_token * (context if w is None else min(context, w)) for w in windows)
    per_seq += state_numbers * nbytes
    return KVCacheSize(per_layer_token * n_layer, per_seq, per_seq * batch, context, batch)


def human(nbytes: float) -> str:
    """1024-based units, at most two decimals: 131072 → '128 KiB', 2**30 → '1 GiB'."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, i = float(nbytes), 0
    while v >= 1024 and i < len(units) - 1:
        v, i = v / 1024, i + 1
    return f"{v:.2f}".rstrip("0").rstrip(".") + f" {units[i]}"
