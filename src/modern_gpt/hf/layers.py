"""Per layer, what a family's code does differently: which layers slide or keep one chunk, which rotate with RoPE,
and how a per-layer window pattern reads as our two flags (attn_window, global_every).

The readers follow each family's transformers code (quoted in their docstrings), since config.json alone does not
say which layers slide: Qwen's max_window_layers, Gemma's pattern, Mistral's every layer. `window_flags` is the one
translation of a pattern into our flags, shared by explain, import-config and the weight import, so the three refuse
a pattern our flags cannot say with the same sentence. Pure Python.
"""

from __future__ import annotations

from ..core.errors import ConfigError
from .config_json import int_field


# families whose code gives every layer the one sliding_window (a layer_types in their file is not read)
EVERY_LAYER_SLIDES = ("mistral", "mixtral", "phi3", "qwen3_moe")


def layer_windows(cfg: dict, family: str, fam: dict, n_layer: int, rope: list[bool] | None = None) -> list[int | None]:
    """Per layer, the sliding window or None (full attention), as each family's transformers code decides: the
    file's layer_types where the family reads it; else Qwen2/3's `i >= max_window_layers` (default 28), SmolLM3's
    NoPE layers, Gemma's every pattern-th layer full, and every layer for Mistral, Mixtral, Phi-3 and Qwen3-MoE."""
    window = cfg.get("sliding_window", fam["defaults"].get("sliding_window"))
    if family in ("qwen2", "qwen3", "qwen3_moe", "smollm3") and not cfg.get("use_sliding_window", False):
        window = None
    if not window:
        return [None] * n_layer
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"sliding_window={window!r}: must be a positive integer or null")
    if family in EVERY_LAYER_SLIDES:
        return [window] * n_layer
    types = cfg.get("layer_types")
    if isinstance(types, list):
        if len(types) != n_layer:
            raise ConfigError(f"layer_types: {len(types)} entries for num_hidden_layers={n_layer}")
        return [window if t == "sliding_attention" else None for t in types]
    if family in ("qwen2", "qwen3"):               # transformers: sliding where i >= max_window_layers
        first = cfg.get("max_window_layers", 28)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise ConfigError(f"max_window_layers={first!r}: must be a layer index (0 or more)")
        return [window if i >= first else None for i in range(n_layer)]
    if family == "smollm3" and rope is not None:   # transformers: the NoPE layers slide
        return [None if r else window for r in rope]
    pattern = cfg.get("sliding_window_pattern", cfg.get("_sliding_window_pattern", fam.get("pattern")))
    if pattern:   # Gemma: every pattern-th layer (1-based) is full attention
        return [window if (i + 1) % pattern else None for i in range(n_layer)]
    return [window] * n_layer      # an unknown Llama-like family: every layer slides


def rope_layers(cfg: dict, where: str, family: str, fam: dict, n_layer: int) -> list[bool]:
    """Per layer, whether it rotates with RoPE. transformers (Llama 4, SmolLM3): `use_rope = no_rope_layers[i]`,
    so 1 marks a RoPE layer and 0 a NoPE one; without the list, every `no_rope_layer_interval`-th layer is NoPE."""
    if fam["pos"] != "rope":
        return [False] * n_layer
    if "nope" not in fam.get("models", ()):
        return [True] * n_layer
    flags = cfg.get("no_rope_layers")
    if flags:
        if not isinstance(flags, list) or len(flags) < n_layer or any(f not in (0, 1) for f in flags):
            raise ConfigError(f"{where}no_rope_layers: must list 0 or 1 for each of the {n_layer} layers")
        return [bool(f) for f in flags[:n_layer]]
    interval = int_field(cfg, where, "no_rope_layer_interval", default=4 if family == "llama4_text" else None)
    if interval is None:
        raise ConfigError(f"{where}no_rope_layers: missing (and no no_rope_layer_interval)")
    return [(i + 1) % interval != 0 for i in range(n_layer)]


def layer_chunks(cfg: dict, where: str, rope: list[bool], n_layer: int) -> list[int | None]:
    """Llama 4: the chunked-attention layers (layer_types, else the RoPE layers) keep at most one chunk."""
    chunk = int_field(cfg, where, "attention_chunk_size")
    if chunk is None:
        return [None] * n_layer
    types = cfg.get("layer_types")
    if isinstance(types, list):
        if len(types) != n_layer:
            raise ConfigError(f"{where}layer_types: {len(types)} entries for num_hidden_layers={n_layer}")
        return [chunk if t == "chunked_attention" else None for t in types]
    return [chunk if r else None for r in rope]


def layer_list(layers: list[int], most: int = 8) -> str:
    """1-based layer numbers in words: 'layer 3', 'layers 1-28', 'layers 6, 12, 18', cut after `most` pieces."""
    runs: list[list[int]] = []
    for i in layers:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    parts = [str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs]
    return ("layers " if len(layers) > 1 else "layer ") + ", ".join(parts[:most]) + (", ..." if len(parts) > most else "")


def window_flags(windows: list[int | None], context: int | None = None) -> tuple[int, int] | str:
    """Per-layer windows as our (attn_window, global_every), or one sentence naming the flag that cannot say them.

    Ours: every local layer has the one window attn_window, and layer i (1-based) is full attention when
    global_every divides i (0: none is). So all-sliding is (W, 0), Gemma 3's 5 local + 1 full is (W, 6), gpt-oss's
    alternation (W, 2); first-N-full (Qwen's max_window_layers) or two window sizes are not expressible. A window
    of `context` tokens or more (the file's max_position_embeddings) hides nothing within the context: (0, 0)."""
    sizes = sorted({w for w in windows if w is not None})
    if not sizes or (context is not None and sizes[0] >= context):
        return 0, 0
    if len(sizes) > 1:
        return (f"windows of {', '.join(f'{w:,}' for w in sizes)} tokens in different layers: attn_window is one "
                "window for every local layer")
    full = [i for i, w in enumerate(windows, 1) if w is None]
    if not full:
        return sizes[0], 0
    k = full[0]
    if full == list(range(k, len(windows) + 1, k)):
        return sizes[0], k
    return (f"full attention in {layer_list(full)} of {len(windows)} (1-based), the others a {sizes[0]:,}-token "
            "window: global_every can only make every k-th layer full (layers k, 2k, ...), or none")
