"""The Hugging Face bridge: GPT-2, Llama, Mistral and Qwen3 compute what our GPT computes, both ways.

Every weight is randomised, norm gains and biases included: all-ones norms or zero biases would
hide a missing RoPE permutation or a transposed Conv1D. float64 throughout, so a layout error
shows as O(1) and float rounding stays far below the 1e-5 tolerance.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
from safetensors.torch import load_file  # noqa: E402

from modern_gpt.cli import main
from modern_gpt.cli import hf_io  # noqa: E402
from modern_gpt.core.errors import ConfigError, DataError  # noqa: E402
from modern_gpt.hf.config_map import config_from_hf, hf_config  # noqa: E402
from modern_gpt.hf.folder import export, import_folder  # noqa: E402
from modern_gpt.hf.models import from_hf, to_hf  # noqa: E402
from modern_gpt.hf.weights import IGNORED_SUFFIXES, KEY_MAPS, from_hf_state, to_hf_state  # noqa: E402
from modern_gpt.config.hf_class import hf_class  # noqa: E402
from modern_gpt.config import ModelConfig  # noqa: E402
from modern_gpt.serving.generate import generate  # noqa: E402
from modern_gpt.nn import GPT  # noqa: E402
from fakes import run_json  # noqa: E402

ATOL = 1e-5
TINY = ModelConfig(vocab_size=37, block_size=32, n_layer=2, n_head=4, n_kv_head=4, n_embd=32)
MODERN = dict(norm="rmsnorm", pos="rope", mlp="swiglu", bias=False)
CASES = {
    "gpt2": (TINY, "GPT2LMHeadModel"),
    "llama": (dataclasses.replace(TINY, **MODERN), "LlamaForCausalLM"),
    "llama-gqa": (dataclasses.replace(TINY, **MODERN, n_kv_head=2), "LlamaForCausalLM"),
    "llama-bias": (dataclasses.replace(TINY, **{**MODERN, "bias": True}, rope_base=500.0), "LlamaForCausalLM"),
    "qwen3-gqa": (dataclasses.replace(TINY, **MODERN, n_kv_head=2, qk_norm=True), "Qwen3ForCausalLM"),
    "qwen3-headdim": (dataclasses.replace(TINY, **MODERN, n_kv_head=1, qk_norm=True, head_dim=12, mlp_hidden=40),
                      "Qwen3ForCausalLM"),
    # an untied head: tie_word_embeddings false and lm_head.weight its own matrix
    "gpt2-untied": (dataclasses.replace(TINY, tie_embeddings=False), "GPT2LMHeadModel"),
    "llama-untied": (dataclasses.replace(TINY, **MODERN, n_kv_head=2, tie_embeddings=False), "LlamaForCausalLM"),
    "qwen3-untied": (dataclasses.replace(TINY, **MODERN, n_kv_head=2, qk_norm=True, tie_embeddings=False),
                     "Qwen3ForCausalLM"),
    # sliding windows of 5 tokens, the sequences 20 and 32 long: Qwen3's layer_types (layers 2 and 4 full) ...
    "qwen3-window": (dataclasses.replace(TINY, **MODERN, n_layer=4, n_kv_head=2, qk_norm=True, attn_window=5,
                                         global_every=2), "Qwen3ForCausalLM"),
    "qwen3-window-local": (dataclasses.replace(TINY, **MODERN, n_layer=3, n_kv_head=1, qk_norm=True, attn_window=7,
                                               tie_embeddings=False), "Qwen3ForCausalLM"),
    # ... and Mistral: Llama with the one window in every layer
    "mistral-window": (dataclasses.replace(TINY, **MODERN, n_layer=3, n_kv_head=2, attn_window=5), "MistralForCausalLM"),
    "mistral-window-untied": (dataclasses.replace(TINY, **MODERN, attn_window=6, rope_base=500.0, tie_embeddings=False),
                              "MistralForCausalLM"),
}
WINDOWED = [c for c in CASES if CASES[c][0].attn_window]


def randomise(module: torch.nn.Module, seed: int) -> None:
    """Every parameter random: matrices N(0, 0.2²), norm gains 1 + N(0, 0.2²), biases N(0, 0.2²)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype) * 0.2
            gain = name.endswith("weight") and p.dim() == 1          # a norm's gain
            p.copy_(noise + 1.0 if gain else noise)


