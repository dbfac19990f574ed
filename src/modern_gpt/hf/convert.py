"""Export to and import from Hugging Face `transformers`: GPT-2, Llama, Mistral and Qwen3.

Four HF classes cover the ladder's end points: the Step 1 baseline is GPT-2 (exact GELU), the
modern design is Llama (pre-norm RMSNorm, RoPE, SwiGLU, any number of K/V heads), and the modern
design with QK-norm is Qwen3. `hf_class(cfg)` names the class a config maps to, or raises a
one-line `ConfigError` naming the flag no class here represents. The head goes either way in all of them:
tie_embeddings is tie_word_embeddings, and an untied head travels as its own `lm_head.weight`.

Sliding windows (attn_window, global_every): Qwen3 takes any of our patterns as `layer_types` (each layer
"sliding_attention" or "full_attention") with `sliding_window` and `use_sliding_window: true`; Mistral is
Llama with one `sliding_window` in every layer (its weights are Llama's, no biases), so a windowed row without
QK-norm is Mistral when every layer is local (global_every=0) and is refused otherwise. The window means the
same on both sides: transformers' mask keeps key j for query i when `kv_idx > q_idx - sliding_window`
(masking_utils.sliding_window_overlay), i.e. 0 <= i - j < sliding_window, the query's own token included, as
ours; its generation cache keeps the last sliding_window - 1 tokens beside the new one. So sliding_window =
attn_window, no shift.

Two layouts differ from ours:
- GPT-2 keeps its projections in `Conv1D`, whose weight is (in, out): the transpose of nn.Linear's;
  and it fuses q, k, v into one `c_attn`.
- Our RoPE rotates interleaved pairs (2i, 2i+1); HF's `rotate_half` rotates (i, i + d/2). Both use
  frequency i for pair i, so permuting the rows of q_proj / k_proj within each head (2i → i,
  2i+1 → i + d/2) turns one into the other; q·k is unchanged because q and k move together, and the
  per-head q_norm / k_norm weights are permuted the same way.
Both directions read one key map per family (GPT2_KEYS; LLAMA_KEYS for Llama, Mistral and Qwen3): each entry
names our key(s), HF's key and the layout change between them.

`transformers` and `safetensors` are imported only when a function needs them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple

import torch

from ..config import ModelConfig
from ..core.errors import ConfigError, DataError
from ..nn import GPT
from ..nn.checkpoint import load_into, load_run
from ..pipeline.hf_class import GPT2, HF_CLASSES, LLAMA, MISTRAL, QWEN3, hf_class
from .arch import Arch, normalise
from .config_json import read_config
from .layers import layer_list, window_flags

MODEL_TYPES = {"gpt2": GPT2, "llama": LLAMA, "mistral": MISTRAL, "qwen3": QWEN3}
# buffers some HF versions keep in the state dict: recomputed, never weights
IGNORED_SUFFIXES = (".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq")


def _transformers():
    """The transformers module, or a one-line error saying how to get it."""
    try:
        import transformers
    except ImportError:
        raise ConfigError("the Hugging Face bridge needs transformers and safetensors: "
                          "pip install transformers safetensors") from None
    return transformers


def hf_config(cfg: ModelConfig, attn_implementation: str | None = None):
    """The HF config object for `cfg` (the head tied or not as cfg.tie_embeddings says, no special tokens)."""
    transformers = _transformers()
    name = hf_class(cfg)
    extra = {"attn_implementation": attn_implementation} if attn_implementation else {}
    common = dict(vocab_size=cfg.vocab_size, tie_word_embeddings=cfg.tie_embeddings, bos_token_id=None,
                  eos_token_id=None, pad_token_id=None, architectures=[name], **extra)
    if name == GPT2:
        return transformers.GPT2Config(
            n_positions=cfg.block_size, n_embd=cfg.n_embd, n_layer=cfg.n_layer, n_head=cfg.n_head,
            n_inner=cfg.hidden, activation_function="gelu", layer_norm_epsilon=cfg.norm_eps,
            resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout, **common)
    kw = dict(hidden_size=cfg.n_embd, intermediate_size=cfg.hidden, num_hidden_layers=cfg.n_layer,
              num_attention_heads=cfg.n_head, num_key_value_heads=cfg.n_kv_head, head_dim=cfg.head_dim,
              hidden_act="silu", max_position_embeddings=cfg.block_size, rms_norm_eps=cfg.norm_eps,
              rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_base},
              attention_bias=cfg.bias, attention_dropout=cfg.dropout, **common)
    if name == LLAMA:
        return transformers.LlamaConfig(mlp_bias=cfg.bias, **kw)
    if name == MISTRAL:                                  # no bias fields: Mistral has none (hf_class checked)
        kw.pop("attention_bias")
        return transformers.MistralConfig(sliding_window=cfg.attn_window, **kw)
    if not cfg.attn_window:
        return transformers.Qwen3Config(use_sliding_window=False, **kw)
    # layer_types is what transformers 5 reads; max_window_layers=0 (sliding from layer 0 on) is what older
    # versions without layer_types would read, right for global_every=0 (layer 1 is always local here)
    return transformers.Qwen3Config(
        use_sliding_window=True, sliding_window=cfg.attn_window, max_window_layers=0,
        layer_types=["full_attention" if w is None else "sliding_attention" for w in cfg.windows], **kw)


def arch_of(conf: dict) -> str:
    """The HF class a config.json (or a config object's to_dict()) names, or a one-line ConfigError."""
    archs = conf.get("architectures") or []
    for a in archs:
        if a in HF_CLASSES:
            return a
    model_type = conf.get("model_type")
    if not archs and model_type in MODEL_TYPES:
        return MODEL_TYPES[model_type]
    raise ConfigError(f"architectures={archs} (model_type={model_type!r}): import knows "
                      f"{', '.join(HF_CLASSES)} only")


def config_from_hf(conf: Any, approximate_gelu: bool = False) -> ModelConfig:
    """Our ModelConfig for an HF config (object or config.json dict); refuses what we cannot compute.

    approximate_gelu: accept GPT-2's tanh GELU ('gelu_new', the real GPT-2 checkpoints) and run it as
    exact GELU; logits then differ slightly from HF's. tie_word_embeddings (left out: GPT-2 ties, Llama and
    Qwen3 do not) becomes tie_embeddings.
    """
    conf = conf if isinstance(conf, dict) else conf.to_dict()     # a transformers config object: its dict
    arch = arch_of(conf)                                # the class first: normalise reads any family
    a = normalise(conf)
    return dataclasses.replace(_config_from_hf(conf, arch, a, approximate_gelu), tie_embeddings=a.tied)


def _config_from_hf(conf: dict, arch: str, a: Arch, approximate_gelu: bool) -> ModelConfig:
    """The numbers come from hf.arch.normalise, the one reader of a config.json (explain's too); what is
    checked here is what our model cannot compute exactly, by the file's own flags."""
    g = conf.get
    if arch == GPT2:
        act = a.activation
        if act != "gelu" and not (approximate_gelu and act in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")):
            raise ConfigError(f"activation_function={act!r}: this model's MLP is exact GELU ('gelu'); "
                              "pass approximate_gelu / --approximate-gelu to accept the tanh approximation")
        if not g("scale_attn_weights", True) or g("scale_attn_by_inverse_layer_idx", False):
            raise ConfigError("scale_attn_weights / scale_attn_by_inverse_layer_idx: this model scales "
                              "attention by 1/sqrt(head_dim) only")
        if g("add_cross_attention", False):
            raise ConfigError("add_cross_attention=True: this model is decoder-only")
        return ModelConfig(
            vocab_size=a.vocab_size, block_size=a.max_positions, n_layer=a.n_layer, n_head=a.n_head,
            n_kv_head=a.n_head, n_embd=a.n_embd, dropout=float(g("attn_pdrop", 0.0)), norm="layernorm",
            norm_eps=a.norm_eps, norm_placement="pre", pos="learned", mlp="gelu",
            mlp_hidden=0 if a.hidden == 4 * a.n_embd else a.hidden, bias=True, qk_norm=False)
    # Llama / Qwen3
    if a.activation != "silu":
        raise ConfigError(f"hidden_act={a.activation!r}: this model's SwiGLU gates with 'silu'")
    if a.rope_scaling is not None:
        rope_type = a.rope_scaling.get("rope_type", a.rope_scaling.get("type"))
        raise ConfigError(f"rope_parameters.rope_type={rope_type!r}: this model has plain RoPE ('default') only")
    if arch == LLAMA and a.biases in ("attn", "mlp"):
        raise ConfigError(f"attention_bias={a.biases == 'attn'}, mlp_bias={a.biases == 'mlp'}: this model's bias "
                          "flag is all or nothing")
    if arch == QWEN3 and a.biases != "none":
        raise ConfigError("attention_bias=True: Qwen3's MLP has no biases and this model's bias flag "
                          "is all or nothing")
    window, every = _window_flags(conf, arch, a)
    base = ModelConfig(
        vocab_size=a.vocab_size, block_size=a.max_positions, n_layer=a.n_layer, n_head=a.n_head,
        n_kv_head=a.n_kv_head, n_embd=a.n_embd, head_dim=a.head_dim,
        dropout=float(g("attention_dropout", 0.0) or 0.0), norm="rmsnorm", norm_eps=a.norm_eps,
        norm_placement="pre", pos="rope", rope_base=a.rope_base, mlp="swiglu", bias=a.biases == "attn_mlp",
        qk_norm=arch == QWEN3, attn_window=window, global_every=every)
    return dataclasses.replace(base, mlp_hidden=0 if a.hidden == base.hidden else a.hidden)


def _window_flags(conf: dict, arch: str, a: Arch) -> tuple[int, int]:
    """(attn_window, global_every) for the windows the HF class builds (a.windows: the file read as that class's
    code reads it), or a one-line ConfigError naming the field whose pattern our two flags cannot say."""
    types = conf.get("layer_types")
    types = types if isinstance(types, list) else []
    if arch == LLAMA:                                    # LlamaForCausalLM has no window, whatever the file says
        for t in types:
            if t != "full_attention":
                raise ConfigError(f"layer_types contains {t!r}: LlamaForCausalLM attends over the whole context "
                                  "(sliding windows import from Mistral or Qwen3)")
        return 0, 0
    for t in types:
        if t not in ("full_attention", "sliding_attention"):
            raise ConfigError(f"layer_types contains {t!r}: this model has full and sliding-window attention only")
    sliding = [i for i, t in enumerate(types, 1) if t == "sliding_attention"]
    if arch == QWEN3 and sliding and not any(a.windows):
        raise ConfigError(f"layer_types: {layer_list(sliding)} sliding_attention but use_sliding_window="
                          f"{conf.get('use_sliding_window', False)}, sliding_window={conf.get('sliding_window')}: "
                          "Qwen3 then has no window for them; set use_sliding_window true and sliding_window")
    if arch == MISTRAL and any(a.windows) and types and len(sliding) != len(types):
        full = [i for i, t in enumerate(types, 1) if t != "sliding_attention"]
        raise ConfigError(f"layer_types: full_attention in {layer_list(full)}, but MistralForCausalLM gives "
                          "every layer sliding_window and does not read layer_types; this imports Mistral with every "
                          "layer sliding (global_every=0) only")
    flags = window_flags(a.windows, a.max_positions)
    if isinstance(flags, str):
        field = "layer_types" if types or arch != QWEN3 else \
            f"max_window_layers={conf.get('max_window_layers', 28)} (no layer_types)"
        raise ConfigError(f"{field}: {flags}")
    return flags


# ----------------------------------------------------------------------------------------- weights
# One key map per family, read by both directions: our key(s), the HF key, how the tensor's layout changes, and the
# flag of ours a key needs (biases, QK-norm). Block i's keys carry "blocks.{i}." on our side, the map's `block` on
# theirs. Several keys of ours make one of theirs where HF fuses them (GPT-2's c_attn: q, k and v stacked).

@dataclass(frozen=True)
class Layout:
    """How tensors change on the way: `to_hf` makes HF's tensor from ours (one per key), `from_hf` gives them back."""
    to_hf: Callable[[list[torch.Tensor], ModelConfig], torch.Tensor]
    from_hf: Callable[[torch.Tensor, ModelConfig], list[torch.Tensor]]


def _halves(d: int) -> torch.Tensor:
    """Index j of HF's halves layout takes our interleaved index perm[j]: 0, 2, 4, ..., 1, 3, 5, ..."""
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])


