"""Bad settings fail fast with one line naming the field and what is allowed."""

import dataclasses

import pytest

from modern_gpt.config import LADDER, MODERN, ModelConfig, TrainConfig, ladder
from modern_gpt.errors import ConfigError

BAD_MODEL = [
    (dict(n_head=8, n_kv_head=3, n_embd=64), "n_head must be divisible by n_kv_head"),
    (dict(norm="batchnorm"), "norm='batchnorm': allowed values are layernorm, rmsnorm"),
    (dict(norm_placement="sandwich"), "allowed values are pre, post"),
    (dict(pos="alibi"), "allowed values are learned, rope"),
    (dict(mlp="relu"), "allowed values are gelu, swiglu"),
    (dict(n_embd=12, n_head=4, pos="rope"), "head dim (3) must be even"),
    (dict(n_embd=10, n_head=4), "n_embd must be divisible by n_head"),
    (dict(bias="no"), "bias='no': must be true or false"),
    (dict(qk_norm=1), "qk_norm=1: must be true or false"),
    (dict(n_layer=True), "n_layer=True: must be an integer"),
    (dict(n_layer=2.0), "must be an integer"),
    (dict(n_layer=0), "n_layer=0: must be a positive integer"),
    (dict(dropout=1.0), "dropout=1.0: must be in [0, 1)"),
    (dict(rope_base=1), "rope_base"),
]


@pytest.mark.parametrize("kwargs, message", BAD_MODEL, ids=[m for _, m in BAD_MODEL])
def test_bad_model_config_gives_one_line_naming_the_field(kwargs, message):
    with pytest.raises(ConfigError) as e:
        ModelConfig(**kwargs)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_divisibility_message_lists_the_allowed_kv_heads():
    with pytest.raises(ConfigError, match=r"allowed n_kv_head: 1, 2, 4, 8"):
        ModelConfig(n_head=8, n_kv_head=3, n_embd=64)


def test_unknown_key_is_named_with_the_allowed_keys():
    with pytest.raises(ConfigError, match=r"model\.nrom: unknown key; allowed keys are vocab_size, .*qk_norm"):
        ModelConfig.from_dict({"nrom": "rmsnorm"})


def test_from_dict_prefixes_the_section():
    with pytest.raises(ConfigError, match=r"^model\.norm='x': allowed values"):
        ModelConfig.from_dict({"norm": "x"})
    with pytest.raises(ConfigError, match=r"^train\.iters=0"):
        TrainConfig.from_dict({"iters": 0})


def test_config_round_trips_through_a_dict():
    cfg = ModelConfig(norm="rmsnorm", pos="rope", bias=False, rope_base=500)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    assert isinstance(ModelConfig(rope_base=500).rope_base, float)


@pytest.mark.parametrize("kwargs, message", [
    (dict(iters=0), "iters=0"), (dict(warmup_iters=500, iters=100), "warmup_iters=500"),
    (dict(lr=1e-3, min_lr=1e-2), "min_lr"), (dict(device="tpu"), "allowed values are cpu, cuda, auto"),
    (dict(beta2=1.0), "beta2"), (dict(grad_clip=-1.0), "grad_clip"),
])
def test_bad_train_config(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig(**kwargs)


def test_ladder_adds_one_change_per_row():
    base = ModelConfig(n_head=4, n_kv_head=4)
    modern = dataclasses.replace(base, **MODERN)
    rows = ladder(base, modern, LADDER)
    assert [r.label for r in rows] == ["Step 1 baseline", "+ RMSNorm", "+ RoPE", "+ SwiGLU", "+ no bias",
                                       "+ GQA (kv=2)", "+ QK-norm"]
    assert [r.slug for r in rows] == ["baseline", *LADDER]
    for prev, row in zip(rows, rows[1:]):
        differ = [f.name for f in dataclasses.fields(ModelConfig) if getattr(prev.config, f.name) != getattr(row.config, f.name)]
        assert differ == [row.slug]
    assert rows[-1].config == modern


def test_ladder_marks_a_flag_that_does_not_change():
    base = ModelConfig(n_head=4, n_kv_head=4)
    modern = dataclasses.replace(base, **{**MODERN, "qk_norm": False, "n_kv_head": 1})
    rows = ladder(base, modern, LADDER)
    assert rows[-1].label == "+ no QK-norm (no change)" and not rows[-1].changed
    assert rows[-2].label == "+ MQA (kv=1)"


def test_ladder_refuses_unknown_or_unwalked_flags():
    base = ModelConfig()
    with pytest.raises(ConfigError, match="ladder: unknown flag 'colour'"):
        ladder(base, base, ["colour"])
    with pytest.raises(ConfigError, match="differ in norm_placement"):
        ladder(base, dataclasses.replace(base, norm_placement="post"), ["norm"])
