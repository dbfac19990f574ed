"""The mixture-of-experts and multi-head latent attention readers: `Moe` and `Mla` from the fields each family
names them by.

A family's MODEL_TYPES entry (model_types.py) says whether its code builds experts (`moe`: the layout style) or
latent attention (`latent` in `models`); a dense family gets None from both. Each MoE style reads the routed and
shared experts, their width and which layers have them as that family's transformers code does, and says its router
in words for explain. Pure Python.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from .config_json import bool_field, int_field


@dataclass
class Moe:
    """A mixture-of-experts MLP: `experts` routed MLPs of width `width`, `top_k` run per token, `shared` always."""
    experts: int
    top_k: int
    width: int                    # each routed expert's hidden width
    shared: int                   # shared experts every token runs
    shared_width: int             # the shared experts' total hidden width (0 when none)
    layers: list[bool]            # per layer: MoE (True) or a dense MLP (False)
    dense_width: int              # the dense layers' MLP width
    router_bias: bool
    expert_bias: bool
    router: str                   # how the router picks, in words
    fields: str                   # which fields said which layers are MoE, in words
    experts_key: str              # the file's name for the routed experts


@dataclass
class Mla:
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values rebuilt from a cached latent per token."""
    q_rank: int | None            # None: one plain query projection
    kv_rank: int
    nope: int                     # per-head q/k dims without RoPE
    rope: int                     # per-head q/k dims with RoPE (the key's shared by every head)
    v: int                        # per-head value width


def _layer_list(cfg: dict, where: str, name: str) -> list[int]:
    v = cfg.get(name) or []
    if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise ConfigError(f"{where}{name}={v!r}: must be a list of layer indices")
    return v


def _mixtral_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int,
                 biases: bool = False) -> dict[str, Any]:
    """Mixtral (and gpt-oss, whose router and experts have biases): num_local_experts MLPs in every layer."""
    experts = _required(cfg, where, "num_local_experts")
    scorer = f"a linear layer with bias ({hidden} -> {experts})" if biases else \
        f"a linear layer ({hidden} -> {experts}, no bias)"
    return dict(experts=experts, width=inter, layers=[True] * n_layer, fields="every layer", router_bias=biases,
                expert_bias=biases, router=f"{scorer} scores the experts; the top {top_k} run, weighted by a softmax "
                "over their scores" + ("; the experts' matrices have biases too" if biases else ""))


def _qwen_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int) -> dict[str, Any]:
    """Qwen MoE: every decoder_sparse_step-th layer but those in mlp_only_layers."""
    experts, width = _required(cfg, where, "num_experts"), _required(cfg, where, "moe_intermediate_size")
    step = int_field(cfg, where, "decoder_sparse_step", default=1)
    dense = set(_layer_list(cfg, where, "mlp_only_layers"))
    norm = bool_field(cfg, where, "norm_topk_prob", False)
    fields = _every(step, "decoder_sparse_step") + (f" but {sorted(dense)} (mlp_only_layers)" if dense else "")
    return dict(experts=experts, width=width, layers=[i not in dense and (i + 1) % step == 0 for i in range(n_layer)],
                fields=fields, experts_key="num_experts",
                router=(f"a linear layer ({hidden} -> {experts}, no bias) scores the experts; softmax over all, the top"
                        f" {top_k} run" + (", their weights renormalised to sum to 1" if norm else "")))


def _deepseek_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int) -> dict[str, Any]:
    """DeepSeek: routed and shared experts from layer first_k_dense_replace on (every moe_layer_freq-th)."""
    experts, width = _required(cfg, where, "n_routed_experts"), _required(cfg, where, "moe_intermediate_size")
    shared = int_field(cfg, where, "n_shared_experts", default=0)
    first = int_field(cfg, where, "first_k_dense_replace", default=0)
    freq = int_field(cfg, where, "moe_layer_freq", default=1)
    groups, top_groups = cfg.get("n_group"), cfg.get("topk_group")
    router = (f"a linear layer ({hidden} -> {experts}, no bias) scores the experts with a "
              f"{cfg.get('scoring_func', 'softmax')}; " + (
                  f"the experts are in {groups} groups and a token picks from its best {top_groups}; "
                  if groups and groups > 1 else "") + f"the top {top_k} run" + (
                  "; a per-expert bias, used only to choose, keeps the load even without an auxiliary loss"
                  if cfg.get("topk_method") == "noaux_tc" else "") + (
                  f"; their weights renormalised and scaled by {cfg['routed_scaling_factor']:g}"
                  if bool_field(cfg, where, "norm_topk_prob", False) and cfg.get("routed_scaling_factor") else ""))
    return dict(experts=experts, width=width, shared=shared, shared_width=shared * width,
                layers=[i >= first and i % freq == 0 for i in range(n_layer)],
                fields=f"from layer {first} on (first_k_dense_replace = {first})" + (
                    f", {_every(freq, 'moe_layer_freq')}" if freq > 1 else ""),
                router=router, experts_key="n_routed_experts")


