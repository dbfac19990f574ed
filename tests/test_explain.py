"""explain / import-config against hand-computed figures for real config.json files (tests/fixtures/hf_configs)."""

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fakes import one_line
from modern_gpt.cli import explain as cli
from modern_gpt.core.errors import ConfigError, DataError
from modern_gpt.config.params import read_yaml
from modern_gpt.hf.arch import normalise
from modern_gpt.hf.config_json import read_config
from modern_gpt.hf.counts import active_params, kv_caches, param_counts, weight_bytes
from modern_gpt.hf.explain_config import explain
from modern_gpt.hf.import_config import model_section
from modern_gpt.config import ModelConfig
from modern_gpt.serving.kv_cache import dtype_bytes, human, kv_cache

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "hf_configs"
ALL = sorted(p.stem for p in FIX.glob("*.json"))


def cfg(name):
    return read_config(FIX / f"{name}.json")


# name: head_dim, MLP ratio, bf16 KV bytes per token, MHA ratio, parameters (by hand; published where noted)
FIGURES = {
    "gpt2": (64, 4.0, 2 * 12 * 12 * 64 * 2, 1, 124_439_808),                 # published
    "llama-2-7b": (128, 11008 / 4096, 2 * 32 * 32 * 128 * 2, 1, 6_738_415_616),
    "llama-3-8b": (128, 3.5, 2 * 32 * 8 * 128 * 2, 4, 8_030_261_248),         # published
    "llama-3.1-8b": (128, 3.5, 2 * 32 * 8 * 128 * 2, 4, 8_030_261_248),
    "llama-3.1-8b.v5": (128, 3.5, 2 * 32 * 8 * 128 * 2, 4, 8_030_261_248),
    "mistral-7b-v0.1": (128, 3.5, 2 * 32 * 8 * 128 * 2, 4, 7_241_732_096),    # published
    "qwen2.5-7b": (128, 18944 / 3584, 2 * 28 * 4 * 128 * 2, 7, 7_615_616_512),  # card: 7.61B
    "qwen3-8b": (128, 3.0, 2 * 36 * 8 * 128 * 2, 4, 8_190_735_360),           # card: 8.2B, 6.95B non-embedding
    "gemma-2-9b": (256, 4.0, 2 * 42 * 8 * 256 * 2, 2, 9_241_705_984),
    "gemma-3-4b-it": (256, 4.0, 2 * 34 * 4 * 256 * 2, 2, 3_880_263_168),      # language model only
    "gemma-3-4b-it.v5": (256, 4.0, 2 * 34 * 4 * 256 * 2, 2, 3_880_263_168),
    "olmo-2-1124-7b": (128, 11008 / 4096, 2 * 32 * 32 * 128 * 2, 1, 7_298_617_344),
    "phi-3-mini-4k-instruct": (96, 8192 / 3072, 2 * 32 * 32 * 96 * 2, 1, 3_821_079_552),
    # the Hub's safetensors index of SmolLM3-3B: total_parameters 3,075,098,624 and no lm_head.weight (tied)
    "smollm3-3b": (128, 11008 / 2048, 2 * 36 * 4 * 128 * 2, 4, 3_075_098_624),
}
MOE = ("mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b")    # their figures: test_mixture_of_experts


def test_every_fixture_has_figures():
    assert set(FIGURES) | set(MOE) == set(ALL)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figures(name):
    hd, ratio, per_token, mha_ratio, params = FIGURES[name]
    a = normalise(cfg(name))
    assert a.head_dim == hd
    assert a.hidden / a.n_embd == pytest.approx(ratio)
    gqa = kv_cache(a.n_layer, a.n_kv_head, a.head_dim, "bf16", 1)
    mha = kv_cache(a.n_layer, a.n_head, a.head_dim, "bf16", 1)
    assert gqa.bytes_per_token == per_token and mha.bytes_per_token == per_token * mha_ratio
    assert param_counts(a)["total"] == params
    text = explain(cfg(name), None, 1, "bf16")
    assert f"{params:,}" in text and f"{per_token:,} bytes" in text and f"ratio {mha_ratio}x" in text


def test_llama3_8b_sentence():
    text = explain(cfg("llama-3-8b"), 8192, 1, "bf16")
    assert "head_dim: 128 (not in the file: hidden_size / num_attention_heads = 4096 / 32)" in text
    assert "128 KiB per token instead of 512 KiB" in text
    assert "1 GiB instead of 4 GiB per 8,192-token sequence" in text
    assert "the cache, not the weights, the limit on how many users fit" in text
    assert "head_dim: 128 (read from the file)" in explain(cfg("qwen3-8b"))


def test_sliding_windows_cap_the_cache():
    a = normalise(cfg("mistral-7b-v0.1"))
    per_layer_token = 2 * 8 * 128 * 2
    c32 = kv_cache(a.n_layer, a.n_kv_head, a.head_dim, "bf16", 32768, 1, a.windows)
    assert c32.bytes_per_sequence == 32 * per_layer_token * 4096 == 512 * 2**20     # not 4 GiB
    g = normalise(cfg("gemma-2-9b"))
    assert g.windows[:4] == [4096, None, 4096, None] and g.windows.count(None) == 21
    c = kv_cache(g.n_layer, g.n_kv_head, g.head_dim, "bf16", 8192, 2, g.windows)
    assert c.bytes_per_sequence == 2 * 8 * 256 * 2 * (21 * 8192 + 21 * 4096)
    assert c.bytes_total == 2 * c.bytes_per_sequence
    for name in ("gemma-3-4b-it", "gemma-3-4b-it.v5"):
        w = normalise(cfg(name)).windows
        assert w.count(None) == 5 and w[5] is None and w[0] == 1024
    assert normalise(cfg("qwen2.5-7b")).windows == [None] * 28      # use_sliding_window: false


