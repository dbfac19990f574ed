"""Every change there is (changes/builtin.py's switches and each file of changes/), switched on at a tiny shape, does
something, honestly: after three optimiser steps from the same seed its logits differ from the model without it,
every parameter gets a gradient, the model stays causal, cached decoding equals a full recompute, the export refuses
it or round-trips it, and the init rule covers its projections. A change that does nothing is caught."""

import dataclasses

import pytest
import torch
import torch.nn as nn

from modern_gpt import changes
from modern_gpt.changes import Change
from modern_gpt.changes.builtin import every
from modern_gpt.config import ModelConfig, TrainConfig
from modern_gpt.config.hf_class import hf_name
from modern_gpt.core.errors import ConfigError
from modern_gpt.nn import GPT
from modern_gpt.nn.model import OUTPUT_PROJECTIONS, KVCache
from modern_gpt.training.loop import train

# the book's design at a tiny shape, each change then set to its default (off) or switched on
TINY = ModelConfig(vocab_size=23, block_size=16, n_layer=2, n_head=4, n_kv_head=4, n_embd=32, norm="rmsnorm",
                   pos="rope", mlp="swiglu", bias=False, qk_norm=True)
STEPS = TrainConfig(iters=3, batch_size=4, warmup_iters=1, eval_interval=3, eval_iters=1)
DATA = torch.randint(0, TINY.vocab_size, (2000,), generator=torch.Generator().manual_seed(0))
X = torch.randint(0, TINY.vocab_size, (2, TINY.block_size), generator=torch.Generator().manual_seed(1))
CASES = [(c, v) for c in every() for v in c.tried]


def configs(change: Change, value) -> tuple[tuple[ModelConfig, TrainConfig], tuple[ModelConfig, TrainConfig]]:
    """(without it, with it): the model and training config of each."""
    if change.section == "train":
        return ((TINY, dataclasses.replace(STEPS, **{change.name: change.default})),
                (TINY, dataclasses.replace(STEPS, **{change.name: value})))
    return (TINY.replace(**{change.name: change.default}), STEPS), (TINY.replace(**{change.name: value}), STEPS)


def logits_after_three_steps(cfg: ModelConfig, train_cfg: TrainConfig) -> torch.Tensor:
    model, _ = train(cfg, train_cfg, DATA, DATA, seed=0, progress=False)
    with torch.no_grad():
        return model.eval()(X)[0]


def problems(change: Change, value) -> list[str]:
    """What is wrong with this change switched on to `value`: [] when nothing is."""
    (off, off_train), (on, on_train) = configs(change, value)
    found = []
    if torch.equal(logits_after_three_steps(off, off_train), logits_after_three_steps(on, on_train)):
        found.append("the same logits after three steps with it and without it: the model never reads it")
    torch.manual_seed(0)
    model = GPT(on)
    model(X, X)[1].backward()
    idle = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    if idle:
        found.append(f"parameters without a gradient: {idle}")
    model.eval()
    with torch.no_grad():
        full = model(X)[0]
        moved = X.clone()
        moved[:, 9:] = (moved[:, 9:] + 1) % on.vocab_size
        if not torch.equal(model(moved)[0][:, :9], full[:, :9]):
            found.append("a logit sees a future token")
        cache, steps = KVCache(on, batch=X.size(0)), []
        for a, b in ((0, 5), (5, 6), (6, 11), (11, 16)):
            steps.append(model(X[:, a:b], cache=cache)[0])
        if not torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5):
            found.append("cached decoding differs from a full recompute")
    scale = 0.02 / (2 * on.n_layer) ** 0.5
    for name, module in GPT(on).named_modules():
        if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] in OUTPUT_PROJECTIONS \
                and not 0.7 * scale < module.weight.std() < 1.3 * scale:
            found.append(f"{name} does not get the depth-scaled init")
    return found


@pytest.mark.parametrize("change, value", CASES, ids=[f"{c.name}={v}" for c, v in CASES])
def test_every_change_switched_on_changes_the_model_and_keeps_it_honest(change, value):
    assert problems(change, value) == []


@pytest.mark.parametrize("change, value", CASES, ids=[f"{c.name}={v}" for c, v in CASES])
def test_every_change_exports_to_the_class_that_computes_it_or_is_refused_naming_it(change, value):
    from modern_gpt.hf.models import to_hf                       # transformers: imported by this test alone
    _, (on, _) = configs(change, value)
    torch.manual_seed(0)
    model = GPT(on).eval()
    if hf_name(on) is None:
        with pytest.raises(ConfigError) as refused:
            to_hf(model)
        assert "\n" not in str(refused.value)
        if change.name in dict(on.changes):                      # a change of a new kind: the field and its file
            assert str(refused.value).startswith(f"{change.name}=") and change.source in str(refused.value)
        return
    hf = to_hf(model, attn_implementation="eager")
    with torch.no_grad():
        assert torch.allclose(hf(X).logits, model(X)[0], atol=1e-5)


def nothing(gpt, value) -> None:
    """A change whose code forgets to do anything."""


def test_a_change_the_model_never_reads_is_caught(monkeypatch):
    idle = Change(name="idle", values=(False, True), default=False, labels={True: "idle"}, install=nothing)
    object.__setattr__(idle, "source", "modern_gpt/changes/idle.py")
    real = changes.plugged
    monkeypatch.setattr(changes, "plugged", lambda name: idle if name == "idle" else real(name))
    monkeypatch.setattr(changes, "plugged_names", lambda: ("idle",))
    assert TINY.replace(idle=True).idle is True                  # it parses and reads back ...
    found = problems(idle, True)
    assert found and found[0].startswith("the same logits after three steps")   # ... and changes nothing