def our_model(cfg: ModelConfig, seed: int = 0) -> GPT:
    model = GPT(cfg).double().eval()
    randomise(model, seed)
    return model


def tokens(cfg: ModelConfig, n: int, seed: int = 1, batch: int = 2) -> torch.Tensor:
    return torch.randint(0, cfg.vocab_size, (batch, n), generator=torch.Generator().manual_seed(seed))


def max_delta(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize("case", CASES)
def test_logits_match_hf(case):
    cfg, name = CASES[case]
    assert hf_class(cfg) == name
    model = our_model(cfg)
    hf = to_hf(model, attn_implementation="eager")
    assert type(hf).__name__ == name
    assert hf.config.tie_word_embeddings is cfg.tie_embeddings
    assert (hf.get_output_embeddings().weight is hf.get_input_embeddings().weight) is cfg.tie_embeddings
    x = tokens(cfg, cfg.block_size)
    with torch.no_grad():
        ours, theirs = model(x)[0], hf(x).logits
    assert ours.abs().max() > 1.0                    # the weights are not so small that anything would match
    assert max_delta(ours, theirs) < ATOL
    # and back: from_hf gives our exact weights
    back = from_hf(hf)
    assert back.cfg == cfg
    assert all(torch.equal(v, back.state_dict()[k]) for k, v in model.state_dict().items())


@pytest.mark.parametrize("family, cases", [("GPT2LMHeadModel", ["gpt2", "gpt2-untied"]),
                                           ("LlamaForCausalLM", ["llama-bias", "qwen3-gqa", "mistral-window"])])
def test_every_key_of_a_family_map_is_used_both_ways(family, cases):
    """Each entry of the family's one key map names a tensor transformers' model has and one ours has, of the same
    shape, and the two directions give back each other's keys; the cases between them set every flag a key needs
    (bias, qk_norm). The values are test_logits_match_hf's."""
    keys = KEY_MAPS[family]
    used = set()
    for case in cases:
        cfg, name = CASES[case]
        with torch.device("meta"):                      # the names and shapes, no weights
            ours = GPT(cfg).state_dict()
            theirs = getattr(transformers, name)(hf_config(cfg)).state_dict()
        hf_sd = to_hf_state(cfg, ours)
        assert {k: v.shape for k, v in hf_sd.items()} == {k: v.shape for k, v in theirs.items()
                                                         if not k.endswith(IGNORED_SUFFIXES)}
        assert {k: v.shape for k, v in from_hf_state(cfg, hf_sd).items()} == {k: v.shape for k, v in ours.items()}
        used |= {k.theirs for k in keys.top + keys.layer if k.applies(cfg)}
    assert used == {k.theirs for k in keys.top + keys.layer}


@pytest.mark.parametrize("case", CASES)
def test_round_trip_through_a_folder(case, tmp_path):
    cfg, name = CASES[case]
    model = our_model(cfg, seed=2)
    result = export(model, tmp_path / "hf")
    assert result.hf_class == name
    assert {"config.json", "model.safetensors"} <= set(result.files)
    conf = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert conf["architectures"] == [name] and conf["tie_word_embeddings"] is cfg.tie_embeddings
    weights = load_file(tmp_path / "hf" / "model.safetensors")
    assert ("lm_head.weight" in weights) is not cfg.tie_embeddings         # tied: the token matrix, stored once
    if not cfg.tie_embeddings:
        assert torch.equal(weights["lm_head.weight"], model.lm_head.weight)
    cfg2, back = import_folder(tmp_path / "hf")
    assert cfg2 == cfg and (back.lm_head.weight is back.tok_emb.weight) is cfg.tie_embeddings
    sd, sd2 = model.state_dict(), back.state_dict()
    assert sd.keys() == sd2.keys()
    assert all(torch.equal(sd[k], sd2[k]) for k in sd)
    # the saved folder loads in transformers itself and still matches
    hf = getattr(transformers, name).from_pretrained(tmp_path / "hf", attn_implementation="eager")
    x = tokens(cfg, 20)
    with torch.no_grad():
        assert max_delta(model(x)[0], hf(x).logits) < ATOL
        assert torch.equal(model(x)[0], back(x)[0])


@pytest.mark.parametrize("case", ["gpt2", "llama-gqa", "qwen3-gqa", "qwen3-untied"])
def test_greedy_tokens_match_hf_generate(case):
    cfg, _ = CASES[case]
    model = our_model(cfg, seed=3)
    hf = to_hf(model, attn_implementation="eager")
    prompt = tokens(cfg, 3, seed=4, batch=1)
    with torch.no_grad():
        out = hf.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=20,
                          pad_token_id=0)
    seq = generate(model, prompt, 20, temperature=0, cache=False)   # no KV cache: the whole sequence every step
    assert out.shape == (1, 23)
    assert out.tolist() == seq.tolist()
    assert len(set(seq[0, 3:].tolist())) > 1         # not a degenerate repeat of one token


