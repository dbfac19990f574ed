"""Every change there is (changes/builtin.py's switches and each file of changes/), switched on at a tiny shape, does
something, honestly, judged on equal footing: the model with it starts from the weights of the model without it
(every tensor both have, by name and shape, copied across, but what the change declares it initialises), so only
the change can tell them apart. After three optimiser steps on the same batches its logits differ; at init they
differ too, unless it declares it starts as the model without it, and then one of its own parameters gets a
gradient (a loss-only change: its term moves the weights). Every parameter gets a gradient, the model stays causal,
cached decoding equals a full recompute chunk by chunk and token by token, the export refuses it or round-trips it,
and the init rule covers every parameter. Three changes written to fail are caught."""

import dataclasses
import fnmatch
from pathlib import Path

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
from modern_gpt.nn.init import OUTPUT_PROJECTIONS
from modern_gpt.nn.model import KVCache
from modern_gpt.training.loop import One, fit, train

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


def declared(change: Change, name: str) -> bool:
    """The change declares that it initialises, removes or reshapes the model's weight `name`."""
    return any(fnmatch.fnmatchcase(name, p) for p in (*change.drops, *change.reinit))


def on_equal_footing(change: Change, off: ModelConfig, on: ModelConfig) -> tuple[GPT, GPT, list[str]]:
    """Both models from seed 0, the with-change one given every tensor of the other's state_dict that it has by
    name and shape (a tied matrix once), but those the change declares; and what it lacks or reshapes undeclared."""
    torch.manual_seed(0)
    without = GPT(off)
    torch.manual_seed(0)
    with_it = GPT(on)
    theirs, mine, found = without.state_dict(), with_it.state_dict(), []
    copied = {}
    for name, t in theirs.items():
        if declared(change, name):
            continue
        if name not in mine or mine[name].shape != t.shape:
            found.append(f"{name}: {'missing' if name not in mine else f'shape {tuple(mine[name].shape)}'} with "
                         f"the change, {tuple(t.shape)} without it, and the change does not declare it (drops, reinit)")
            continue
        copied[name] = t
    with_it.load_state_dict({**mine, **copied})
    return without, with_it, found


def after_three_steps(model: GPT, train_cfg: TrainConfig) -> torch.Tensor:
    """The model trained three steps on seed 0's batches (the loop's own), then its logits on X."""
    fit(One(model, train_cfg, torch.device("cpu")), model.cfg, train_cfg, DATA, DATA, [0], label="t", progress=False)
    with torch.no_grad():
        return model.eval()(X)[0]


def objective(model: GPT) -> tuple[torch.Tensor, dict]:
    terms: dict[str, torch.Tensor] = {}
    loss = model(X, X, terms=terms)[1]
    return loss + sum(terms.values()), terms


def problems(change: Change, value) -> list[str]:
    """What is wrong with this change switched on to `value`: [] when nothing is."""
    (off, off_train), (on, on_train) = configs(change, value)
    without, with_it, found = on_equal_footing(change, off, on)
    with torch.no_grad():
        same_at_init = torch.allclose(without.eval()(X)[0], with_it.eval()(X)[0], atol=1e-6)
    theirs = dict(without.named_parameters())           # its own: in its modules, or new to the model
    own = [n for n, _ in with_it.named_parameters() if with_it.plug_of(n.rpartition(".")[0]) is not None
           or n not in theirs]
    if change.neutral and not same_at_init:
        found.append("it declares it starts as the model without it (neutral=True), but its logits at init differ")
    if not change.neutral and same_at_init:
        found.append("the same logits at init as the model without it, and it does not declare neutral=True")
    with_it.train()
    total, terms = objective(with_it)
    total.backward()
    grads = {n: p.grad for n, p in with_it.named_parameters()}
    idle = [n for n, g in grads.items() if g is None or not g.abs().sum() > 0]
    if idle:
        found.append(f"parameters without a gradient: {idle}")
    if change.neutral and own and not any(grads[n] is not None and grads[n].abs().sum() > 0 for n in own):
        found.append("neutral at init, and none of its own parameters gets a gradient")
    if change.neutral and not own and change.plugs is not None:   # a loss-only change: its term moves the weights
        _, terms = objective(with_it)
        pulls = torch.autograd.grad(sum(terms.values()), list(with_it.parameters()), allow_unused=True) if terms else []
        if not any(g is not None and g.abs().sum() > 0 for g in pulls):
            found.append("neutral, no parameters of its own, and no auxiliary term that moves the weights")
    with_it.zero_grad(set_to_none=True)
    if torch.equal(after_three_steps(without, off_train), after_three_steps(with_it, on_train)):
        found.append("the same logits after three steps with it and without it: the model never reads it")
    model = with_it.eval()
    with torch.no_grad():
        full = model(X)[0]
        moved = X.clone()
        moved[:, 9:] = (moved[:, 9:] + 1) % on.vocab_size
        if not torch.equal(model(moved)[0][:, :9], full[:, :9]):
            found.append("a logit sees a future token")
        for spans in (((0, 5), (5, 6), (6, 11), (11, 16)), tuple((i, i + 1) for i in range(16))):
            cache = KVCache(on, batch=X.size(0))
            steps = [model(X[:, a:b], cache=cache)[0] for a, b in spans]
            if not torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5):
                found.append(f"cached decoding ({len(spans)} calls) differs from a full recompute")
    scale = 0.02 / (2 * on.n_layer) ** 0.5
    for name, module in GPT(on).named_modules():
        if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] in OUTPUT_PROJECTIONS \
                and with_it.plug_of(name) is None and not declared(change, f"{name}.weight") \
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


