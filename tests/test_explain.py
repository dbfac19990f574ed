"""explain / import-config against hand-computed figures for real config.json files (tests/fixtures/hf_configs)."""

import argparse
import json
from pathlib import Path

import pytest
import yaml

from modern_gpt.cli import explain as cli
from modern_gpt.core.errors import ConfigError, DataError
from modern_gpt.core.params import read_yaml
from modern_gpt.hf.configs import normalise, param_counts, read_config
from modern_gpt.hf.explain import explain
from modern_gpt.hf.import_config import model_section
from modern_gpt.nn import ModelConfig
from modern_gpt.serving.kv_cache import dtype_bytes, human, kv_cache

FIX = Path(__file__).parent / "fixtures" / "hf_configs"
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
}


def test_every_fixture_has_figures():
    assert set(FIGURES) == set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_figures(name):
    hd, ratio, per_token, mha_ratio, params = FIGURES[name]
    a = normalise(cfg(name))
    assert a.head_dim == hd
    assert a.intermediate / a.hidden == pytest.approx(ratio)
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


def one_line(exc):
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_errors_are_one_line(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(DataError) as e:
        read_config(bad)
    assert "not JSON" in one_line(e)
    bert = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768,
            "num_attention_heads": 12, "num_hidden_layers": 12, "vocab_size": 30522}
    with pytest.raises(ConfigError) as e:
        normalise(bert)
    assert "not a causal" in one_line(e)
    with pytest.raises(ConfigError) as e:
        normalise({"model_type": "siglip_vision_model", "hidden_size": 1152})
    assert "not a causal" in one_line(e)
    with pytest.raises(ConfigError) as e:
        normalise({**cfg("llama-3-8b"), "num_key_value_heads": 5})
    assert "num_key_value_heads=5" in one_line(e)
    with pytest.raises(ConfigError) as e:
        normalise({**cfg("gpt2"), "n_head": 10})
    assert "divisible" in one_line(e)
    with pytest.raises(ConfigError) as e:
        normalise({**cfg("llama-3-8b"), "hidden_size": -4096})
    assert "hidden_size=-4096" in one_line(e)
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
    s, missing = model_section(cfg("llama-3-8b"), n_head=8, n_embd=256)
    assert (s["norm"], s["pos"], s["mlp"], s["bias"], s["qk_norm"]) == ("rmsnorm", "rope", "swiglu", False, False)
    assert s["n_head"] // s["n_kv_head"] == 4 and s["rope_base"] == 500000.0 and s["mlp_hidden"] == 896
    s, _ = model_section(cfg("qwen3-8b"))
    assert s["qk_norm"] is True and s["norm"] == "rmsnorm"
    _, missing = model_section(cfg("gemma-2-9b"))
    text = " ".join(missing)
    assert "soft-capping at 50" in text and "sliding-window" in text and "query_pre_attn_scalar" not in text
    _, missing = model_section(cfg("olmo-2-1124-7b"))
    assert any("across all heads" in m for m in missing)
    _, missing = model_section(cfg("llama-3.1-8b"))
    assert any("RoPE scaling (llama3" in m for m in missing)


def run(cmd, **kw):
    ns = argparse.Namespace(**{"n_layer": None, "n_embd": None, "n_head": None, "block_size": None, "write": None,
                               "context": None, "batch": 1, "dtype": "bf16", **kw})
    cli.COMMANDS[cmd](ns)


def test_cli(tmp_path, capsys):
    run("explain", config=str(FIX / "llama-3-8b.json"), context=8192, batch=16)
    assert "16 such sequences need 16 GiB instead of 64 GiB" in capsys.readouterr().out
    run("import-config", config=str(FIX / "qwen3-8b.json"))
    out = capsys.readouterr().out
    assert yaml.safe_load(out)["model"]["qk_norm"] is True
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
    from modern_gpt.pipeline.params import load
    params = tmp_path / "params.yaml"
    params.write_text((Path(__file__).parents[1] / "params.yaml").read_text())
    comments = [line for line in params.read_text().splitlines() if line.lstrip().startswith("#")]
    run("import-config", config=str(FIX / "qwen3-8b.json"), write=str(params))
    text = params.read_text()
    assert all(c in text for c in comments)                           # every whole-line comment survives
    assert "# the Step 1 values of the same flags" in text             # and the comments after values
    p = load(params)
    assert p.model["qk_norm"] is True and [r.label for r in p.rows(48)][-1] == "+ QK-norm"


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