@pytest.mark.parametrize("case", WINDOWED)
def test_windowed_greedy_tokens_match_hf_generate_with_both_caches(case):
    """Past the window: HF's sliding cache layers (the last window - 1 tokens beside the new one) and our ring
    buffer give the tokens the whole sequence gives."""
    cfg, _ = CASES[case]
    model = our_model(cfg, seed=3)
    hf = to_hf(model, attn_implementation="eager")
    prompt = tokens(cfg, 3, seed=4, batch=1)
    with torch.no_grad():
        out = hf.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=20,
                          pad_token_id=0, return_dict_in_generate=True)
    seq = generate(model, prompt, 20, temperature=0, cache=False)
    ours = generate(model, prompt, 20, temperature=0)    # ours with the ring buffer: one token a step
    assert out.sequences.shape == (1, 23) and 23 > 3 * cfg.attn_window
    assert out.sequences.tolist() == seq.tolist() == ours.tolist()
    assert len(set(seq[0, 3:].tolist())) > 1
    layers = out.past_key_values.layers                # HF's cache kept a window's worth in the sliding layers
    kept = [layer.keys.shape[-2] for layer in layers]
    assert kept == [22 if w is None else w - 1 for w in cfg.windows]


def test_the_window_is_not_off_by_one():
    """HF's sliding_window W keeps keys j with i - j < W (masking_utils: kv_idx > q_idx - sliding_window), ours
    0 <= i - j < attn_window: the same W. An HF model one token wider or narrower gives other logits."""
    cfg = CASES["qwen3-window"][0]
    model = our_model(cfg)
    x = tokens(cfg, cfg.block_size)
    hf = to_hf(model, attn_implementation="eager")
    with torch.no_grad():
        ours = model(x)[0]
        assert max_delta(ours, hf(x).logits) < ATOL
        for w in (cfg.attn_window - 1, cfg.attn_window + 1):
            hf.config.sliding_window = w
            for layer in hf.model.layers:
                if layer.self_attn.sliding_window is not None:
                    layer.self_attn.sliding_window = w
            assert max_delta(ours, hf(x).logits) > 0.1


