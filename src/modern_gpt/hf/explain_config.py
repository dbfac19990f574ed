"""`explain(config)`: every field of a config.json in words, then the figures that follow from them.

One line per field (text_config's prefixed; unknown ones said to be unknown, never dropped), then what the
family's code builds (head_dim, the MLP or the experts and their router, latent attention, NoPE layers,
windows or chunks, attention sinks, RoPE scaling), the parameters (total and active per token, computed from
the shapes), the weights' bytes, and the KV cache next to what plain multi-head attention would cache, ending
with the sentence on what the experts and the K/V layout buy. The first line says how far the figures can be
trusted: a family this tool does not know is read the Llama way and says so, and a field whose feature is not
modelled leaves out the figures it changes. For such a family, where transformers builds it, the parameters are
transformers' own count instead (hf/meta.py: the model built on the meta device), labelled as such; a file the
Llama way cannot read at all gets that count alone.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import ConfigError
from ..serving.kv_cache import dtype_bytes, human
from .arch import Arch, normalise
from .counts import active_params, kv_caches, kv_numbers, param_counts, weight_bytes
from .model_types import MODEL_TYPES, text_part
from .fields import FIELDS, FIGURES, NM
from .layers import window_flags
from .meta import PARTS, MetaCount, meta_count

EVERY_MODEL_HAS = ("embedding", "attention", "norms", "lm_head")    # printed even at 0: a tied head, bare norms


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


def billions(n: int) -> str:
    return f"{n / 1e9:.1f} B" if n >= 1e9 else f"{n / 1e6:.0f} M"


def _sentence(a: Arch, gqa, mha, context: int, batch: int, dtype: str, weights: str) -> str:
    group = a.n_head // a.n_kv_head
    if a.mla is not None:
        return (f"\"kv_lora_rank\": {a.mla.kv_rank} with \"qk_rope_head_dim\": {a.mla.rope} means each layer caches "
                f"one {a.mla.kv_rank}-number latent and one shared {a.mla.rope}-number RoPE key per token, from which "
                f"all {a.n_head} heads' keys and values are rebuilt, so the {dtype} KV cache holds "
                f"{human(gqa.bytes_per_token)} per token instead of {human(mha.bytes_per_token)} "
                f"({mha.bytes_per_token / gqa.bytes_per_token:.1f}x less) and {human(gqa.bytes_total)} instead of "
                f"{human(mha.bytes_total)} for {batch} x {context:,} tokens, next to {weights}; the price is the "
                f"up-projections each step, which an implementation can fold into the query and output matrices.")
    if group == 1:
        return (f"num_key_value_heads = num_attention_heads = {a.n_head}: plain multi-head attention, one K/V head "
                f"per query head, so nothing is saved: {human(gqa.bytes_per_token)} per token, "
                f"{human(gqa.bytes_per_sequence)} per {context:,}-token sequence.")
    return (f"\"num_key_value_heads\": {a.n_kv_head} next to \"num_attention_heads\": {a.n_head} means each K/V head "
            f"serves {group} query heads, so the {dtype} KV cache holds {human(gqa.bytes_per_token)} per token "
            f"instead of {human(mha.bytes_per_token)} and {human(gqa.bytes_per_sequence)} instead of "
            f"{human(mha.bytes_per_sequence)} per {context:,}-token sequence ({group}x less); it matters when long "
            f"contexts x many concurrent sequences make the cache, not the weights, the limit on how many users fit "
            f"on a GPU: {batch} such {'sequence needs' if batch == 1 else 'sequences need'} {human(gqa.bytes_total)} "
            f"instead of {human(mha.bytes_total)}, next to {weights}.")


def _moe_sentence(a: Arch, total: int, active: int, weights: str) -> str:
    m = a.moe
    shared = f" (and the {m.shared} shared one{'s' if m.shared > 1 else ''})" if m.shared else ""
    return (f"\"num_experts_per_tok\": {m.top_k} next to \"{m.experts_key}\": {m.experts} means each token runs "
            f"{m.top_k} of the {m.experts} routed experts{shared} in each MoE layer: {billions(active)} of the "
            f"{billions(total)} parameters work per token, so a token costs the compute of a {billions(active)} "
            f"dense model ({total / active:.1f}x less than all of them); what the experts do not buy is memory: "
            f"any token may pick any expert, so all {billions(total)} must be loaded, "
            + (f"{weights}." if weights else "in bytes the file does not let this tool size (see weights' bytes)."))


def _rope_scaling(a: Arch) -> str:
    rs = a.rope_scaling
    kind = rs.get("rope_type", rs.get("type"))
    factor = rs.get("factor")
    orig = rs.get("original_max_position_embeddings")
    head = f"RoPE scaling ({kind}): factor {factor:g}" if isinstance(factor, (int, float)) else \
        f"RoPE scaling ({kind})"
    if orig:
        head += (f", trained at {orig:,} tokens (original_max_position_embeddings), the file's context "
                 f"{a.max_positions:,} ({a.max_positions / orig:g}x)")
    o = f"{orig:,}" if orig else "the original"
    if kind == "linear":
        what = f"every frequency is divided by {factor:g}: positions are squeezed so {factor:g}x more fit"
    elif kind == "dynamic":
        what = (f"NTK-aware: once a sequence passes {o} tokens the base is raised with its length, so the "
                "lowest frequencies stretch the most and the highest hardly at all")
    elif kind == "yarn":
        fast, slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)
        what = (f"YaRN: dimensions that turn more than beta_fast = {fast:g} times within {o} tokens keep their "
                f"frequency, those turning fewer than beta_slow = {slow:g} times are divided by {factor:g}, a ramp "
                "in between, and the attention logits get a temperature correction (mscale)")
    elif kind == "llama3":
        low, high = rs.get("low_freq_factor", 1), rs.get("high_freq_factor", 4)
        what = (f"wavelengths shorter than {o}/{high:g} tokens keep their frequency, those longer than {o}/{low:g} "
                f"are stretched {factor:g}x (frequency / {factor:g}), a smooth blend in between: the slow dimensions "
                "that carry long-range position are the ones stretched")
    elif kind == "longrope":
        n = len(rs.get("long_factor") or [])
        what = (f"LongRoPE: one stretch factor per frequency ({n} values): short_factor up to {o} tokens, "
                "long_factor past it, and the attention is rescaled")
    else:
        what = "a kind this tool does not explain"
    return f"{head}; {what}"


def _layer_lines(a: Arch) -> list[str]:
    """What the hybrid layers change: windows or chunks, NoPE layers, attention sinks."""
    lines, L = [], a.n_layer
    capped = sum(w is not None for w in a.windows)
    if capped:
        w = next(w for w in a.windows if w)
        if a.window_kind == "chunk":
            lines.append(f"chunked attention: {capped} of {L} layers attend only within {w:,}-token chunks "
                         f"(attention_chunk_size), so each keeps at most {w:,} tokens of cache, like a window; "
                         f"{L - capped} attend to the whole context and keep all")
            lines.append("chunked attention has no flag of ours: attn_window slides with each query, a chunk "
                         "starts afresh every attention_chunk_size tokens")
        else:
            lines.append(f"sliding window: {capped} of {L} layers keep at most {w:,} tokens, {L - capped} keep all "
                         f"(a sliding layer attends to the last {w:,} tokens only; older ones reach it through "
                         "the full layers)")
            lines.append(_window_line(a, w))
    nope = a.rope_layers.count(False) if a.pos == "rope" else 0
    if nope:
        lines.append(f"NoPE: {nope} of {L} layers rotate nothing (no_rope_layers 0; in transformers "
                     "use_rope = no_rope_layers[i], so 1 marks a RoPE layer): they see order only through the "
                     "causal mask, and change no count or cache"
                     + ("; the QK-norm (L2, no weights) runs on the RoPE layers only" if a.qk_norm_kind == "l2" else ""))
    if a.sinks:
        lines.append(f"attention sinks: every head has one learned logit that joins its softmax with no value "
                     f"behind it, so a head can attend to nothing ({a.n_head} x {L} = {a.n_head * L:,} parameters, "
                     f"no cache); the {a.family} family always has them, no field says so")
    return lines


def _window_line(a: Arch, w: int) -> str:
    """The sliding windows as our two flags (model.attn_window, model.global_every), or why they cannot say them."""
    flags = window_flags(a.windows, a.max_positions)
    if isinstance(flags, str):
        return f"as our flags: none fits: {flags}"
    window, every = flags
    if not window:
        return (f"as our flags: attn_window=0, global_every=0 (a {w:,}-token window hides nothing of the "
                f"{a.max_positions:,}-token context)")
    full = list(range(every, a.n_layer + 1, every)) if every else []
    which = "every layer local" if not every else \
        f"layers {', '.join(map(str, full[:3]))}{', ...' if len(full) > 3 else ''} full, the others local"
    return f"as our flags: attn_window={window}, global_every={every} ({which})"


def _shape_lines(a: Arch) -> list[str]:
    p, lines = a.prefix, []
    if a.mla is not None:
        m = a.mla
        lines.append(f"head_dim: queries and keys {m.nope + m.rope} = qk_nope_head_dim {m.nope} + qk_rope_head_dim "
                     f"{m.rope}, values {m.v} (v_head_dim); {p}hidden_size / num_attention_heads = "
                     f"{a.n_embd / a.n_head:g} is not used")
        q = f"queries through a rank-{m.q_rank} bottleneck" if m.q_rank else "queries from one plain projection"
        lines.append(f"latent attention (MLA): {q}; keys and values rebuilt per head from one {m.kv_rank}-number "
                     f"latent per token (kv_lora_rank), the RoPE part of the key ({m.rope}) one head shared by all "
                     f"{a.n_head}")
    elif a.head_dim_read:
        how = "read from the file" if "head_dim" not in a.defaults_used else "the family's default"
        note = "" if a.head_dim * a.n_head == a.n_embd else \
            f"; not hidden/heads = {a.n_embd}/{a.n_head} = {a.n_embd / a.n_head:g}"
        lines.append(f"head_dim: {a.head_dim} ({how}{note})")
    else:
        lines.append(f"head_dim: {a.head_dim} (not in the file: {p}hidden_size / num_attention_heads = "
                     f"{a.n_embd} / {a.n_head})")
    kind = "gated (3 matrices)" if a.gated else "plain (2 matrices)"
    m = a.moe
    if m is None:
        lines.append(f"MLP ratio: intermediate / hidden = {a.hidden} / {a.n_embd} = "
                     f"{a.hidden / a.n_embd:.4g}, {kind}, activation {a.activation}")
        return lines
    n_moe = sum(m.layers)
    shared = f" + {m.shared} shared (width {m.shared_width})" if m.shared else " (no shared expert)"
    dense = f", the other {a.n_layer - n_moe} dense (MLP width {m.dense_width})" if n_moe < a.n_layer else ""
    lines.append(f"mixture of experts: {m.experts} routed experts{shared} in each MoE layer, {m.top_k} routed run "
                 f"per token; MoE in {n_moe} of {a.n_layer} layers: {m.fields}{dense}")
    lines.append(f"MLP ratio: each expert's width / hidden = {m.width} / {a.n_embd} = {m.width / a.n_embd:.4g}, "
                 f"{kind}, activation {a.activation}")
    lines.append(f"router: {m.router}")
    return lines


def _left_out(a: Arch, figure: str) -> str:
    return f"{FIGURES[figure]}: left out, changed by {'; '.join(a.left_out(figure))}"


def _sum_of_parts(parts: dict[str, int]) -> str:
    """'embedding N + attention N + ...': the parts a model has, and those every model has even at 0."""
    return " + ".join(f"{label} {parts.get(key, 0):,}" for key, label in PARTS.items()
                      if parts.get(key) or key in EVERY_MODEL_HAS)


def _parameter_lines(a: Arch, dtype: str) -> tuple[list[str], str | None, list[str]]:
    """The parameters computed from the shapes, the active ones and the weights' bytes; the weights in words (None
    when left out) and the sentence on the experts, for the lines after the KV cache."""
    pc = param_counts(a)
    lines = [f"parameters (computed from the shapes, not read): {pc['total']:,} = " + _sum_of_parts(pc)
             + (" (tied to the embedding)" if a.tied else " (untied)") + (" [language model only]" if a.prefix else "")]
    active = active_params(a, pc)
    if a.moe is not None:
        lines.append(f"active parameters per token: {active:,} ({100 * active / pc['total']:.1f}% of the "
                     f"total): each MoE layer runs {a.moe.top_k} of its {a.moe.experts} routed experts; "
                     f"{active - pc['embedding']:,} without the input embedding (a table lookup, no matmul)")
    weights = None
    wb = weight_bytes(a, pc, dtype)
    if wb.nbytes is None:
        lines.append(f"weights' bytes: left out ({wb.how})")
    else:
        kind = f"{a.quant.get('quant_method')}-quantised" if a.quant else dtype
        weights = f"{human(wb.nbytes)} of {kind} weights"
        if a.quant:
            lines.append(f"weights: {human(wb.nbytes)} ({wb.nbytes:,} bytes): {wb.how}")
    return lines, weights, [_moe_sentence(a, pc["total"], active, weights)] if a.moe else []


def _counted_line(c: MetaCount) -> str:
    """The parameters of the model transformers builds, for a family this tool does not model."""
    return (f"parameters (counted by transformers on the meta device, not modelled here: {c.model}): {c.total:,} = "
            + _sum_of_parts(c.parts) + (" (tied to the embedding)" if c.tied else " (untied)")
            + (f"; other: the {', '.join(c.other)} modules" if c.other else ""))


def _kv_lines(a: Arch, context: int, batch: int, dtype: str, weights: str | None, moe: list[str]) -> list[str]:
    """The KV cache per token and per sequence, next to plain multi-head attention's, and the closing sentences."""
    if a.left_out("kv"):
        return [_left_out(a, "kv")] + moe
    nbytes = dtype_bytes(dtype)
    per_number = f"{nbytes} byte{'' if nbytes == 1 else 's'}/number"
    gqa, mha = kv_caches(a, dtype, context, batch)
    numbers, plain = kv_numbers(a)
    if a.mla is not None:
        lines = [f"KV cache ({dtype}, {per_number}): {a.n_layer} layers x ({a.mla.kv_rank} latent + "
                 f"{a.mla.rope} RoPE key) x {nbytes} = {human(gqa.bytes_per_token)} per token "
                 f"({gqa.bytes_per_token:,} bytes)"]
    else:
        lines = [f"KV cache ({dtype}, {per_number}): 2 x {a.n_layer} layers x {a.n_kv_head} K/V heads "
                 f"x {a.head_dim} x {nbytes} = {human(gqa.bytes_per_token)} per token "
                 f"({gqa.bytes_per_token:,} bytes)"]
    if a.left_out("kv_seq"):
        return lines + [_left_out(a, "kv_seq")] + moe
    lines.append(f"KV cache per sequence at {context:,} tokens: {human(gqa.bytes_per_sequence)} "
                 f"({gqa.bytes_per_sequence:,} bytes); x {batch} {'sequence' if batch == 1 else 'sequences'}: "
                 f"{human(gqa.bytes_total)}")
    if a.mla is not None:
        lines.append(f"as plain multi-head attention ({a.n_head} heads' keys of {a.mla.nope + a.mla.rope} and "
                     f"values of {a.mla.v}, {plain:,} numbers per layer instead of {numbers:,}): "
                     f"{human(mha.bytes_per_token)} per token, {human(mha.bytes_per_sequence)} per sequence, "
                     f"{human(mha.bytes_total)} for {batch}; ratio {mha.bytes_per_token / gqa.bytes_per_token:.3g}x")
    else:
        lines.append(f"with one K/V head per query head (plain multi-head, {a.n_head} K/V heads): "
                     f"{human(mha.bytes_per_token)} per token, {human(mha.bytes_per_sequence)} per sequence, "
                     f"{human(mha.bytes_total)} for {batch}; ratio {mha.bytes_per_token / gqa.bytes_per_token:g}x")
    return lines + moe + [_sentence(a, gqa, mha, context, batch, dtype, weights or "weights whose bytes are left out")]