def test_v5_layout_reads_like_v4():
    for v4, v5 in (("llama-3.1-8b", "llama-3.1-8b.v5"), ("gemma-3-4b-it", "gemma-3-4b-it.v5")):
        a, b = normalise(cfg(v4)), normalise(cfg(v5))
        assert (a.rope_base, a.rope_local_base, a.windows) == (b.rope_base, b.rope_local_base, b.windows)
        assert a.rope_scaling["factor"] == b.rope_scaling["factor"] == 8.0
    g = normalise(cfg("gemma-3-4b-it.v5"))
    assert (g.rope_base, g.rope_local_base) == (1_000_000.0, 10_000.0)
    legacy = {**cfg("llama-3.1-8b"), "rope_scaling": {"type": "linear", "factor": 2.0}}
    assert normalise(legacy).rope_scaling["factor"] == 2.0


@pytest.mark.parametrize("name", ALL)
def test_every_field_is_explained(name):
    c = cfg(name)
    lines = explain(c).splitlines()
    for key in c:
        assert any(l.startswith(f"{key} = ") for l in lines), key
    for key in c.get("text_config", {}):
        assert any(l.startswith(f"text_config.{key} = ") for l in lines), key


def test_unknown_fields_are_listed():
    text = explain({**cfg("llama-3-8b"), "frobnication_depth": 3})
    assert "frobnication_depth = 3: unknown" in text


def test_errors_are_one_line(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    assert "not JSON" in one_line(lambda: read_config(bad), DataError)
    bert = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768,
            "num_attention_heads": 12, "num_hidden_layers": 12, "vocab_size": 30522}
    assert "not a causal" in one_line(lambda: normalise(bert), ConfigError)
    siglip = {"model_type": "siglip_vision_model", "hidden_size": 1152}
    assert "not a causal" in one_line(lambda: normalise(siglip), ConfigError)
    assert "num_key_value_heads=5" in one_line(lambda: normalise({**cfg("llama-3-8b"), "num_key_value_heads": 5}),
                                               ConfigError)
    assert "divisible" in one_line(lambda: normalise({**cfg("gpt2"), "n_head": 10}), ConfigError)
    assert "hidden_size=-4096" in one_line(lambda: normalise({**cfg("llama-3-8b"), "hidden_size": -4096}), ConfigError)
    with pytest.raises(ConfigError):
        dtype_bytes("fp4")


def test_kv_cache_units():
    assert [dtype_bytes(d) for d in ("fp32", "float32", "bf16", "fp16", "fp8", "int8")] == [4, 4, 2, 2, 1, 1]
    assert human(131072) == "128 KiB" and human(2**30) == "1 GiB" and human(1.5 * 2**20) == "1.5 MiB"


@pytest.mark.parametrize("name", ALL)
def test_import_config_builds(name):
    section, missing = model_section(cfg(name))
    m = ModelConfig.from_dict({**section, "vocab_size": 48})
    assert (m.n_layer, m.n_embd, m.n_head, m.block_size) == (4, 128, 4, 64)
    assert isinstance(missing, list)


def test_import_config_flags():
    s, missing = model_section(cfg("gpt2"))
    assert (s["norm"], s["pos"], s["mlp"], s["bias"], s["n_kv_head"], s["qk_norm"]) == \
        ("layernorm", "learned", "gelu", True, 4, False) and missing == []
    assert (s["tie_embeddings"], s["logit_softcap"]) == (True, 0.0)          # GPT-2 ties by default
    s, missing = model_section(cfg("llama-3-8b"), n_head=8, n_embd=256)
    assert (s["norm"], s["pos"], s["mlp"], s["bias"], s["qk_norm"]) == ("rmsnorm", "rope", "swiglu", False, False)
    assert s["n_head"] // s["n_kv_head"] == 4 and s["rope_base"] == 500000.0 and s["mlp_hidden"] == 896
    assert s["tie_embeddings"] is False and missing == []                    # the untied head is a flag now
    s, missing = model_section(cfg("qwen3-8b"))
    assert s["qk_norm"] is True and s["norm"] == "rmsnorm"
    assert s["tie_embeddings"] is False and missing == []
    s, missing = model_section(cfg("gemma-2-9b"))
    text = " ".join(missing)
    assert "soft-capping at 50" in text and "sliding-window" in text and "query_pre_attn_scalar" not in text
    assert "attention logit soft-capping at 50" in text and "final logit" not in text    # 50: attention, not ours
    assert (s["logit_softcap"], s["tie_embeddings"]) == (30.0, True)         # final_logit_softcapping 30; tied default
    _, missing = model_section(cfg("olmo-2-1124-7b"))
    assert any("across all heads" in m for m in missing)
    _, missing = model_section(cfg("llama-3.1-8b"))
    assert any("RoPE scaling (llama3" in m for m in missing)