def hf_saved(name: str, tmp_path, seed: int, tied: bool = True):
    """A folder saved by transformers itself, from a config built the HF way, every weight random."""
    if name == "GPT2LMHeadModel":
        conf = transformers.GPT2Config(vocab_size=37, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                                       activation_function="gelu", bos_token_id=None, eos_token_id=None,
                                       tie_word_embeddings=tied)
    elif name == "LlamaForCausalLM":
        conf = transformers.LlamaConfig(vocab_size=37, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                        tie_word_embeddings=tied, rope_parameters={"rope_type": "default",
                                                                                   "rope_theta": 1000.0})
    else:
        conf = transformers.Qwen3Config(vocab_size=37, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                        max_position_embeddings=32, tie_word_embeddings=tied)
    conf._attn_implementation = "eager"
    hf = getattr(transformers, name)(conf).double().eval()
    randomise(hf, seed)
    hf.save_pretrained(tmp_path / name)
    return hf, tmp_path / name


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("name", ["GPT2LMHeadModel", "LlamaForCausalLM", "Qwen3ForCausalLM"])
def test_import_a_folder_saved_by_hf(name, tied, tmp_path):
    hf, folder = hf_saved(name, tmp_path, seed=5, tied=tied)
    cfg, model = import_folder(folder)
    assert hf_class(cfg) == name and cfg.tie_embeddings is tied
    assert model.num_params() == hf.num_parameters()
    if not tied:
        assert torch.equal(model.lm_head.weight, hf.lm_head.weight.to(model.lm_head.weight.dtype))
    x = tokens(cfg, 32)
    with torch.no_grad():
        assert max_delta(model.double()(x)[0], hf(x).logits) < ATOL


@pytest.mark.parametrize("changes, flag", [
    (dict(norm="rmsnorm"), "pos='learned' with norm='rmsnorm'"),
    (dict(pos="none"), "pos='none'"),
    (dict(norm_placement="post"), "norm_placement='post'"),
    (dict(**MODERN, norm_placement="post"), "norm_placement='post'"),
    (dict(pos="rope"), "pos='rope' with norm='layernorm'"),
    (dict(mlp="swiglu"), "pos='learned' with mlp='swiglu'"),
    (dict(bias=False), "bias=False"),
    (dict(n_kv_head=2), "n_kv_head=2"),
    (dict(qk_norm=True), "qk_norm=True"),
    (dict(norm="rmsnorm", pos="rope"), "mlp='gelu'"),
    (dict(**{**MODERN, "bias": True}, qk_norm=True), "bias=True with qk_norm=True"),
    (dict(mlp="relu2"), "mlp='relu2'"),
    (dict(**{**MODERN, "mlp": "relu2"}), "mlp='relu2'"),
    (dict(logit_softcap=15.0), "logit_softcap=15"),
    (dict(**MODERN, logit_softcap=15.0, tie_embeddings=False), "logit_softcap=15"),
    (dict(attn_window=5), "attn_window=5 with pos='learned'"),                      # GPT-2 has no window
    (dict(attn_window=5, global_every=2), "attn_window=5 with pos='learned'"),
    (dict(**MODERN, attn_window=5, global_every=2), "global_every=2 with attn_window=5 and qk_norm=False"),
    (dict(**{**MODERN, "bias": True}, attn_window=5), "attn_window=5 with bias=True"),   # Mistral has no biases
])
def test_refusals_name_the_flag(changes, flag, tmp_path):
    cfg = dataclasses.replace(TINY, **changes)
    with pytest.raises(ConfigError) as e:
        hf_class(cfg)
    assert flag in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ConfigError):
        export(GPT(cfg), tmp_path / "out")
    assert not (tmp_path / "out").exists()               # refused before writing anything


def test_window_refusals_say_what_is_allowed():
    with pytest.raises(ConfigError, match=r"GPT-2, the class with learned positions, attends over the whole context; "
                                          r"sliding windows export with RoPE, RMSNorm and SwiGLU \(Mistral, or Qwen3 "
                                          r"with qk_norm\), else use attn_window=0"):
        hf_class(dataclasses.replace(TINY, attn_window=5))
    with pytest.raises(ConfigError, match=r"Mistral, the sliding-window class without QK-norm, slides in every layer; "
                                          r"use global_every=0 \(every layer local\), or qk_norm=True"):
        hf_class(dataclasses.replace(TINY, **MODERN, n_layer=4, attn_window=5, global_every=4))
    # the same rows with what is allowed: all-local Mistral, Qwen3 with the global layers
    assert hf_class(dataclasses.replace(TINY, **MODERN, n_layer=4, attn_window=5)) == "MistralForCausalLM"
    assert hf_class(dataclasses.replace(TINY, **MODERN, n_layer=4, attn_window=5, global_every=4,
                                        qk_norm=True)) == "Qwen3ForCausalLM"