def _permute_heads(w: torch.Tensor, n_heads: int, d: int, perm: torch.Tensor) -> torch.Tensor:
    """Reorder the output rows (weights) or entries (biases) of each head's d-wide block."""
    return w.reshape(n_heads, d, *w.shape[1:])[:, perm].reshape(w.shape).contiguous()


def _rope_rows(heads: Callable[[ModelConfig], int]) -> Layout:
    """Each head's rows from our interleaved RoPE pairs to HF's halves and back (the q/k projections' weights and
    biases, and the per-head q_norm / k_norm gains, which act before RoPE: one head)."""
    return Layout(lambda ts, cfg: _permute_heads(ts[0], heads(cfg), cfg.head_dim, _halves(cfg.head_dim)),
                  lambda t, cfg: [_permute_heads(t, heads(cfg), cfg.head_dim, torch.argsort(_halves(cfg.head_dim)))])


SAME = Layout(lambda ts, cfg: ts[0], lambda t, cfg: [t])
CONV1D = Layout(lambda ts, cfg: ts[0].t().contiguous(), lambda t, cfg: [t.t().contiguous()])   # (in, out): transposed
QKV = Layout(lambda ts, cfg: torch.cat(ts, 0), lambda t, cfg: [p.contiguous() for p in t.split(cfg.n_embd, 0)])
QKV_CONV1D = Layout(lambda ts, cfg: torch.cat(ts, 0).t().contiguous(),
                    lambda t, cfg: [p.contiguous() for p in t.t().split(cfg.n_embd, 0)])