def _llama4_moe(cfg: dict, where: str, n_layer: int, inter: int, hidden: int, top_k: int) -> dict[str, Any]:
    """Llama 4: routed experts and one shared expert in the layers moe_layers lists, else every
    interleave_moe_layer_step-th; the other layers' MLP is intermediate_size_mlp wide."""
    experts = _required(cfg, where, "num_local_experts")
    dense_width = int_field(cfg, where, "intermediate_size_mlp", default=16384)
    if cfg.get("moe_layers") is not None:
        moe = set(_layer_list(cfg, where, "moe_layers"))
        fields = "the layers moe_layers lists"
    else:
        step = int_field(cfg, where, "interleave_moe_layer_step", default=1)
        moe = set(range(step - 1, n_layer, step))
        fields = _every(step, "interleave_moe_layer_step")
    return dict(experts=experts, width=inter, shared=1, shared_width=inter, dense_width=dense_width,
                layers=[i in moe for i in range(n_layer)], fields=fields,
                router=(f"a linear layer ({hidden} -> {experts}, no bias) scores the experts; the top {top_k} run,"
                        " the sigmoid of its score scaling the token it is given; the shared expert always runs"))


# a family's `moe` → how its experts are laid out: the Moe fields but top_k (the others default as in MOE_DEFAULTS)
MOE_STYLES = {"mixtral": _mixtral_moe, "gpt_oss": functools.partial(_mixtral_moe, biases=True), "qwen": _qwen_moe,
              "deepseek": _deepseek_moe, "llama4": _llama4_moe}
MOE_DEFAULTS = dict(shared=0, shared_width=0, router_bias=False, expert_bias=False, experts_key="num_local_experts")


def moe_settings(cfg: dict, where: str, fam: dict, n_layer: int, inter: int, hidden: int) -> Moe | None:
    """The experts of a family whose code builds mixture-of-experts layers (None for a dense family).

    Which layers are MoE follows each family's transformers code: Qwen MoE `(i + 1) % decoder_sparse_step == 0`
    and i not in mlp_only_layers; DeepSeek `i >= first_k_dense_replace` (and `i % moe_layer_freq == 0`, as
    DeepSeek's own code has it; transformers reads only the first); Llama 4 `moe_layers`, else every
    `interleave_moe_layer_step`-th layer; Mixtral and gpt-oss every layer.
    """
    style = fam.get("moe")
    if style is None:
        return None
    top_k = int_field(cfg, where, "num_experts_per_tok", "experts_per_token")
    if top_k is None:
        raise ConfigError(f"{where}num_experts_per_tok: missing")
    moe = Moe(top_k=top_k, **{**MOE_DEFAULTS, "dense_width": inter,
                                **MOE_STYLES[style](cfg, where, n_layer, inter, hidden, top_k)})
    if top_k > moe.experts:
        raise ConfigError(f"{where}num_experts_per_tok={top_k}: more than the {moe.experts} experts")
    return moe


def _every(step: int, name: str) -> str:
    return ("every layer" if step == 1 else f"every {step}th layer") + f" ({name} = {step})"


def _required(cfg: dict, where: str, *names: str) -> int:
    v = int_field(cfg, where, *names)
    if v is None:
        raise ConfigError(f"{where}{names[0]}: missing")
    return v


def mla_settings(cfg: dict, where: str, fam: dict) -> Mla | None:
    """DeepSeek's multi-head latent attention, for the families whose code builds it."""
    if "latent" not in fam.get("models", ()):
        return None
    return Mla(q_rank=int_field(cfg, where, "q_lora_rank"), kv_rank=_required(cfg, where, "kv_lora_rank"),
               nope=_required(cfg, where, "qk_nope_head_dim"), rope=_required(cfg, where, "qk_rope_head_dim"),
               v=_required(cfg, where, "v_head_dim"))
