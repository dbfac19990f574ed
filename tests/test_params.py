"""params.yaml is read as DVC reads it (YAML 1.2) and checked strictly, one line per mistake."""

from pathlib import Path

import pytest
import yaml

from modern_gpt.errors import ConfigError
from modern_gpt.params import Yaml12Loader, load, parse, read_yaml

ROOT = Path(__file__).resolve().parents[1]


def default() -> dict:
    return read_yaml(ROOT / "params.yaml")


def test_the_committed_params_resolve_to_the_seven_row_ladder():
    p = load(ROOT / "params.yaml")
    rows = p.rows(vocab_size=50)
    assert [r.label for r in rows] == ["Step 1 baseline", "+ RMSNorm", "+ RoPE", "+ SwiGLU", "+ no bias",
                                       "+ GQA (kv=2)", "+ QK-norm"]
    assert rows[0].config.n_kv_head == rows[0].config.n_head          # empty baseline n_kv_head: multi-head
    assert len(p.seeds) == 3


@pytest.mark.parametrize("text, value", [
    ("x: no", "no"), ("x: yes", "yes"), ("x: on", "on"), ("x: true", True), ("x: False", False),
    ("x: 1e-3", 0.001), ("x: 1.0e-05", 1e-05), ("x: 010", 10), ("x: 0x10", 16), ("x:", None), ("x: null", None),
    ("x: 1_000", "1_000"), ("x: .5", 0.5),
])
def test_yaml_is_read_with_the_1_2_core_rules_like_dvc(text, value):
    assert yaml.load(text, Loader=Yaml12Loader)["x"] == value


def with_(section: str, key: str | None, value) -> dict:
    raw = default()
    if key is None:
        raw[section] = value
    else:
        raw[section] = {**raw[section], key: value}
    return raw


BAD = [
    (with_("model", "bias", "no"), "model.bias='no': must be true or false"),
    (with_("model", "norm", "batchnorm"), "model.norm='batchnorm': allowed values are layernorm, rmsnorm"),
    (with_("model", "n_kv_head", 3), "n_head must be divisible by n_kv_head"),
    (with_("model", "colour", "red"), "model.colour: unknown key"),
    (with_("baseline", "qk_norm", "off"), "baseline.qk_norm='off': must be true or false"),
    (with_("ladder", None, ["norm", "warp"]), "ladder: unknown flag 'warp'"),
    (with_("ladder", None, ["norm"]), "differ in n_kv_head, pos, mlp, bias, qk_norm"),
    (with_("seeds", None, [0, 0]), "lists a seed twice"),
    (with_("seeds", None, []), "at least one seed"),
    (with_("seeds", None, [True]), "not a non-negative integer"),
    (with_("train", "iters", "many"), "train.iters='many': must be an integer"),
    (with_("train", "device", "tpu"), "train.device='tpu': allowed values are cpu, cuda, auto"),
    (with_("tokenizer", "kind", "words"), "tokenizer.kind='words': allowed values are char, akshara, bpe"),
    (with_("data", "val_fraction", 1.5), "data.val_fraction=1.5"),
    (with_("report", "confidence", 2.0), "report.confidence=2.0"),
    ({**default(), "extra": {}}, "params.extra: unknown section"),
]


@pytest.mark.parametrize("raw, message", BAD, ids=[m for _, m in BAD])
def test_each_mistake_gives_one_line_naming_the_field(raw, message):
    with pytest.raises(ConfigError) as e:
        parse(raw)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_unreadable_yaml_is_one_line(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match=r"params.yaml: not valid YAML \(line 2\)"):
        load(bad)
