"""`explain(config)`: every field of a config.json in words, then the figures that follow from them.

One line per field (text_config's prefixed; unknown ones said to be unknown, never dropped), then
head_dim, the MLP ratio, the parameter count (computed from the shapes) and the KV cache with and
without grouped-query attention, ending with the sentence on what the K/V heads buy.
"""

from __future__ import annotations

import json
from typing import Any

from ..serving.kv_cache import dtype_bytes, human, kv_cache
from .configs import FIELDS, NM, Arch, normalise, param_counts


def _value(v: Any, width: int = 48) -> str:
    if isinstance(v, dict):
        return "{...}" if len(json.dumps(v)) > width else json.dumps(v)
    if isinstance(v, list) and len(json.dumps(v)) > width:
        kinds = sorted({str(x) for x in v})
        return f"[{len(v)} entries: {', '.join(kinds)}]" if len(kinds) <= 3 else f"[{len(v)} entries]"
    s = json.dumps(v)
    return s if len(s) <= width else s[: width - 3] + "..."


def field_lines(cfg: dict, prefix: str = "") -> list[str]:
    lines = []
    for key, value in cfg.items():
        name = prefix + key
        if key in FIELDS:
            meaning, flag = FIELDS[key]
            where = NM if flag == NM else f"model.{flag}"
            lines.append(f"{name} = {_value(value)}: {meaning} [{where}]")
        else:
            lines.append(f"{name} = {_value(value)}: unknown (not in this table) [{NM}]")
        if key == "text_config" and isinstance(value, dict):
            lines.extend(field_lines(value, prefix + "text_config."))
    return lines


def _sentence(a: Arch, gqa, mha, context: int, batch: int, dtype: str, weights_bytes: int) -> str:
    group = a.n_head // a.n_kv_head
    if group == 1:
        return (f"num_key_value_heads = num_attention_heads = {a.n_head}: plain multi-head attention, one K/V head "
                f"per query head, so nothing is saved: {human(gqa.bytes_per_token)} per token, "
                f"{human(gqa.bytes_per_sequence)} per {context:,}-token sequence.")
    return (f"\"num_key_value_heads\": {a.n_kv_head} next to \"num_attention_heads\": {a.n_head} means each K/V head "
            f"serves {group} query heads, so the {dtype} KV cache holds {human(gqa.bytes_per_token)} per token "
            f"instead of {human(mha.bytes_per_token)} and {human(gqa.bytes_per_sequence)} instead of "
            f"{human(mha.bytes_per_sequence)} per {context:,}-token sequence ({group}x less); it matters when long "
            f"contexts x many concurrent sequences make the cache, not the weights, the limit on how many users fit "
            f"on a GPU: {batch} such {'sequence needs' if batch == 1 else 'sequences need'} {human(gqa.bytes_total)} instead of {human(mha.bytes_total)}, "
            f"next to {human(weights_bytes)} of {dtype} weights.")


def derived_lines(a: Arch, context: int | None, batch: int, dtype: str) -> list[str]:
    nbytes = dtype_bytes(dtype)
    context = context or a.max_positions
    p = a.prefix
    lines = []
    if a.head_dim_read:
        how = "read from the file" if "head_dim" not in a.defaults_used else "the family's default"
        note = "" if a.head_dim * a.n_head == a.hidden else \
            f"; not hidden/heads = {a.hidden}/{a.n_head} = {a.hidden / a.n_head:g}"
        lines.append(f"head_dim: {a.head_dim} ({how}{note})")
    else:
        lines.append(f"head_dim: {a.head_dim} (not in the file: {p}hidden_size / num_attention_heads = "
                     f"{a.hidden} / {a.n_head})")
    kind = "gated (3 matrices)" if a.gated else "plain (2 matrices)"
    lines.append(f"MLP ratio: intermediate / hidden = {a.intermediate} / {a.hidden} = "
                 f"{a.intermediate / a.hidden:.4g}, {kind}, activation {a.activation}")
    if a.defaults_used:
        lines.append(f"not in the file, the {a.family} default taken: {', '.join(a.defaults_used)}")
    pc = param_counts(a)
    lines.append(f"parameters (computed from the shapes, not read): {pc['total']:,} = embedding {pc['embedding']:,} "
                 f"+ attention {pc['attention']:,} + MLP {pc['mlp']:,} + norms {pc['norms']:,} + lm_head "
                 f"{pc['lm_head']:,}" + (" (tied to the embedding)" if a.tied else " (untied)")
                 + (" [language model only]" if a.prefix else ""))
    sliding = sum(w is not None for w in a.windows)
    gqa = kv_cache(a.n_layer, a.n_kv_head, a.head_dim, nbytes, context, batch, a.windows)
    mha = kv_cache(a.n_layer, a.n_head, a.head_dim, nbytes, context, batch, a.windows)
    lines.append(f"KV cache ({dtype}, {nbytes} bytes/number): 2 x {a.n_layer} layers x {a.n_kv_head} K/V heads x "
                 f"{a.head_dim} x {nbytes} = {human(gqa.bytes_per_token)} per token ({gqa.bytes_per_token:,} bytes)")
    if sliding:
        w = next(w for w in a.windows if w)
        lines.append(f"sliding window: {sliding} of {a.n_layer} layers keep at most {w:,} tokens, "
                     f"{a.n_layer - sliding} keep all")
    lines.append(f"KV cache per sequence at {context:,} tokens: {human(gqa.bytes_per_sequence)} "
                 f"({gqa.bytes_per_sequence:,} bytes); x {batch} {'sequence' if batch == 1 else 'sequences'}: {human(gqa.bytes_total)}")
    lines.append(f"with one K/V head per query head (plain multi-head, {a.n_head} K/V heads): "
                 f"{human(mha.bytes_per_token)} per token, {human(mha.bytes_per_sequence)} per sequence, "
                 f"{human(mha.bytes_total)} for {batch}; ratio {mha.bytes_per_token / gqa.bytes_per_token:g}x")
    lines.append(_sentence(a, gqa, mha, context, batch, dtype, pc["total"] * nbytes))
    return lines


def explain(config: dict, context: int | None = None, batch: int = 1, dtype: str = "bf16") -> str:
    a = normalise(config)
    name = config.get("_name_or_path") or (config.get("architectures") or ["?"])[0]
    out = [f"{name}: {a.family}, {len(config)} fields" + (f" ({len(config['text_config'])} in text_config)"
                                                            if isinstance(config.get("text_config"), dict) else "")]
    out += field_lines(config)
    out += ["", "derived:"]
    out += derived_lines(a, context, batch, dtype)
    return "\n".join(out)