def test_a_projection_the_init_rule_does_not_know_is_refused(monkeypatch):
    def install(gpt, value):
        for block in gpt.blocks:
            block.attn.o_proj2 = nn.Linear(4, 4)                 # an output projection named otherwise
    odd = Change(name="odd", values=(False, True), default=False, labels={}, install=install)
    real = changes.plugged
    monkeypatch.setattr(changes, "plugged", lambda name: odd if name == "odd" else real(name))
    with pytest.raises(TypeError, match="blocks.0.attn.o_proj2: a Linear the init rule does not know"):
        GPT(TINY.replace(odd=True))


def test_a_change_of_a_new_kind_is_one_key_of_a_config_and_only_when_on():
    on = TINY.replace(parallel_block=True)
    assert "parallel_block" not in TINY.to_dict() and on.to_dict()["parallel_block"] is True
    assert ModelConfig.from_dict(on.to_dict()) == on and on.replace(parallel_block=False) == TINY
    with pytest.raises(ConfigError, match=r"^model.parallel_block=1: allowed values are false, true "
                                          r"\(modern_gpt/changes/parallel_block.py\)$"):
        ModelConfig.from_dict({**TINY.to_dict(), "parallel_block": 1})
    with pytest.raises(ConfigError, match=r"^model.value_residual=true with n_layer=1: "):
        ModelConfig.from_dict({**TINY.to_dict(), "n_layer": 1, "value_residual": True})
    with pytest.raises(ConfigError, match=r"^model.parallel_block=true with norm_placement='post': "):
        ModelConfig.from_dict({**TINY.to_dict(), "norm_placement": "post", "parallel_block": True})


def test_a_field_the_hf_rules_do_not_list_is_refused_unless_at_its_default():
    from modern_gpt.config.hf_class import hf_class
    @dataclasses.dataclass(frozen=True)
    class Wider(ModelConfig):
        extra: int = 0                                                           # a field the rules never heard of

    wider = Wider
    modern = {k: v for k, v in TINY.to_dict().items()}
    assert hf_class(wider(**modern)) == "Qwen3ForCausalLM"                       # at its default: as before
    with pytest.raises(ConfigError, match=r"^extra=1: no Hugging Face class here is known to compute it \(a field of "
                                          r"test_changes.py that config/hf_class.py's KNOWN does not list\)$"):
        hf_class(wider(**modern, extra=1))


def test_the_export_weight_map_refuses_a_tensor_it_has_no_place_for():
    from modern_gpt.hf.weights import to_hf_state
    state = GPT(TINY).state_dict()
    assert "lm_head.weight" in to_hf_state(TINY, state)
    with pytest.raises(ConfigError, match=r"^weights: 1 tensor\(s\) of ours the Qwen3ForCausalLM map has no place "
                                          r"for, e.g. blocks.0.attn.extra$"):
        to_hf_state(TINY, {**state, "blocks.0.attn.extra": torch.zeros(3)})


def test_the_second_ladders_last_row_decodes_with_the_cache_as_it_recomputes():
    """Every change of the second ladder at once, with a window that slides: the values mixed before the ring
    buffer stores them."""
    cfg = TINY.replace(mlp="relu2", tie_embeddings=False, logit_softcap=15.0, attn_window=5, global_every=2,
                       parallel_block=True, value_residual=True)
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    with torch.no_grad():
        full = model(X)[0]
        cache = KVCache(cfg, batch=X.size(0))
        steps = [model(X[:, i:i + 1], cache=cache)[0] for i in range(X.size(1))]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)


def test_a_change_at_the_end_of_the_main_ladder_is_one_more_row_and_leaves_the_others_as_they_were():
    import copy
    from modern_gpt.config.params import project_params
    from modern_gpt.pipeline.ladder_params import parse
    raw = project_params()
    mine = copy.deepcopy(raw)
    mine["model"]["parallel_block"] = True
    mine["ladder"] = [*raw["ladder"], "parallel_block"]
    rows, before = parse(mine).rows(vocab_size=23), parse(raw).rows(vocab_size=23)
    assert [r.config.to_dict() for r in rows[:-1]] == [r.config.to_dict() for r in before]
    assert (rows[-1].label, rows[-1].config.to_dict()) == ("+ parallel block",
                                                           {**before[-1].config.to_dict(), "parallel_block": True})
    del mine["ladder"][-1]                                       # on in model: but walked by no row: refused
    with pytest.raises(ConfigError, match="^ladder: baseline and model differ in parallel_block, which the ladder"):
        parse(mine)


def test_the_changes_of_a_new_kind_train_under_batched_seeds_as_one_at_a_time():
    """The quick command's --batch-seeds (torch.func over stacked weights): the same losses, to rounding."""
    from modern_gpt.training.batched import train_seeds
    cfg = TINY.replace(parallel_block=True, value_residual=True)
    batched = train_seeds(cfg, STEPS, DATA, DATA, [0, 1], label="batched", progress=False)
    for seed, (_, trained) in zip([0, 1], batched):
        _, alone = train(cfg, STEPS, DATA, DATA, seed=seed, progress=False)
        assert max(abs(a - b) for a, b in zip(trained.losses, alone.losses, strict=True)) < 1e-4