def broken(monkeypatch, plugs, **declaration) -> Change:
    """A change of a new kind called 'broken', with this model code, as if it were a file of changes/."""
    change = Change(name="broken", values=(False, True), default=False, labels={True: "broken"}, plugs=plugs,
                    source="modern_gpt/changes/broken.py", **declaration)
    real, names = changes.plugged, changes.plugged_names()
    monkeypatch.setattr(changes, "plugged", lambda name: change if name == "broken" else real(name))
    monkeypatch.setattr(changes, "plugged_names", lambda: (*names, "broken"))
    return change


def built_and_never_registered(cfg, on):
    nn.Linear(cfg.n_embd, cfg.n_embd)                        # the gate's Linear, built and thrown away
    return {}


def random_numbers_and_nothing(cfg, on):
    torch.randn(cfg.n_embd)                                  # draws from the seed's stream ... and does nothing
    return {}


def registered_and_never_read(cfg, on):
    class Unread(nn.Module):
        inits = {"proj.weight": "normal"}

        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)

        def forward(self, x, ctx):
            return x                                         # its weights play no part

    return {"final": Unread()}


@pytest.mark.parametrize("plugs, caught", [
    (built_and_never_registered, "the same logits at init as the model without it"),
    (random_numbers_and_nothing, "the same logits at init as the model without it"),
    (registered_and_never_read, "parameters without a gradient: ['final.proj.weight']"),
])
def test_a_change_that_computes_nothing_is_caught(monkeypatch, plugs, caught):
    change = broken(monkeypatch, plugs)
    assert TINY.replace(broken=True).broken is True             # it parses and reads back ...
    found = problems(change, True)
    assert any(f.startswith(caught) for f in found), found     # ... and the test names what is wrong
    if plugs is not registered_and_never_read:                 # equal footing: three steps cannot tell them apart
        assert any(f.startswith("the same logits after three steps") for f in found)


def test_a_change_that_claims_to_start_as_the_model_without_it_and_does_not_is_caught(monkeypatch):
    def plugs(cfg, on):
        class Scale(nn.Module):
            inits = {"gain": 2.0}

            def __init__(self):
                super().__init__()
                self.gain = nn.Parameter(torch.ones(()))

            def forward(self, x, ctx):
                return x * self.gain

        return {"inputs": Scale()}

    found = problems(broken(monkeypatch, plugs, neutral=True), True)
    assert found == ["it declares it starts as the model without it (neutral=True), but its logits at init differ"]


def test_a_weight_the_change_removes_without_declaring_it_is_named(monkeypatch):
    def plugs(cfg, on):
        from modern_gpt.changes.parallel_block import parallel
        from modern_gpt.nn.model import Wiring
        return {f"blocks.{i}.wiring": Wiring(parallel, norms=("norm1",)) for i in range(cfg.n_layer)}

    found = problems(broken(monkeypatch, plugs), True)          # parallel_block's code, without its drops
    assert found[:2] == [f"blocks.{i}.norm2.weight: missing with the change, (32,) without it, and the change does "
                         "not declare it (drops, reinit)" for i in range(2)]