Q_ROWS, K_ROWS = _rope_rows(lambda cfg: cfg.n_head), _rope_rows(lambda cfg: cfg.n_kv_head)
NORM_ROWS = _rope_rows(lambda cfg: 1)


class Key(NamedTuple):
    ours: str | tuple[str, ...]       # several: fused into one HF tensor, in this order
    theirs: str
    layout: Layout = SAME
    needs: str | None = None          # the ModelConfig flag without which neither side has the key

    def applies(self, cfg: ModelConfig) -> bool:
        return self.needs is None or bool(getattr(cfg, self.needs))


@dataclass(frozen=True)
class KeyMap:
    embedding: str                    # HF's token matrix (a tied head must equal it)
    block: str                        # HF's prefix of block {i}
    top: tuple[Key, ...]              # outside the blocks; lm_head.weight is the head's own rule (tied or not)
    layer: tuple[Key, ...]            # in every block


GPT2_KEYS = KeyMap("transformer.wte.weight", "transformer.h.{i}.", top=(
    Key("tok_emb.weight", "transformer.wte.weight"),
    Key("pos.table.weight", "transformer.wpe.weight"),
    Key("norm_f.weight", "transformer.ln_f.weight"),
    Key("norm_f.bias", "transformer.ln_f.bias"),
), layer=(
    Key("norm1.weight", "ln_1.weight"),
    Key("norm1.bias", "ln_1.bias"),
    Key(("attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"), "attn.c_attn.weight", QKV_CONV1D),
    Key(("attn.q_proj.bias", "attn.k_proj.bias", "attn.v_proj.bias"), "attn.c_attn.bias", QKV),
    Key("attn.o_proj.weight", "attn.c_proj.weight", CONV1D),
    Key("attn.o_proj.bias", "attn.c_proj.bias"),
    Key("norm2.weight", "ln_2.weight"),
    Key("norm2.bias", "ln_2.bias"),
    Key("mlp.up.weight", "mlp.c_fc.weight", CONV1D),
    Key("mlp.up.bias", "mlp.c_fc.bias"),
    Key("mlp.down.weight", "mlp.c_proj.weight", CONV1D),
    Key("mlp.down.bias", "mlp.c_proj.bias"),
))
# Llama, Mistral and Qwen3 name their weights alike; Qwen3 adds the per-head QK-norm
LLAMA_KEYS = KeyMap("model.embed_tokens.weight", "model.layers.{i}.", top=(
    Key("tok_emb.weight", "model.embed_tokens.weight"),
    Key("norm_f.weight", "model.norm.weight"),
), layer=(
    Key("norm1.weight", "input_layernorm.weight"),
    Key("attn.q_proj.weight", "self_attn.q_proj.weight", Q_ROWS),
    Key("attn.q_proj.bias", "self_attn.q_proj.bias", Q_ROWS, "bias"),
    Key("attn.k_proj.weight", "self_attn.k_proj.weight", K_ROWS),
    Key("attn.k_proj.bias", "self_attn.k_proj.bias", K_ROWS, "bias"),
    Key("attn.v_proj.weight", "self_attn.v_proj.weight"),
    Key("attn.v_proj.bias", "self_attn.v_proj.bias", SAME, "bias"),
    Key("attn.o_proj.weight", "self_attn.o_proj.weight"),
    Key("attn.o_proj.bias", "self_attn.o_proj.bias", SAME, "bias"),
    Key("attn.q_norm.weight", "self_attn.q_norm.weight", NORM_ROWS, "qk_norm"),
    Key("attn.k_norm.weight", "self_attn.k_norm.weight", NORM_ROWS, "qk_norm"),
    Key("norm2.weight", "post_attention_layernorm.weight"),
    Key("mlp.gate.weight", "mlp.gate_proj.weight"),
    Key("mlp.gate.bias", "mlp.gate_proj.bias", SAME, "bias"),
    Key("mlp.up.weight", "mlp.up_proj.weight"),
    Key("mlp.up.bias", "mlp.up_proj.bias", SAME, "bias"),
    Key("mlp.down.weight", "mlp.down_proj.weight"),
    Key("mlp.down.bias", "mlp.down_proj.bias", SAME, "bias"),
))
KEY_MAPS = {GPT2: GPT2_KEYS, LLAMA: LLAMA_KEYS, MISTRAL: LLAMA_KEYS, QWEN3: LLAMA_KEYS}