def derived_lines(a: Arch, context: int | None, batch: int, dtype: str, counted: MetaCount | None = None) -> list[str]:
    """What follows from the fields: the shapes, the layers, RoPE scaling, the parameters (`counted`: transformers'
    count, for a family this tool does not model), the weights' bytes and the KV cache."""
    lines = _shape_lines(a) + _layer_lines(a)
    if a.rope_scaling:
        lines.append(_rope_scaling(a))
    if a.defaults_used:
        lines.append(f"not in the file, the {a.family} default taken: {', '.join(a.defaults_used)}")
    weights, moe = None, []
    if counted is not None:
        lines.append(_counted_line(counted))
        if a.quant is None:
            weights = f"{human(counted.total * dtype_bytes(dtype))} of {dtype} weights"
    elif a.left_out("parameters"):
        lines.append(_left_out(a, "parameters"))
    else:
        more, weights, moe = _parameter_lines(a, dtype)
        lines += more
    return lines + _kv_lines(a, context or a.max_positions, batch, dtype, weights, moe)


def _name(config: dict) -> str:
    return config.get("_name_or_path") or (config.get("architectures") or ["?"])[0]


def headline(config: dict, a: Arch, counted: MetaCount | None = None) -> str:
    """The first line: the family, how far its figures can be trusted, the fields."""
    if a.known:
        what = a.family
    else:
        what = (f"model_type {a.family!r} is not a family this tool knows, read the Llama way (RMSNorm before each "
                "sublayer, RoPE, a gated SiLU MLP, biases as attention_bias and mlp_bias say): every figure below "
                "assumes that" + (" but the parameters, which transformers counted" if counted else ""))
    feats = ([f"mixture of experts ({a.moe.experts} experts, {a.moe.top_k} per token)"] if a.moe else []) + \
        (["multi-head latent attention"] if a.mla else [])
    tc = config.get("text_config")
    line = f"{_name(config)}: {what}{''.join(', ' + f for f in feats)}, {len(config)} fields" + \
        (f" ({len(tc)} in text_config)" if isinstance(tc, dict) else "")
    if a.unmodelled:
        gone = [FIGURES[f] for f in FIGURES if a.left_out(f) and not (counted and f == "parameters")]
        line += (f"; not modelled: {'; '.join(w for w, _ in a.unmodelled)}" +
                 (f"; so left out: {', '.join(gone)}" if gone else ""))
    return line


def _unmodelled_count(config: dict) -> MetaCount | None:
    """transformers' count of a config whose family this tool does not model; None for one it models, or where
    transformers builds no model."""
    try:
        family = text_part(config)[2]
    except ConfigError:
        return None
    return None if family in MODEL_TYPES else meta_count(config)


def explain(config: dict, context: int | None = None, batch: int = 1, dtype: str = "bf16") -> str:
    try:
        a = normalise(config)
    except ConfigError as e:                # a family read neither way: transformers' count, where it builds one
        counted = _unmodelled_count(config)
        if counted is None:
            raise
        head = (f"{_name(config)}: model_type {config.get('model_type')!r} is not a family this tool knows, and "
                f"reading it the Llama way fails ({e}): only transformers' parameter count is derived, "
                f"{len(config)} fields")
        return "\n".join([head] + field_lines(config) + ["", "derived:", _counted_line(counted)])
    counted = None if a.known else _unmodelled_count(config)
    out = [headline(config, a, counted)] + field_lines(config) + ["", "derived:"] + \
        derived_lines(a, context, batch, dtype, counted)
    return "\n".join(out)