def test_windowed_export_writes_the_window_fields(tmp_path):
    cfg, _ = CASES["qwen3-window"]
    export(our_model(cfg), tmp_path / "qwen3")
    conf = json.loads((tmp_path / "qwen3" / "config.json").read_text())
    assert (conf["use_sliding_window"], conf["sliding_window"], conf["max_window_layers"]) == (True, 5, 0)
    assert conf["layer_types"] == ["sliding_attention", "full_attention"] * 2
    cfg, _ = CASES["mistral-window"]
    export(our_model(cfg), tmp_path / "mistral")
    conf = json.loads((tmp_path / "mistral" / "config.json").read_text())
    assert conf["architectures"] == ["MistralForCausalLM"] and conf["sliding_window"] == 5
    assert "layer_types" not in conf and "attention_bias" not in conf
    conf = json.loads(hf_config(CASES["qwen3-gqa"][0]).to_json_string())          # no window: none written
    assert conf["use_sliding_window"] is False and conf["sliding_window"] is None


def test_rmsnorm_with_learned_positions_message():
    with pytest.raises(ConfigError, match="no Hugging Face class here has RMSNorm with learned positions"):
        hf_class(dataclasses.replace(TINY, norm="rmsnorm"))


def test_relu2_and_softcap_messages_say_why():
    with pytest.raises(ConfigError, match=r"no Hugging Face class here has a ReLU² MLP \(GPT-2 uses GELU, Llama "
                                          r"and Qwen3 SwiGLU\)"):
        hf_class(dataclasses.replace(TINY, **{**MODERN, "mlp": "relu2"}))
    with pytest.raises(ConfigError, match="no Hugging Face class here soft-caps its logits .*Gemma 2's "
                                          "final_logit_softcapping"):
        hf_class(dataclasses.replace(TINY, **MODERN, logit_softcap=30.0))


def test_a_tied_config_with_another_head_and_an_untied_one_without_a_head_are_refused():
    tied, untied = CASES["llama-gqa"][0], CASES["llama-untied"][0]
    sd = to_hf_state(untied, our_model(untied).state_dict())
    with pytest.raises(ConfigError, match="tie_word_embeddings=True with an lm_head.weight unlike") as e:
        from_hf_state(tied, sd)
    assert "\n" not in str(e.value)
    del sd["lm_head.weight"]
    with pytest.raises(DataError, match="lm_head.weight is missing"):
        from_hf_state(untied, sd)


def windowed_hf(name: str, layers: int, **window):
    """An HF Mistral or Qwen3 built the HF way with a window of 6 tokens, every weight random."""
    shape = dict(vocab_size=37, hidden_size=32, intermediate_size=48, num_hidden_layers=layers, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=8, max_position_embeddings=32, bos_token_id=None, eos_token_id=None)
    conf = getattr(transformers, name.replace("ForCausalLM", "Config"))(**shape, **window)
    conf._attn_implementation = "eager"
    hf = getattr(transformers, name)(conf).double().eval()
    randomise(hf, seed=6)
    return hf


