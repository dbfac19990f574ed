"""Bad settings fail fast with one line naming the field and what is allowed."""

import dataclasses
import re
from pathlib import Path

import pytest

from fakes import LABELS, one_line
from modern_gpt.core.errors import ConfigError
from modern_gpt.config import ModelConfig, TrainConfig
from modern_gpt.config.params import project_params
from modern_gpt.pipeline.ladder import ladder
from modern_gpt.pipeline.ladder_params import parse

ROOT = Path(__file__).resolve().parents[1]


def design() -> tuple[ModelConfig, ModelConfig, tuple[str, ...]]:
    """The book's design as params.yaml holds it: the baseline, the model, the ladder's flags."""
    p = parse(project_params())
    return (*p.configs(vocab_size=65), p.ladder.flags)


BAD_MODEL = [
    (dict(n_head=8, n_kv_head=3, n_embd=64), "n_head must be divisible by n_kv_head"),
    (dict(norm="batchnorm"), "norm='batchnorm': allowed values are layernorm, rmsnorm"),
    (dict(norm_placement="sandwich"), "allowed values are pre, post"),
    (dict(pos="alibi"), "allowed values are learned, rope, none"),
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
    assert message in one_line(lambda: ModelConfig(**kwargs), ConfigError)


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
    base, modern, flags = design()
    rows = ladder(base, modern, flags)
    assert [r.label for r in rows] == LABELS
    assert [r.slug for r in rows] == ["baseline", *flags]
    for prev, row in zip(rows, rows[1:]):
        differ = [f.name for f in dataclasses.fields(ModelConfig) if getattr(prev.config, f.name) != getattr(row.config, f.name)]
        assert differ == [row.slug]
    assert rows[-1].config == modern


def test_ladder_marks_a_flag_that_does_not_change():
    base, modern, flags = design()
    rows = ladder(base, dataclasses.replace(modern, qk_norm=False, n_kv_head=1), flags)
    assert rows[-1].label == "+ no QK-norm (no change)" and not rows[-1].changed
    assert rows[-2].label == "+ MQA (kv=1)"


def test_ladder_refuses_unknown_or_unwalked_flags():
    base = ModelConfig()
    with pytest.raises(ConfigError, match="ladder: unknown flag 'colour'"):
        ladder(base, base, ["colour"])
    with pytest.raises(ConfigError, match="differ in norm_placement"):
        ladder(base, dataclasses.replace(base, norm_placement="post"), ["norm"])


def test_each_switch_accepts_exactly_its_tables_keys():
    from modern_gpt.nn.model import MLPS, NORMS, PLACEMENTS, POSITIONS
    for field, table in (("norm", NORMS), ("pos", POSITIONS), ("mlp", MLPS), ("norm_placement", PLACEMENTS)):
        for value in table:
            assert getattr(ModelConfig(**{field: value}), field) == value
        with pytest.raises(ConfigError, match=f"allowed values are {', '.join(table)}$"):
            ModelConfig(**{field: "nope"})


def test_the_models_tables_are_registered_against_the_configs_names(monkeypatch):
    from modern_gpt.config import choices
    from modern_gpt.nn import model
    for names, table in ((choices.NORMS, model.NORMS), (choices.POSITIONS, model.POSITIONS),
                         (choices.MLPS, model.MLPS), (choices.PLACEMENTS, model.PLACEMENTS)):
        assert tuple(table) == names
    monkeypatch.setattr(choices, "POSITIONS", (*choices.POSITIONS, "alibi"))
    with pytest.raises(TypeError, match="alibi"):                    # a name without its module fails at import
        choices.registered("pos", choices.POSITIONS, dict(model.POSITIONS))
    monkeypatch.setattr("modern_gpt.config.model.POSITIONS", choices.POSITIONS)
    assert ModelConfig(pos="alibi").pos == "alibi"                    # the config accepts what choices names


def test_the_config_layer_imports_without_torch():
    import subprocess
    import sys
    code = ("import sys; sys.modules['torch'] = None\n"
            "from modern_gpt.config import ModelConfig, TrainConfig\n"
            "from modern_gpt.records.run_record import RunRecord\n"
            "from modern_gpt.pipeline.ladder_params import read_params\n"
            f"p = read_params({str(ROOT / 'params.yaml')!r})\n"
            "print(ModelConfig().hidden, TrainConfig().iters, p.ladder.rows[1], p.launch.nproc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["256", "200", "norm", "None"]


def test_every_params_section_is_parsed_by_the_tables_one_function_into_one_frozen_dataclass():
    """PARSERS is what parses: each entry reads the committed params.yaml's section (a missing optional one as
    None) into a frozen dataclass, but seeds (a list of integers); the plan's check reads sections through it."""
    import dataclasses

    from modern_gpt.config.params import project_params
    from modern_gpt.config.sections import PARSERS, SECTIONS, LadderConfig, LaunchConfig
    raw = project_params()
    assert list(raw) == [s for s in SECTIONS if s in raw]                 # params.yaml's order is the table's
    for name, read in PARSERS.items():
        value = read(raw.get(name), name)
        if name == "seeds":
            assert value == [0, 1, 2, 3, 4]
        else:
            assert dataclasses.is_dataclass(value) and type(value).__dataclass_params__.frozen, name
    assert LadderConfig.parse(["baseline", "norm", "pos"]).rows == ("baseline", "norm", "pos")
    assert LaunchConfig.parse("torchrun --standalone --nproc_per_node=4").nproc == 4
    assert LaunchConfig.parse(None) == LaunchConfig("python") and LaunchConfig().nproc is None
    for raw, message in ((["norm"], "ladder: must be a list that starts with baseline"),
                         (["baseline", "norm", "norm"], "ladder: flag 'norm' is listed twice"),
                         (["baseline", "width"], "ladder: unknown flag 'width'; allowed flags are vocab_size, block_size")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            LadderConfig.parse(raw)


def test_head_dim_is_optional_and_may_differ_from_width_over_heads():
    assert ModelConfig(n_embd=64, n_head=4).head_dim == 16                  # null: n_embd / n_head
    cfg = ModelConfig(n_embd=60, n_head=4, head_dim=8, pos="rope")          # 60 is not divisible by 4: fine
    assert cfg.head_dim == 8 and ModelConfig.from_dict(cfg.to_dict()) == cfg
    for bad, message in ((0, "head_dim=0: must be a positive integer"), ("x", "head_dim='x': must be an integer or null"),
                         (True, "head_dim=True: must be an integer or null"), (7.0, "must be an integer or null")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            ModelConfig(head_dim=bad)
    with pytest.raises(ConfigError, match="head dim \\(7\\) must be even"):
        ModelConfig(head_dim=7, pos="rope")


def test_an_annotation_outside_the_type_table_is_a_clear_programming_error():
    from dataclasses import dataclass

    from modern_gpt.config.validate import check_types

    @dataclass(frozen=True)
    class Odd:
        names: list

        def __post_init__(self):
            check_types(self)

    with pytest.raises(TypeError, match=r"Odd\.names: annotation .* is not one of bool, int, float, str"):
        Odd(["a"])


def test_optional_fields_take_null_and_plain_fields_do_not():
    with pytest.raises(ConfigError, match="n_layer=None: must be an integer$"):
        ModelConfig(n_layer=None)
    assert ModelConfig(head_dim=None).head_dim == ModelConfig().n_embd // ModelConfig().n_head   # null, resolved