def test_a_parameter_no_init_covers_is_refused_naming_it(monkeypatch):
    def plugs(cfg, on):
        class Bare(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(cfg.n_embd))      # no `inits` entry for it

            def forward(self, x, ctx):
                return x * self.scale

        return {"inputs": Bare()}

    broken(monkeypatch, plugs)
    with pytest.raises(TypeError, match=r"^inputs\.scale: a parameter no init covers"):
        GPT(TINY.replace(broken=True))


def test_a_change_chooses_the_init_of_the_models_own_weights_and_nothing_else_moves(monkeypatch):
    broken(monkeypatch, lambda cfg, on: {}, reinit={"blocks.*.attn.o_proj.weight": "zeros"})
    torch.manual_seed(0)
    plain = GPT(TINY).state_dict()
    torch.manual_seed(0)
    zeroed = GPT(TINY.replace(broken=True)).state_dict()
    for name, t in plain.items():
        if name.endswith("attn.o_proj.weight"):
            assert not zeroed[name].any()
        else:                                                    # every other weight: the model without it's
            assert torch.equal(zeroed[name], t), name


def test_a_slot_that_is_no_plug_point_or_filled_twice_is_refused(monkeypatch):
    broken(monkeypatch, lambda cfg, on: {"blocks.0.attn.o_proj": nn.Identity()})
    with pytest.raises(TypeError, match=r"^broken: blocks\.0\.attn\.o_proj: not a plug point"):
        GPT(TINY.replace(broken=True))
    broken(monkeypatch, lambda cfg, on: {"blocks.1.attn.mix_values": nn.Identity()})
    with pytest.raises(TypeError, match=r"^blocks\.1\.attn\.mix_values: filled by both broken and value_residual$"):
        GPT(TINY.replace(broken=True, value_residual=True))


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


def test_a_change_that_fills_every_plug_point_passes_on_equal_footing(monkeypatch):
    """tests/fixtures/every_point.py, loaded as a file of changes/ would be: every point filled at once."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("modern_gpt.changes.every_point",
                                                  Path(__file__).parent / "fixtures" / "every_point.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    change = broken(monkeypatch, module.plugs, drops=module.CHANGE.drops, reinit=module.CHANGE.reinit,
                    state=module.CHANGE.state)
    model = GPT(TINY.replace(broken=True))
    filled = {p for p in model.plugs}
    from modern_gpt.nn.model import plug_points
    assert filled == set(plug_points(TINY))                  # every point of the model
    assert model.optim_groups()["blocks.0.attn.mix_values.table.weight"] == "no_decay"
    assert problems(change, True) == []
    cache = KVCache(TINY.replace(broken=True), batch=2)      # its state counted beside K and V
    assert cache.nbytes == sum(t.numel() * 4 for t in cache.kv) + 2 * TINY.n_embd * 4


@pytest.mark.parametrize("name", ["mtp", "smear", "moe", "value_embeds", "diff_attn"])
def test_a_catalogue_change_trains_under_batched_seeds_as_one_at_a_time_its_terms_logged_beside_the_loss(name):
    """The batched path (torch.func over stacked weights) and the one-model path minimise the same objective: the
    same losses, to rounding; a change's loss term is logged at each point of the curve, the curve's train and val
    staying the next-token loss."""
    from modern_gpt.training.batched import train_seeds
    from modern_gpt.training.batches import fixed_windows
    from modern_gpt.training.evaluate import mean_loss
    cfg = TINY.replace(**{name: True})
    batched = train_seeds(cfg, STEPS, DATA, DATA, [0, 1], label="batched", progress=False)
    for seed, (_, trained) in zip([0, 1], batched):
        model, alone = train(cfg, STEPS, DATA, DATA, seed=seed, progress=False)
        assert max(abs(a - b) for a, b in zip(trained.losses, alone.losses, strict=True)) < 1e-4
        assert [set(p.terms) for p in alone.curve] == [{"mtp"} if name == "mtp" else set()] * len(alone.curve)
        assert all(abs(p.terms.get("mtp", 0) - q.terms.get("mtp", 0)) < 1e-4 for p, q in zip(alone.curve, trained.curve))
        windows = fixed_windows(DATA, cfg.block_size, STEPS.eval_iters * STEPS.batch_size)
        loss, terms = mean_loss(model, windows, STEPS)
        assert abs(alone.curve[-1].val - loss) < 1e-6 and terms == alone.curve[-1].terms