@pytest.mark.parametrize("name, layers, window, flags", [
    ("MistralForCausalLM", 3, dict(sliding_window=6), (6, 0)),
    ("Qwen3ForCausalLM", 6, dict(use_sliding_window=True, sliding_window=6,
                                 layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2), (6, 3)),
    ("Qwen3ForCausalLM", 2, dict(use_sliding_window=True, sliding_window=6, max_window_layers=0), (6, 0)),
    # a window as long as the context hides nothing: full attention
    ("MistralForCausalLM", 2, dict(sliding_window=32), (0, 0)),
])
def test_import_windowed_folders_saved_by_hf(name, layers, window, flags, tmp_path):
    hf = windowed_hf(name, layers, **window)
    hf.save_pretrained(tmp_path / "hf")
    cfg, model = import_folder(tmp_path / "hf")
    assert (cfg.attn_window, cfg.global_every) == flags and hf_class(cfg) == (name if flags[0] else
                                                                              "LlamaForCausalLM")
    x = tokens(cfg, 32)
    with torch.no_grad():
        assert max_delta(model.double()(x)[0], hf(x).logits) < ATOL


@pytest.mark.parametrize("name, layers, window, field", [
    # Qwen3's own default layout: full below max_window_layers, sliding from it on (layer_types derived from it)
    ("Qwen3ForCausalLM", 4, dict(use_sliding_window=True, sliding_window=6, max_window_layers=2),
     "layer_types: full attention in layers 1-2 of 4 (1-based), the others a 6-token window: global_every can only "
     "make every k-th layer full"),
    ("Qwen3ForCausalLM", 4, dict(use_sliding_window=True, sliding_window=6,
                                 layer_types=["sliding_attention", "full_attention", "full_attention",
                                              "sliding_attention"]),
     "layer_types: full attention in layers 2-3 of 4 (1-based)"),
])
def test_window_patterns_we_cannot_express_are_refused_before_the_weights(name, layers, window, field, tmp_path):
    windowed_hf(name, layers, **window).save_pretrained(tmp_path / "hf")
    (tmp_path / "hf" / "model.safetensors").write_bytes(b"not read")
    with pytest.raises(ConfigError) as e:
        import_folder(tmp_path / "hf")
    assert str(e.value).startswith(field) and "\n" not in str(e.value)


def test_imported_window_fields_are_checked():
    qwen3 = json.loads(hf_config(CASES["qwen3-gqa"][0]).to_json_string())
    # a config.json without layer_types: Qwen3 slides from max_window_layers on (28 by default: all full here)
    assert config_from_hf({**qwen3, "use_sliding_window": True, "sliding_window": 6, "layer_types": None,
                           "max_window_layers": 0}).attn_window == 6
    with pytest.raises(ConfigError, match=r"^max_window_layers=1 \(no layer_types\): full attention in layer 1 of 2"):
        config_from_hf({**qwen3, "use_sliding_window": True, "sliding_window": 6, "layer_types": None,
                        "max_window_layers": 1})
    with pytest.raises(ConfigError, match="^layer_types: layer 1 sliding_attention but use_sliding_window=False"):
        config_from_hf({**qwen3, "layer_types": ["sliding_attention", "full_attention"]})
    with pytest.raises(ConfigError, match="^layer_types contains 'chunked_attention'"):
        config_from_hf({**qwen3, "layer_types": ["chunked_attention", "full_attention"]})
    mistral = json.loads(hf_config(CASES["mistral-window"][0]).to_json_string())
    with pytest.raises(ConfigError, match="^layer_types: full_attention in layer 2, but MistralForCausalLM gives "
                                          "every layer sliding_window"):
        config_from_hf({**mistral, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]})
    llama = json.loads(hf_config(CASES["llama-gqa"][0]).to_json_string())
    with pytest.raises(ConfigError, match="^layer_types contains 'sliding_attention': LlamaForCausalLM attends"):
        config_from_hf({**llama, "layer_types": ["sliding_attention", "full_attention"]})


def test_gpt2_small_parameter_count():
    cfg = ModelConfig(vocab_size=50257, block_size=1024, n_layer=12, n_head=12, n_kv_head=12, n_embd=768)
    with torch.device("meta"):
        ours = GPT(cfg).num_params()
        theirs = transformers.GPT2LMHeadModel(hf_config(cfg)).num_parameters()
    assert ours == 124_439_808
    assert theirs == ours