@pytest.mark.parametrize("name, line", [
    ("llama-3-8b", "tie_word_embeddings = false: whether the output head reuses the embedding table (false: a "
                   "separate lm_head) [model.tie_embeddings]"),
    ("qwen3-8b", "tie_word_embeddings = false: whether the output head reuses the embedding table (false: a "
                 "separate lm_head) [model.tie_embeddings]"),
    ("gemma-2-9b", "final_logit_softcapping = 30.0: output logits squashed by cap·tanh(logit/cap); null = off "
                   "[model.logit_softcap]"),
])
def test_tied_head_and_final_softcap_are_our_flags(name, line):
    text = explain(cfg(name))
    assert line in text.splitlines()
    if name == "gemma-2-9b":                     # the attention's soft-cap has no flag of ours
        assert "attn_logit_softcapping = 50.0: attention scores squashed by cap·tanh(score/cap) " \
               "[not modelled here]" in text
    ModelConfig.from_dict({**model_section(cfg(name))[0], "vocab_size": 48})


def test_final_softcap_must_be_a_positive_number():
    capped = {**cfg("gemma-2-9b"), "final_logit_softcapping": "30"}
    assert "final_logit_softcapping='30'" in one_line(lambda: normalise(capped), ConfigError)
    assert normalise({**cfg("gemma-2-9b"), "final_logit_softcapping": None}).final_softcap is None
    assert model_section({**cfg("gemma-2-9b"), "final_logit_softcapping": None})[0]["logit_softcap"] == 0.0


def run(cmd, **kw):
    ns = argparse.Namespace(**{"n_layer": None, "n_embd": None, "n_head": None, "block_size": None, "write": None,
                               "context": None, "batch": 1, "dtype": "bf16", **kw})
    {"explain": cli.cmd_explain, "import-config": cli.cmd_import_config}[cmd](ns)


def test_cli(tmp_path, capsys):
    run("explain", config=str(FIX / "llama-3-8b.json"), context=8192, batch=16)
    assert "16 such sequences need 16 GiB instead of 64 GiB" in capsys.readouterr().out
    run("import-config", config=str(FIX / "qwen3-8b.json"))
    out = capsys.readouterr().out
    assert yaml.safe_load(out)["model"]["qk_norm"] is True
    assert yaml.safe_load(out)["model"]["tie_embeddings"] is False and "untied" not in out
    assert "# every feature of this model is modelled" in out
    run("import-config", config=str(FIX / "gemma-2-9b.json"))
    out = capsys.readouterr().out
    assert yaml.safe_load(out)["model"]["logit_softcap"] == 30.0 and "final logit" not in out
    parser = argparse.ArgumentParser()
    cli.add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["import-config", "x.json", "--n-layer", "2", "--write", "p.yaml"])
    assert (args.n_layer, args.write) == (2, "p.yaml")


