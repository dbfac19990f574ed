"""Our state dict to a Hugging Face class's and back: one key map per family, and the layout changes on the way.

Two layouts differ from ours:
- GPT-2 keeps its projections in `Conv1D`, whose weight is (in, out): the transpose of nn.Linear's;
  and it fuses q, k, v into one `c_attn`.
- Our RoPE rotates interleaved pairs (2i, 2i+1); HF's `rotate_half` rotates (i, i + d/2). Both use
  frequency i for pair i, so permuting the rows of q_proj / k_proj within each head (2i → i,
  2i+1 → i + d/2) turns one into the other; q·k is unchanged because q and k move together, and the
  per-head q_norm / k_norm weights are permuted the same way.
Both directions read one key map per family (GPT2_KEYS; LLAMA_KEYS for Llama, Mistral and Qwen3): each entry
names our key(s), HF's key and the layout change between them. An untied head travels as its own
`lm_head.weight`; a tied one is the token matrix. Only torch: no transformers, no files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import torch

from ..config import ModelConfig
from ..core.errors import ConfigError, DataError
from ..config.hf_class import GPT2, LLAMA, MISTRAL, QWEN3, hf_class

# buffers some HF versions keep in the state dict: recomputed, never weights
IGNORED_SUFFIXES = (".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq")


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
    pairs = key_pairs(cfg)
    out = {theirs: layout.to_hf([sd[k] for k in ours], cfg) for ours, theirs, layout in pairs}
    head = "tok_emb.weight" if cfg.tie_embeddings else "lm_head.weight"
    out["lm_head.weight"] = sd[head]
    left = sorted(set(sd) - {k for ours, _, _ in pairs for k in ours} - {head, "lm_head.weight"})
    if left:                                 # a tensor the map does not place would be dropped: the export refuses
        raise ConfigError(f"weights: {len(left)} tensor(s) of ours the {hf_class(cfg)} map has no place for, "
                          f"e.g. {left[0]}")
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