def test_unknown_or_unsupported_folders(tmp_path):
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text(json.dumps({"architectures": ["BertModel"],
                                                               "model_type": "bert"}))
    with pytest.raises(ConfigError, match="BertModel") as e:
        import_folder(tmp_path / "bert")
    assert "\n" not in str(e.value)
    with pytest.raises(DataError, match="config.json"):
        import_folder(tmp_path / "nothing")
    gelu_new = transformers.GPT2Config(vocab_size=37, n_positions=32, n_embd=32, n_layer=1, n_head=4)
    transformers.GPT2LMHeadModel(gelu_new).save_pretrained(tmp_path / "gpt2")
    with pytest.raises(ConfigError, match="activation_function='gelu_new'"):
        import_folder(tmp_path / "gpt2")
    cfg, _ = import_folder(tmp_path / "gpt2", approximate_gelu=True)
    assert cfg.mlp == "gelu" and cfg.n_layer == 1


def fake_run(root, cfg: ModelConfig, tokenizer: dict, seed: int = 0):
    """A pipeline-shaped tree: root/data/runs/<slug>/<seed>/{model.pt, run.json}, root/data/tokenized/tokenizer.json."""
    run = root / "data" / "runs" / "qk_norm" / "0"
    run.mkdir(parents=True)
    model = GPT(cfg)
    randomise(model, seed)
    torch.save(model.state_dict(), run / "model.pt")
    (run / "run.json").write_text(run_json(cfg))
    (root / "data" / "tokenized").mkdir(parents=True)
    (root / "data" / "tokenized" / "tokenizer.json").write_text(json.dumps(tokenizer))
    return run, model