def key_pairs(cfg: ModelConfig) -> list[tuple[tuple[str, ...], str, Layout]]:
    """(our keys, the HF key, the layout) for every tensor of cfg's HF class but the head, each block's per layer."""
    keys = KEY_MAPS[hf_class(cfg)]
    names = lambda k: (k.ours,) if isinstance(k.ours, str) else k.ours        # noqa: E731
    out = [(names(k), k.theirs, k.layout) for k in keys.top if k.applies(cfg)]
    for i in range(cfg.n_layer):
        ours, theirs = f"blocks.{i}.", keys.block.format(i=i)
        out += [(tuple(ours + n for n in names(k)), theirs + k.theirs, k.layout) for k in keys.layer if k.applies(cfg)]
    return out


def to_hf_state(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our state dict → the HF class's; lm_head is the token matrix when tied, its own matrix when not."""
    out = {theirs: layout.to_hf([sd[k] for k in ours], cfg) for ours, theirs, layout in key_pairs(cfg)}
    out["lm_head.weight"] = sd["tok_emb.weight" if cfg.tie_embeddings else "lm_head.weight"]
    return out


def _hf_head(cfg: ModelConfig, hf: dict[str, torch.Tensor], emb_key: str) -> torch.Tensor | None:
    """HF's lm_head.weight, taken out of `hf`: required when cfg unties the head, the token matrix when it ties it."""
    if emb_key not in hf:
        raise DataError(f"weights: {emb_key} is missing")
    head = hf.pop("lm_head.weight", None)
    if not cfg.tie_embeddings and head is None:
        raise DataError("weights: lm_head.weight is missing (tie_word_embeddings=False: the head is its own matrix)")
    if cfg.tie_embeddings and head is not None and head.data_ptr() != hf[emb_key].data_ptr() \
            and not torch.equal(head, hf[emb_key]):
        raise ConfigError(f"tie_word_embeddings=True with an lm_head.weight unlike {emb_key}: the config ties the "
                          "head, the weights do not; set tie_word_embeddings to false to import the separate head")
    return head


def from_hf_state(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The HF class's state dict → ours; the inverse of to_hf_state. A tied cfg refuses an lm_head.weight
    other than the token matrix (transformers would then run that head: the file says tied, the weights not)."""
    hf = dict(sd)
    name = hf_class(cfg)
    head = _hf_head(cfg, hf, KEY_MAPS[name].embedding)
    out: dict[str, torch.Tensor] = {}
    for ours, theirs, layout in key_pairs(cfg):
        if theirs not in hf:
            raise DataError(f"weights: {theirs} is missing for {name}")
        out.update(zip(ours, layout.from_hf(hf.pop(theirs), cfg)))
    left = [k for k in hf if not k.endswith(IGNORED_SUFFIXES)]
    if left:
        raise ConfigError(f"weights: {len(left)} tensor(s) this model has no place for, e.g. {left[0]}")
    out["lm_head.weight"] = out["tok_emb.weight"] if cfg.tie_embeddings else head
    return out


def to_hf(model: GPT, attn_implementation: str | None = None):
    """An HF model (GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM or Qwen3ForCausalLM) computing what
    `model` computes."""
    transformers = _transformers()
    cfg = model.cfg
    name = hf_class(cfg)
    conf = hf_config(cfg, attn_implementation)
    dtype = next(model.parameters()).dtype
    hf = getattr(transformers, name)(conf).to(dtype)
    state = to_hf_state(cfg, {k: v.detach() for k, v in model.state_dict().items()})
    missing, unexpected = hf.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith(IGNORED_SUFFIXES)]
    if missing or unexpected:                           # a layout bug, not a user error
        raise RuntimeError(f"{name}: missing {missing[:3]}, unexpected {unexpected[:3]}")
    hf.tie_weights()
    return hf.eval()


def from_hf(hf_model, approximate_gelu: bool = False) -> GPT:
    """Our GPT computing what an HF GPT-2, Llama, Mistral or Qwen3 model computes (in its dtype)."""
    cfg = config_from_hf(hf_model.config, approximate_gelu)
    sd = {k: v.detach() for k, v in hf_model.state_dict().items()}
    dtype = hf_model.get_input_embeddings().weight.dtype
    return load_into(cfg, from_hf_state(cfg, sd), dtype)


# ----------------------------------------------------------------------------------------- folders

@dataclass
class Exported:
    out_dir: Path
    hf_class: str
    files: list[str] = field(default_factory=list)
    tokenizer_note: str = ""


def default_tokenizer(run_dir: Path) -> Path | None:
    """The pipeline's tokenizer for a run folder data/runs/<row>/<seed>/: data/tokenized/tokenizer.json."""
    p = run_dir.resolve().parents[2] / "tokenized" / "tokenizer.json" if len(run_dir.resolve().parents) > 2 else None
    return p if p is not None and p.is_file() else None


def write_tokenizer(tokenizer_path: str | Path, out_dir: Path, vocab_size: int,
                    final_dir: Path | None = None) -> tuple[list[str], str]:
    """Tokenizer files for the export folder, and a line for the user. BPE: HF tokenizers' tokenizer.json;
    char / akshara: our own small vocab file (HF has no class for one token per symbol / syllable), and the line
    gives the call that loads it from final_dir (where the files end up; out_dir by default)."""
    path = Path(tokenizer_path)
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        kind = spec["kind"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{path}: not a tokenizer file of this project ({type(e).__name__}: {e})") from None
    if kind == "bpe":
        tok = spec.get("tokenizer")
        if not isinstance(tok, dict):
            raise DataError(f"{path}: kind 'bpe' without a 'tokenizer' object")
        size = len(tok.get("model", {}).get("vocab", {})) + len(tok.get("added_tokens") or [])
        if size > vocab_size:
            raise DataError(f"{path}: {size} tokens, but the model has vocab_size={vocab_size}")
        (out_dir / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
        (out_dir / "tokenizer_config.json").write_text(
            json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}, indent=1) + "\n", encoding="utf-8")
        return ["tokenizer.json", "tokenizer_config.json"], \
            "tokenizer: byte-level BPE written as tokenizer.json (AutoTokenizer loads it)"
    if kind in ("char", "akshara"):
        symbols = spec.get("symbols")
        if not isinstance(symbols, list):
            raise DataError(f"{path}: kind {kind!r} without a 'symbols' list")
        if len(symbols) != vocab_size:
            raise DataError(f"{path}: {len(symbols)} symbols, but the model has vocab_size={vocab_size}")
        (out_dir / "vocab.json").write_text(
            json.dumps({"kind": kind, "symbols": symbols}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        unit = "Unicode code point" if kind == "char" else "Devanagari syllable (akshara)"
        vocab = str((final_dir or out_dir) / "vocab.json")
        return ["vocab.json"], (f"tokenizer: {kind!r} (one token per {unit}) written as vocab.json; Hugging Face has "
                                "no tokenizer class for it, so encode with this project's: `import json; from "
                                "modern_gpt.corpus.tokenizers import load_tokenizer; tok = load_tokenizer(json.load("
                                f"open({vocab!r}, encoding='utf-8')))`, then tok.encode(text)")
    raise DataError(f"{path}: tokenizer kind {kind!r} is not one of char, akshara, bpe")


def export(source: str | Path | GPT, out_dir: str | Path, tokenizer: str | Path | None = None,
           attn_implementation: str | None = None, force: bool = False) -> Exported:
    """Write config.json + model.safetensors (and tokenizer files when there is one) into out_dir.

    source: a GPT, or a run folder (its tokenizer defaults to the pipeline's data/tokenized/tokenizer.json).
    A folder that already holds files is refused unless force; then files of the same names are replaced and
    the others kept. Everything is written to a folder beside out_dir first, so a failure leaves out_dir as it was.
    """
    if isinstance(source, GPT):
        model, tok_path = source, tokenizer
    else:
        model = load_run(source)
        tok_path = tokenizer if tokenizer is not None else default_tokenizer(Path(source))
    name = hf_class(model.cfg)                          # refuse before writing anything
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"{out}: exists and is not a folder")
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if held and not force:
        raise DataError(f"{out}: not empty ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''}); export into "
                        "an empty or new folder, or pass --force to replace files of the same names")
    hf = to_hf(model, attn_implementation)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        staging = Path(tmp)
        hf.save_pretrained(staging)
        note = "tokenizer: none found (pass --tokenizer PATH); only the weights were written"
        if tok_path is not None:
            _, note = write_tokenizer(tok_path, staging, model.cfg.vocab_size, out)
        out.mkdir(exist_ok=True)
        written = sorted(p.name for p in staging.iterdir())
        for file in written:
            os.replace(staging / file, out / file)
    return Exported(out, name, written, note)


def read_hf_config(hf_dir: str | Path) -> dict:
    path = Path(hf_dir) / "config.json"
    if not path.is_file():
        raise DataError(f"{path}: not found (a Hugging Face model folder has config.json)")
    return read_config(path)                            # the one reader's, as explain reads a file


def import_folder(hf_dir: str | Path, approximate_gelu: bool = False,
                  dtype: torch.dtype | None = None) -> tuple[ModelConfig, GPT]:
    """Our (ModelConfig, GPT) from a folder holding an HF GPT-2, Llama, Mistral or Qwen3 (ours or HF's own)."""
    transformers = _transformers()
    conf = read_hf_config(hf_dir)
    name = arch_of(conf)
    cfg = config_from_hf(conf, approximate_gelu)         # refuse before reading any weights
    kw = {"dtype": dtype} if dtype is not None else {}
    try:
        hf = getattr(transformers, name).from_pretrained(str(hf_dir), **kw)
    except (OSError, ValueError) as e:
        raise DataError(f"{hf_dir}: {name} weights not loadable ({str(e).splitlines()[0]})") from None
    model = from_hf(hf, approximate_gelu)
    return cfg, model