def test_write_keeps_other_sections(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text((Path(__file__).parents[1] / "params.yaml").read_text())
    before = read_yaml(params)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    with pytest.raises(ConfigError):
        run("import-config", config=str(bad), write=str(params))
    assert read_yaml(params) == before
    run("import-config", config=str(FIX / "gpt2.json"), write=str(params), n_layer=2)
    after = read_yaml(params)
    assert {k: v for k, v in after.items() if k != "model"} == {k: v for k, v in before.items() if k != "model"}
    assert after["model"]["n_layer"] == 2 and after["model"]["norm"] == "layernorm"
    ModelConfig.from_dict({**after["model"], "vocab_size": 48})


def test_write_keeps_the_files_comments_and_the_ladder_still_resolves(tmp_path):
    from modern_gpt.pipeline.ladder_params import read_params
    params = tmp_path / "params.yaml"
    params.write_text((Path(__file__).parents[1] / "params.yaml").read_text())
    comments = [line for line in params.read_text().splitlines() if line.lstrip().startswith("#")]
    run("import-config", config=str(FIX / "qwen3-8b.json"), write=str(params))
    text = params.read_text()
    assert all(c in text for c in comments)                           # every whole-line comment survives
    assert "# the Step 1 values of the same flags" in text             # and the comments after values
    p = read_params(params)
    assert p.model.given["qk_norm"] is True and [r.label for r in p.rows(48)][-1] == "+ QK-norm"
    assert p.model.given["tie_embeddings"] is False and p.model.given["logit_softcap"] == 0.0


def test_the_cli_explains_and_refuses_in_one_line(tmp_path, capsys):
    from modern_gpt.cli import main
    assert main(["explain", str(FIX / "llama-3-8b.json"), "--context", "8192"]) == 0
    out = capsys.readouterr().out
    assert "128 KiB per token instead of 512 KiB and 1 GiB instead of 4 GiB per 8,192-token sequence" in out
    bad = tmp_path / "config.json"
    bad.write_text("{nope")
    assert main(["explain", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("modern-gpt: error: ") and err.count("\n") == 1 and "Traceback" not in err


# ---------------------------------------------------------------- mixture of experts, latent attention, hybrids
# Hand arithmetic from the shapes in each file; "card" is the rounded total on the model's card, within 2%.
def moe_case(name):
    if name == "mixtral-8x7b":
        # 32 layers, hidden 4096, 32 query heads and 8 K/V heads of 128, 8 experts of width 14336, top 2, no bias
        attn = 2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128                     # q and o, k and v
        expert = 3 * 4096 * 14336                                            # gate, up, down
        layer = attn + 8 * expert + 8 * 4096 + 2 * 4096                      # + router + 2 RMSNorms
        total = 32 * layer + 2 * 32000 * 4096 + 4096                         # + embedding, untied head, final norm
        active = total - 32 * (8 - 2) * expert
        kv = 2 * 32 * 8 * 128 * 2
        # card: 46.7B total, 12.9B active (all weights counted, the embeddings included)
        return total, active, kv, 46.7e9, 12.9e9
    if name == "qwen3-30b-a3b":
        # 48 layers, hidden 2048, 32 query heads and 4 K/V heads of 128 (head_dim read), per-head QK-norm,
        # 128 experts of width 768, top 8, every layer MoE (decoder_sparse_step 1, mlp_only_layers [])
        attn = 2 * 2048 * 32 * 128 + 2 * 2048 * 4 * 128 + 2 * 128            # + q_norm, k_norm
        expert = 3 * 2048 * 768
        layer = attn + 128 * expert + 128 * 2048 + 2 * 2048
        total = 48 * layer + 2 * 151936 * 2048 + 2048
        active = total - 48 * (128 - 8) * expert
        kv = 2 * 48 * 4 * 128 * 2
        # card: 30.5B total, 3.3B activated (29.9B non-embedding)
        return total, active, kv, 30.5e9, 3.3e9
    if name == "deepseek-v3":
        # 61 layers, hidden 7168, 128 heads; MLA: q through rank 1536, keys/values from a 512 latent, q/k heads
        # 128 + 64 RoPE, values 128; layers 0-2 dense (width 18432), 58 MoE: 256 routed of width 2048 + 1 shared,
        # top 8. The router's e_score_correction_bias is a buffer, not a parameter: not counted.
        attn = (7168 * 1536 + 1536 * 128 * (128 + 64)                        # q_a, q_b
                + 7168 * (512 + 64) + 512 * 128 * (128 + 128)                # kv_a (latent + RoPE key), kv_b
                + 128 * 128 * 7168 + 1536 + 512)                             # o; q_a and kv_a norms
        expert = 3 * 7168 * 2048
        moe_layer = attn + 256 * expert + expert + 256 * 7168 + 2 * 7168
        dense_layer = attn + 3 * 7168 * 18432 + 2 * 7168
        total = 3 * dense_layer + 58 * moe_layer + 2 * 129280 * 7168 + 7168
        active = total - 58 * (256 - 8) * expert
        kv = 61 * (512 + 64) * 2                                             # the latent and the shared RoPE key
        # card: 671B total, 37B activated; the Hub's 685B adds the 14B multi-token-prediction module (not built by
        # transformers, num_nextn_predict_layers: not counted here)
        return total, active, kv, 671e9, 37e9
    if name == "gpt-oss-20b":
        # 24 layers, hidden 2880, 64 query heads and 8 K/V heads of 64, biases on q/k/v/o, one sink per head,
        # 32 experts of width 2880 with biases (gate_up 2 x 2880, down 2880), router with bias, top 4
        attn = 2 * 2880 * 64 * 64 + 2 * 2880 * 8 * 64 + 64 * 64 + 2 * 8 * 64 + 2880 + 64
        expert = 3 * 2880 * 2880 + 2 * 2880 + 2880
        layer = attn + 32 * expert + 32 * 2880 + 32 + 2 * 2880
        total = 24 * layer + 2 * 201088 * 2880 + 2880
        active = total - 24 * (32 - 4) * expert
        kv = 2 * 24 * 8 * 64 * 2
        # card: 21B parameters, 3.6B active; the 3.6B leaves out the input embedding (checked below)
        return total, active, kv, 21e9, 3.6e9 + 201088 * 2880
    raise KeyError(name)


@pytest.mark.parametrize("name", MOE)
def test_mixture_of_experts(name):
    total, active, kv, card_total, card_active = moe_case(name)
    a = normalise(cfg(name))
    pc = param_counts(a)
    assert pc["total"] == total and active_params(a, pc) == active
    assert kv_caches(a, "bf16", 1, 1)[0].bytes_per_token == kv
    assert abs(total / card_total - 1) < 0.02 and abs(active / card_active - 1) < 0.02
    text = explain(cfg(name))
    assert f"{total:,} = embedding" in text and f"active parameters per token: {active:,}" in text
    assert f"({kv:,} bytes)" in text and "what the experts do not buy is memory" in text
    assert "not modelled" not in text.splitlines()[0]


def test_deepseek_latent_cache_and_its_sentence():
    a = normalise(cfg("deepseek-v3"))
    assert (a.mla.q_rank, a.mla.kv_rank, a.mla.nope, a.mla.rope, a.mla.v) == (1536, 512, 128, 64, 128)
    assert a.moe.layers == [False] * 3 + [True] * 58 and a.moe.shared == 1
    ours, plain = kv_caches(a, "bf16", 4096, 1)
    assert ours.bytes_per_token == 61 * 576 * 2 == 70_272                      # 68.62 KiB, not 1.67 MiB
    assert plain.bytes_per_token == 61 * 128 * (192 + 128) * 2
    text = explain(cfg("deepseek-v3"), 4096)
    assert "68.62 KiB per token instead of 4.77 MiB (71.1x less)" in text
    assert "head_dim: queries and keys 192 = qk_nope_head_dim 128 + qk_rope_head_dim 64" in text
    assert "weights' bytes: left out (fp8" in text                             # which matrices are fp8: unknown
    assert "256 routed experts + 1 shared (width 2048)" in text and "MoE in 58 of 61 layers" in text
    assert "RoPE scaling (yarn): factor 40, trained at 4,096 tokens" in text


def test_gpt_oss_windows_sinks_and_mxfp4():
    a = normalise(cfg("gpt-oss-20b"))
    assert a.windows == [128, None] * 12 and a.sinks and a.moe.router_bias and a.moe.expert_bias
    per_layer_token = 2 * 8 * 64 * 2
    c = kv_caches(a, "bf16", 131072, 1)[0]
    assert c.bytes_per_sequence == per_layer_token * (12 * 131072 + 12 * 128)  # the sliding layers stop at 128
    pc = param_counts(a)
    matrices = 24 * 32 * 3 * 2880 * 2880                                       # the experts' weights, not biases
    assert weight_bytes(a, pc, "bf16").nbytes == matrices * 17 // 32 + (pc["total"] - matrices) * 2
    text = explain(cfg("gpt-oss-20b"))
    assert "attention sinks: every head has one learned logit" in text and "12 of 24 layers keep at most 128" in text
    assert "in MXFP4 (4.25 bits each)" in text


def test_nope_layers_follow_transformers():
    # transformers (SmolLM3, Llama 4): use_rope = no_rope_layers[layer_idx], so 1 = RoPE, 0 = NoPE
    a = normalise(cfg("smollm3-3b"))
    assert a.rope_layers == [True, True, True, False] * 9
    assert "NoPE: 9 of 36 layers rotate nothing" in explain(cfg("smollm3-3b"))
    _, missing = model_section(cfg("smollm3-3b"))
    assert any(m.startswith("NoPE layers (9 of 36") for m in missing)


def llama4_scout_defaults():
    """Llama-4-Scout's text model as transformers' Llama4TextConfig builds it with every field left out (its class
    defaults, documented for meta-llama/Llama-4-Scout-17B-16E). Not the published file, which no public copy
    we found holds in full; a config made here, in the test."""
    return {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
            "text_config": {"model_type": "llama4_text", "vocab_size": 202048, "hidden_size": 5120,
                            "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_hidden_layers": 48,
                            "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
                            "max_position_embeddings": 131072, "rope_theta": 500000.0, "num_experts_per_tok": 1,
                            "num_local_experts": 16, "interleave_moe_layer_step": 1, "attention_chunk_size": 8192,
                            "no_rope_layer_interval": 4, "use_qk_norm": True, "tie_word_embeddings": False}}


def test_llama4_chunks_nope_and_shared_expert():
    a = normalise(llama4_scout_defaults())
    attn = 2 * 5120 * 40 * 128 + 2 * 5120 * 8 * 128
    expert = 3 * 5120 * 8192
    layer = attn + 16 * expert + expert + 16 * 5120 + 2 * 5120                # routed + shared + router + norms
    total = 48 * layer + 2 * 202048 * 5120 + 5120
    pc = param_counts(a)
    assert pc["total"] == total == 107_769_861_120
    # card: 109B total, 17B active, the vision encoder included (the text model alone is less)
    assert abs(total / 109e9 - 1) < 0.02 and abs(active_params(a, pc) / 17e9 - 1) < 0.02
    assert active_params(a, pc) == total - 48 * 15 * expert
    assert a.rope_layers == [True, True, True, False] * 12 and a.window_kind == "chunk"
    assert a.windows == [8192, 8192, 8192, None] * 12                          # the RoPE layers are chunked
    c = kv_caches(a, "bf16", 32768, 1)[0]
    assert c.bytes_per_sequence == 2 * 8 * 128 * 2 * (36 * 8192 + 12 * 32768)
    text = explain(llama4_scout_defaults(), 32768)
    assert "chunked attention: 36 of 48 layers attend only within 8,192-token chunks" in text
    assert "the QK-norm (L2, no weights) runs on the RoPE layers only" in text and "1 shared" in text


def test_rope_scaling_is_explained():
    for name in ("llama-3.1-8b", "llama-3.1-8b.v5"):
        text = explain(cfg(name))
        assert "RoPE scaling (llama3): factor 8, trained at 8,192 tokens (original_max_position_embeddings), " \
               "the file's context 131,072 (16x)" in text
        assert "those longer than 8,192/1 are stretched 8x" in text
    assert "divided by 32" in explain(cfg("gpt-oss-20b"))


def test_unknown_family_with_expert_fields_prints_no_parameter_count():
    weird = {"architectures": ["FrobMoeForCausalLM"], "model_type": "frob_moe", "hidden_size": 1024,
             "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 1000, "max_position_embeddings": 2048,
             "rope_theta": 10000.0, "num_local_experts": 8, "frob_expert_width": 512}
    text = explain(weird)
    first = text.splitlines()[0]
    assert "'frob_moe' is not a family this tool knows" in first
    assert "num_local_experts" in first and "frob_expert_width" in first and "left out: the parameter counts" in first
    assert "parameters (computed" not in text and "active parameters" not in text
    assert "the parameter counts and the weights' bytes: left out" in text
    assert "KV cache (bf16" in text                     # attention is untouched by expert fields
    _, missing = model_section(weird)
    assert any("frob_expert_width" in m for m in missing) and any("read the Llama way" in m for m in missing)


def test_unknown_family_without_such_fields_is_read_the_llama_way_and_says_so():
    plain = {**cfg("llama-3-8b"), "model_type": "frob", "architectures": ["FrobForCausalLM"]}
    text = explain(plain)
    assert "'frob' is not a family this tool knows, read the Llama way" in text.splitlines()[0]
    assert f"{8_030_261_248:,}" in text


def test_a_known_family_with_a_field_it_does_not_model_leaves_out_what_it_changes():
    text = explain({**cfg("llama-3-8b"), "kv_lora_rank": 512})
    assert "kv_lora_rank (latent, not modelled for this family)" in text.splitlines()[0]
    assert "parameters (computed" not in text and "KV cache (bf16" not in text
    text = explain({**cfg("llama-3-8b"), "attention_window_pattern": 4})
    assert "KV cache (bf16" in text and "KV cache per sequence at" not in text
    assert "the KV cache per sequence: left out" in text
    text = explain({**cfg("qwen3-8b"), "layer_types": ["linear_attention"] * 36})
    assert "layer_types linear_attention" in text.splitlines()[0] and "KV cache (bf16" not in text


@pytest.mark.parametrize("name", MOE)
def test_import_config_names_the_experts(name):
    _, missing = model_section(cfg(name))
    assert any(m.startswith("mixture of experts") for m in missing)
    if name == "deepseek-v3":
        assert any(m.startswith("multi-head latent attention") for m in missing)
    if name in ("deepseek-v3", "gpt-oss-20b"):
        assert any(m.startswith("weights stored quantised") for m in missing)
    if name == "gpt-oss-20b":
        assert any(m.startswith("attention sinks") for m in missing)


# ---------------------------------------------------------------- sliding windows as attn_window / global_every
def small(model_type, arch, layers=6, **kw):
    """A small config.json of a family, written here: 6 layers, a 256-token context."""
    return {"architectures": [arch], "model_type": model_type, "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
            "vocab_size": 100, "max_position_embeddings": 256, "rope_theta": 10000.0, **kw}


SLIDE, FULL = "sliding_attention", "full_attention"


@pytest.mark.parametrize("config, line", [
    # Mistral: one window in every layer
    (small("mistral", "MistralForCausalLM", sliding_window=16),
     "as our flags: attn_window=16, global_every=0 (every layer local)"),
    # Gemma 3: 5 local + 1 global (its default pattern 6, no layer_types in the file), 12 layers
    (small("gemma3_text", "Gemma3ForCausalLM", layers=12, sliding_window=16),
     "as our flags: attn_window=16, global_every=6 (layers 6, 12 full, the others local)"),
    # gpt-oss: alternating, from layer_types
    (small("gpt_oss", "GptOssForCausalLM", sliding_window=16, layer_types=[SLIDE, FULL] * 3, num_local_experts=4,
           num_experts_per_tok=2), "as our flags: attn_window=16, global_every=2 (layers 2, 4, 6 full, the others local)"),
    (small("qwen3", "Qwen3ForCausalLM", layers=8, use_sliding_window=True, sliding_window=16,
           layer_types=[SLIDE, FULL] * 4),
     "as our flags: attn_window=16, global_every=2 (layers 2, 4, 6, ... full, the others local)"),
    # Qwen3 without layer_types: transformers slides from max_window_layers on, so layers 1-2 are full
    (small("qwen3", "Qwen3ForCausalLM", use_sliding_window=True, sliding_window=16, max_window_layers=2),
     "as our flags: none fits: full attention in layers 1-2 of 6 (1-based), the others a 16-token window: "
     "global_every can only make every k-th layer full (layers k, 2k, ...), or none"),
    (small("qwen3", "Qwen3ForCausalLM", use_sliding_window=True, sliding_window=16,
           layer_types=[SLIDE, FULL, FULL, SLIDE, SLIDE, FULL]),
     "as our flags: none fits: full attention in layers 2-3, 6 of 6 (1-based)"),
    # a window as long as the context hides nothing
    (small("mistral", "MistralForCausalLM", sliding_window=256),
     "as our flags: attn_window=0, global_every=0 (a 256-token window hides nothing of the 256-token context)"),
])
def test_explain_maps_the_windows_to_our_flags(config, line):
    lines = explain(config).splitlines()
    assert any(l.startswith(line) for l in lines), [l for l in lines if "our flags" in l]
    assert sum("as our flags" in l for l in lines) == 1


def test_explain_marks_the_window_fields_with_our_flags():
    text = explain(small("qwen3", "Qwen3ForCausalLM", use_sliding_window=True, sliding_window=16,
                         layer_types=[SLIDE, FULL] * 3)).splitlines()
    assert "sliding_window = 16: tokens a sliding-window layer attends to, its own included (and keeps in its KV " \
           "cache) [model.attn_window]" in text
    assert "layer_types = [6 entries: full_attention, sliding_attention]: per layer: full_attention or " \
           "sliding_attention [model.global_every]" in text
    assert "use_sliding_window = true: whether sliding_window is used at all (Qwen2/3); false = attn_window 0 " \
           "[model.attn_window]" in text


def test_qwen_windows_follow_max_window_layers_without_layer_types():
    a = normalise(small("qwen3", "Qwen3ForCausalLM", use_sliding_window=True, sliding_window=16, max_window_layers=2))
    assert a.windows == [None, None, 16, 16, 16, 16]
    assert normalise(small("qwen3", "Qwen3ForCausalLM", use_sliding_window=True, sliding_window=16)).windows == \
        [None] * 6                                        # max_window_layers defaults to 28: all 6 below it
    assert normalise(small("qwen3", "Qwen3ForCausalLM", sliding_window=16, max_window_layers=0)).windows == [None] * 6
    # Mistral's code gives every layer the window; a layer_types in its file is not read
    assert normalise(small("mistral", "MistralForCausalLM", sliding_window=16, layer_types=[FULL] * 6)).windows == \
        [16] * 6


def test_chunked_attention_is_not_our_window():
    text = explain(llama4_scout_defaults())
    assert "chunked attention has no flag of ours: attn_window slides with each query" in text
    assert "as our flags" not in text


@pytest.mark.parametrize("config, flags", [
    (small("mistral", "MistralForCausalLM", sliding_window=16), (16, 0)),
    (small("gpt_oss", "GptOssForCausalLM", layers=4, sliding_window=16, layer_types=[SLIDE, FULL] * 2,
           num_local_experts=4, num_experts_per_tok=2), (16, 2)),
    (small("qwen3", "Qwen3ForCausalLM", use_sliding_window=False, sliding_window=16), (0, 0)),
])
def test_import_config_carries_a_window_that_fits_the_toy(config, flags):
    section, missing = model_section(config)
    assert (section["attn_window"], section["global_every"]) == flags
    assert not any("sliding-window" in m for m in missing)
    m = ModelConfig.from_dict({**section, "vocab_size": 48})
    assert m.windows == ((None,) * 4 if not flags[0] else
                         tuple(None if flags[1] and i % flags[1] == 0 else flags[0] for i in range(1, 5)))


def test_import_config_says_why_a_window_is_left_out():
    _, missing = model_section(small("mistral", "MistralForCausalLM", sliding_window=100))
    assert "sliding-window attention (attn_window=100, global_every=0): a window not below the toy's block_size=64 " \
           "(--block-size above 100 keeps it): full attention used" in missing
    section, _ = model_section(small("mistral", "MistralForCausalLM", sliding_window=100), block_size=128)
    assert section["attn_window"] == 100
    section, missing = model_section(small("gemma3_text", "Gemma3ForCausalLM", layers=12, sliding_window=16))
    assert section["attn_window"] == 0 and any(m.startswith(
        "sliding-window attention (attn_window=16, global_every=6): more than the toy's n_layer=4") for m in missing)
    assert model_section(small("gemma3_text", "Gemma3ForCausalLM", layers=12, sliding_window=16),
                         n_layer=6)[0]["global_every"] == 6
    section, missing = model_section(small("qwen3", "Qwen3ForCausalLM", use_sliding_window=True, sliding_window=16,
                                           max_window_layers=2))
    assert section["attn_window"] == 0 and any("global_every can only make every k-th layer full" in m
                                               for m in missing)


# ---------------------------------------------------------------- checked against transformers
# Every config these tests explain, built by transformers on the meta device (shapes, no weights): explain's parameter
# count equals the built model's, part by part, so a transformers upgrade that changes a family fails here. One
# convention: Gemma 3's file is the multimodal model, and explain counts its language model only ("[language model
# only]"), so the vision tower and its projector are set apart. DeepSeek-V3's multi-token-prediction module
# (num_nextn_predict_layers) is built by neither. No fixture is left out.
CHECKED = {**{name: cfg(name) for name in ALL}, "llama4-scout (defaults)": llama4_scout_defaults()}
LANGUAGE_MODEL_ONLY = ("gemma-3-4b-it", "gemma-3-4b-it.v5")


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_explain_counts_what_transformers_builds(name):
    pytest.importorskip("transformers")
    from modern_gpt.hf.meta import meta_model, parts_of
    model = meta_model(CHECKED[name])
    counted = parts_of(model)
    total, theirs = sum(p.numel() for p in model.parameters()), dict(counted.parts)
    assert counted.total == total                                            # every parameter in one part
    vision = theirs.pop("vision")
    assert (vision > 0) is (name in LANGUAGE_MODEL_ONLY) and theirs.pop("other") == 0
    ours = param_counts(normalise(CHECKED[name]))
    assert ours.pop("total") == total - vision
    assert ours == theirs
    assert f"{total - vision:,} = embedding" in explain(CHECKED[name])


def phi(**kw):
    """A small Phi-1/2 config, written here: LayerNorm, partial RoPE, a plain GELU MLP, biases, an untied head with a
    bias; explain has no arithmetic for the family and reads it the Llama way."""
    return {"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_size": 64, "intermediate_size": 256,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 128,
            "partial_rotary_factor": 0.5, "hidden_act": "gelu_new", "layer_norm_eps": 1e-5, "rope_theta": 10000.0,
            "tie_word_embeddings": False, **kw}


def test_a_family_explain_does_not_model_gets_transformers_count():
    transformers = pytest.importorskip("transformers")
    import torch
    with torch.device("meta"):
        model = transformers.PhiForCausalLM(transformers.PhiConfig(**phi()))
    total = sum(p.numel() for p in model.parameters())
    embedding, head = 100 * 64, 100 * 64 + 100
    norms = 2 * (2 * 64) + 2 * 64                               # one LayerNorm per layer (parallel blocks), a final
    attention = 2 * (4 * 64 * 64 + 4 * 64)                      # q, k, v, dense with biases
    mlp = 2 * (2 * 64 * 256 + 256 + 64)                         # fc1, fc2 with biases
    assert total == embedding + attention + mlp + norms + head
    lines = explain(phi()).splitlines()
    assert lines[0].startswith("PhiForCausalLM: model_type 'phi' is not a family this tool knows, read the Llama way")
    assert "every figure below assumes that but the parameters, which transformers counted" in lines[0]
    assert (f"parameters (counted by transformers on the meta device, not modelled here: PhiForCausalLM): {total:,} = "
            f"embedding {embedding:,} + attention {attention:,} + MLP {mlp:,} + norms {norms:,} + lm_head {head:,} "
            "(untied)") in lines
    assert not any(l.startswith("parameters (computed") for l in lines)
    assert any(l.startswith("KV cache (bf16, 2 bytes/number)") for l in lines)      # still read the Llama way


def test_a_family_read_neither_way_gets_only_transformers_count():
    pytest.importorskip("transformers")
    mamba = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 2,
             "vocab_size": 100, "state_size": 8}
    with pytest.raises(ConfigError, match="num_attention_heads: missing"):
        normalise(mamba)
    lines = explain(mamba).splitlines()
    assert lines[0] == ("MambaForCausalLM: model_type 'mamba' is not a family this tool knows, and reading it the "
                        "Llama way fails (num_attention_heads: missing): only transformers' parameter count is "
                        "derived, 6 fields")
    assert lines[lines.index("derived:") + 1:] == [
        "parameters (counted by transformers on the meta device, not modelled here: MambaForCausalLM): 65,728 = "
        "embedding 6,400 + attention 0 + norms 192 + lm_head 0 + other 59,136 (tied to the embedding); other: the "
        "mixer modules"]
    with pytest.raises(ConfigError, match="num_hidden_layers: missing"):             # transformers builds none
        explain({"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_size": -4})


def test_without_transformers_explain_is_as_before(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)                           # import transformers fails
    assert "parameters (computed from the shapes, not read)" in explain(phi())
    assert "every figure below assumes that, " in explain(phi()).splitlines()[0]
    with pytest.raises(ConfigError, match="num_attention_heads: missing"):
        explain({"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 64,
                 "num_hidden_layers": 2, "vocab_size": 100})


def test_importing_explain_imports_neither_transformers_nor_torch():
    code = ("import sys; import modern_gpt.hf.explain_config, modern_gpt.hf.meta; "
            "print(sorted({'transformers', 'torch'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_dense_model_has_no_expert_parts_and_one_byte_is_one_byte():
    text = explain(cfg("llama-3-8b"), None, 1, "fp8")
    params = next(l for l in text.splitlines() if l.startswith("parameters"))
    assert "+ attention 1,342,177,280 + MLP 5,637,144,576 + norms 266,240 +" in params
    assert "expert" not in params and "router" not in params
    assert "KV cache (fp8, 1 byte/number): 2 x 32 layers" in text and "bytes/number" not in text
    assert "KV cache (fp8, 1 byte/number): 61 layers x (512 latent" in explain(cfg("deepseek-v3"), None, 1, "fp8")
    assert "KV cache (bf16, 2 bytes/number)" in explain(cfg("llama-3-8b"))
    # a mixture of experts shows the parts it has: Mixtral no dense MLP, DeepSeek-V3 both
    mixtral = explain(cfg("mixtral-8x7b"))
    assert "+ attention 1,342,177,280 + experts 45,097,156,608 + router 1,048,576 + norms" in mixtral
    assert "+ MLP 1,189,085,184 + experts 653,908,770,816 + shared experts" in explain(cfg("deepseek-v3"))


def quoted_runs(lines):
    """The runs of quoted lines between the '...' that stand for lines left out."""
    run = []
    for line in lines + ["..."]:
        if line != "...":
            run.append(line)
        elif run:
            yield run
            run = []


def test_the_docs_quote_what_explain_prints(capsys, monkeypatch):
    """docs/config-json.md quotes explain's output: each run of quoted lines is a run of the output, in order."""
    from modern_gpt.cli import main
    monkeypatch.chdir(ROOT)                                       # the commands name the fixtures from the root
    blocks = re.findall(r"```\n(\$ modern-gpt explain .*?)```", (ROOT / "docs" / "config-json.md").read_text(), re.S)
    assert len(blocks) == 4
    for block in blocks:
        command, *quoted = block.splitlines()
        assert main(shlex.split(command)[2:]) == 0
        out, at = capsys.readouterr().out.splitlines(), 0
        for run in quoted_runs(quoted):
            found = [i for i in range(at, len(out)) if out[i:i + len(run)] == run]
            assert found, (command, run[0])
            at = found[0] + len(run)