def cli_args(argv):
    parser = argparse.ArgumentParser()
    hf_io.add_parsers(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_cli_export_and_import_a_run_with_a_char_tokenizer(tmp_path, capsys):
    cfg = dataclasses.replace(CASES["qwen3-gqa"][0], vocab_size=5)
    run, model = fake_run(tmp_path, cfg, {"kind": "char", "symbols": list("abcde")})
    args = cli_args(["export", str(run), str(tmp_path / "hf")])
    args.func(args)
    out = capsys.readouterr().out
    assert "Qwen3ForCausalLM" in out and "no tokenizer class" in out
    assert json.loads((tmp_path / "hf" / "vocab.json").read_text())["symbols"] == list("abcde")
    args = cli_args(["import", str(tmp_path / "hf")])
    args.func(args)
    out = capsys.readouterr().out
    assert "Qwen3ForCausalLM" in out and "n_kv_head" in out and "qk_norm" in out and "True" in out
    _, back = import_folder(tmp_path / "hf")
    assert all(torch.equal(v, back.state_dict()[k]) for k, v in model.state_dict().items())


@pytest.mark.parametrize("kind, symbols, text", [("char", list("abcde"), "cab"),
                                                  ("akshara", ["क", "कि", "म"], "किमक")])
def test_the_tokenizer_hint_of_an_export_is_a_call_that_works(kind, symbols, text, tmp_path, monkeypatch):
    """The line export prints for a char or akshara tokenizer holds Python that loads it: run here, as printed."""
    cfg = dataclasses.replace(CASES["qwen3-gqa"][0], vocab_size=len(symbols))
    run, _ = fake_run(tmp_path, cfg, {"kind": kind, "symbols": symbols})
    monkeypatch.chdir(tmp_path)
    note = export(run, "hf").tokenizer_note                                     # a relative folder, as typed
    code = note.split("`")[1]
    assert "load_tokenizer(json.load(open('hf/vocab.json', encoding='utf-8')))" in code
    space: dict = {}
    exec(code, space)
    tok = space["tok"]
    assert tok.decode(tok.encode(text)) == text and max(tok.encode(text)) < len(symbols)


def test_export_refuses_a_folder_that_holds_files_unless_forced_and_lists_what_it_wrote(tmp_path, capsys):
    cfg = dataclasses.replace(CASES["qwen3-gqa"][0], vocab_size=5)
    run, _ = fake_run(tmp_path, cfg, {"kind": "char", "symbols": list("abcde")})
    out_dir = tmp_path / "hf"
    out_dir.mkdir()
    (out_dir / "notes.txt").write_text("mine")
    assert main(["export", str(run), str(out_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"modern-gpt: error: {out_dir}: not empty (notes.txt); export into an empty or new folder, "
                          "or pass --force") and err.count("\n") == 1
    assert sorted(p.name for p in out_dir.iterdir()) == ["notes.txt"]               # nothing written
    assert main(["export", str(run), str(out_dir), "--force"]) == 0
    wrote = "wrote: config.json, generation_config.json, model.safetensors, vocab.json"
    assert wrote in capsys.readouterr().out
    assert main(["export", str(run), str(out_dir), "--force"]) == 0                 # again: each file once
    assert wrote in capsys.readouterr().out
    assert (out_dir / "notes.txt").read_text() == "mine"                            # other files kept
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".hf.")]         # no staging folder left


def test_export_a_run_with_a_bpe_tokenizer(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from modern_gpt.corpus.tokenizers import BPETokenizer
    tok = BPETokenizer.fit({"kind": "bpe", "vocab_size": 300}, "the cat sat on the mat\n" * 20)
    cfg = dataclasses.replace(CASES["llama-gqa"][0], vocab_size=tok.vocab_size)
    run, _ = fake_run(tmp_path, cfg, tok.to_dict())
    result = export(run, tmp_path / "hf")
    assert "tokenizer.json" in result.files
    loaded = tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
    assert loaded.encode("the cat").ids == tok.encode("the cat")


def test_export_refuses_a_tokenizer_of_another_size(tmp_path):
    cfg = CASES["gpt2"][0]
    run, _ = fake_run(tmp_path, cfg, {"kind": "char", "symbols": list("abc")})
    with pytest.raises(DataError, match="vocab_size=37"):
        export(run, tmp_path / "hf")


def test_export_of_a_missing_run_is_one_line(tmp_path):
    with pytest.raises(DataError, match="model.pt") as e:
        export(tmp_path / "nope", tmp_path / "hf")
    assert "\n" not in str(e.value)


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "hf_configs"


@pytest.mark.parametrize("name, message", [
    ("gpt2", "activation_function='gelu_new'"),
    ("llama-3.1-8b", "rope_type='llama3'"),
])
def test_real_configs_are_refused_with_the_field_named(name, message):
    path = FIXTURES / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")) as e:
        config_from_hf(json.loads(path.read_text()))
    assert "\n" not in str(e.value)


def test_real_gpt2_config_with_approximate_gelu_is_gpt2_small():
    path = FIXTURES / "gpt2.json"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    cfg = config_from_hf(json.loads(path.read_text()), approximate_gelu=True)
    with torch.device("meta"):
        assert GPT(cfg).num_params() == 124_439_808


@pytest.mark.parametrize("name, hf_name, params", [
    ("llama-3-8b", "LlamaForCausalLM", 8_030_261_248),             # published; tests/test_explain.py's figure too
    ("qwen3-8b", "Qwen3ForCausalLM", 8_190_735_360),
    ("mistral-7b-v0.1", "MistralForCausalLM", 7_241_732_096),       # published; a 4,096-token window in every layer
])
def test_real_untied_configs_import_with_their_own_head(name, hf_name, params):
    path = FIXTURES / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    cfg = config_from_hf(json.loads(path.read_text()))
    assert hf_class(cfg) == hf_name and cfg.tie_embeddings is False
    assert (cfg.attn_window, cfg.global_every) == ((4096, 0) if hf_name == "MistralForCausalLM" else (0, 0))
    with torch.device("meta"):
        assert GPT(cfg).num_params() == params
