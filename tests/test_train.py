"""The training loop: it learns, it is reproducible per seed, and it records divergence."""

import dataclasses
import json
import math

import pytest
import torch

import modern_gpt.training.loop as train_module
from conftest import score, tiny_rows
from modern_gpt.core.errors import ConfigError, DataError
from modern_gpt.records.run_record import RunRecord
from modern_gpt.corpus.reading import split_text
from modern_gpt.nn import GPT
from modern_gpt.training.batches import fixed_windows, get_batch
from modern_gpt.config import TrainConfig
from modern_gpt.training.loop import get_lr, perturb, train
from modern_gpt.training.batched import train_seeds
from modern_gpt.training.single import machine, run
import torch.nn.functional as F

FAST = TrainConfig(iters=60, batch_size=8, lr=3e-3, min_lr=3e-4, warmup_iters=6, eval_interval=20, eval_iters=2)


@pytest.mark.parametrize("index", range(7), ids=[r.slug for r in tiny_rows()])
def test_every_ladder_row_learns(toy, index):
    tok, train_data, val_data = toy
    row = tiny_rows(tok.vocab_size)[index]
    _, result = run(row.slug, row.config, FAST, train_data, val_data, seed=0, val_chars=len(val_data), progress=False)
    first, last = result.curve[0], result.curve[-1]
    assert not result.diverged
    assert last.iter == FAST.iters
    assert first.val > math.log(tok.vocab_size) - 0.3                # starts near uniform
    assert last.val < 0.75 * first.val and last.train < 0.75 * first.train


def test_same_config_and_seed_give_bit_identical_losses(toy):
    _, train_data, val_data = toy
    cfg = tiny_rows(toy[0].vocab_size)[-1].config
    runs = [train(cfg, FAST, train_data, val_data, seed=3, progress=False)[1] for _ in range(2)]
    assert runs[0].curve == runs[1].curve
    other = train(cfg, FAST, train_data, val_data, seed=4, progress=False)[1]
    assert other.curve[-1] != runs[0].curve[-1]


def test_every_variant_sees_the_same_batches_for_a_seed(toy, monkeypatch):
    _, train_data, val_data = toy
    seen = []

    def recording_get_batch(*args, **kwargs):
        x, y = get_batch(*args, **kwargs)
        seen[-1].append(x.clone())
        return x, y

    monkeypatch.setattr(train_module, "get_batch", recording_get_batch)
    short = TrainConfig(iters=5, batch_size=4, warmup_iters=1, eval_interval=5, eval_iters=1)
    for row in tiny_rows(toy[0].vocab_size)[::3]:                   # baseline, SwiGLU, QK-norm: different params
        torch.manual_seed(1234)                                     # global RNG state must not matter
        seen.append([])
        train(row.config, short, train_data, val_data, seed=7, progress=False)
    assert all(torch.equal(a, b) for run in seen[1:] for a, b in zip(seen[0], run))
    seen.append([])
    train(tiny_rows(toy[0].vocab_size)[0].config, short, train_data, val_data, seed=8, progress=False)
    assert not torch.equal(seen[0][0], seen[-1][0])


def test_evaluation_windows_are_fixed_and_ignore_the_rng(toy):
    _, _, val_data = toy
    torch.manual_seed(0)
    a = fixed_windows(val_data, 16, 10)
    torch.manual_seed(1)
    b = fixed_windows(val_data, 16, 10)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1][:, :-1], a[0][:, 1:])


def test_a_non_finite_loss_is_recorded_as_diverged_not_raised(toy, monkeypatch):
    _, train_data, val_data = toy
    calls = []
    real_losses = train_module.One.losses

    def exploding_step(self, x, y):
        calls.append(1)
        values = real_losses(self, x, y)
        return [float("nan")] if len(calls) == 4 else values        # the loop sees the loss before the update

    monkeypatch.setattr(train_module.One, "losses", exploding_step)
    row = tiny_rows(toy[0].vocab_size)[0]
    _, result = run(row.slug, row.config, FAST, train_data, val_data, seed=0, val_chars=len(val_data), progress=False)
    assert result.diverged and result.steps == 3
    assert result.val_loss is None and result.train_loss is None and result.val_bpc is None
    json.dumps(result.to_dict(), allow_nan=False)


def test_the_run_record_is_small_json_and_round_trips(toy):
    _, train_data, val_data = toy
    row = tiny_rows(toy[0].vocab_size)[0]
    _, result = run(row.slug, row.config, FAST, train_data, val_data, seed=0, val_chars=len(val_data), progress=False)
    back = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert RunRecord.from_dict(back) == result
    assert back["params"] > back["params_non_embedding"] > 0 and back["tokens_per_sec"] > 0
    assert back["model"] == row.config.to_dict() and back["train"] == FAST.to_dict()
    assert back["machine"] == machine("cpu") and back["machine"].endswith(")") and "(" in back["machine"]
    assert back["threads"] == torch.get_num_threads() and back["python"].count(".") == 2
    # the one strict reader (records/typed.build): a key missing, a defaulted one too, or a point of the curve that
    # is not a number, is another version's file
    for key in ("val_loss", "losses"):
        with pytest.raises(DataError, match=r"^run.json: not a RunRecord of this version \(keys .*rerun it"):
            RunRecord.from_dict({k: v for k, v in back.items() if k != key}, "run.json")
    bad = {**back, "curve": [*back["curve"][:-1], {**back["curve"][-1], "val": "1.2"}]}
    n = len(back["curve"]) - 1
    with pytest.raises(DataError, match=rf"^run.json.curve\[{n}\].val='1.2': not a number; rerun it"):
        RunRecord.from_dict(bad, "run.json")


def test_reported_losses_come_from_the_trained_weights(toy):
    """Evaluation scores the final weights: it equals the run's own last curve point, not a fresh model."""
    _, train_data, val_data = toy
    row = tiny_rows(toy[0].vocab_size)[-1]
    model, result = run(row.slug, row.config, FAST, train_data, val_data, seed=1, val_chars=2 * len(val_data),
                        progress=False)
    assert result.val_loss == result.curve[-1].val and result.train_loss == result.curve[-1].train
    assert result.val_bpc == pytest.approx(result.val_loss / math.log(2) / 2)
    torch.manual_seed(1)
    fresh = score(GPT(row.config), FAST, train_data, val_data, val_chars=len(val_data))
    assert fresh["val_loss"] > result.val_loss + 0.5                  # an untrained model is far worse
    again = score(model, FAST, train_data, val_data, val_chars=len(val_data))
    assert again["val_loss"] == result.val_loss


def test_split_is_contiguous_and_cuts_at_a_line_break():
    text = "".join(f"line {i:03d}\n" for i in range(100))          # 9 characters a line
    train_text, val_text = split_text(text, 0.2)
    assert train_text + val_text == text
    assert train_text.endswith("\n") and val_text.startswith("line 080")
    assert split_text("abcdefghij", 0.3) == ("abcdefg", "hij")     # nowhere to snap: the exact cut


def test_too_short_a_split_is_a_clear_error(toy):
    _, train_data, _ = toy
    cfg = tiny_rows(toy[0].vocab_size)[0].config
    with pytest.raises(DataError, match=r"the val split has 10 tokens; block_size=16 needs at least 17"):
        train(cfg, FAST, train_data, train_data[:10], seed=0, progress=False)


def test_learning_rate_warms_up_then_decays_to_min():
    cfg = TrainConfig(iters=100, lr=1.0, min_lr=0.1, warmup_iters=10)
    lrs = [get_lr(it, cfg) for it in range(cfg.iters)]
    assert all(a < b for a, b in zip(lrs[:10], lrs[1:11]))
    assert lrs[10] == pytest.approx(1.0) and lrs[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))


def test_weight_decay_applies_to_matrices_only(toy):
    model = GPT(tiny_rows(toy[0].vocab_size)[0].config)
    decay, no_decay = train_module.make_optimizer(model, FAST).param_groups
    assert all(p.dim() == 2 for p in decay["params"]) and decay["weight_decay"] == FAST.weight_decay
    assert all(p.dim() == 1 for p in no_decay["params"]) and no_decay["weight_decay"] == 0.0
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


MUON = dataclasses.replace(FAST, optimizer="muon", lr=1e-3)


def blocks_matrix(name: str, p: torch.Tensor) -> bool:
    return name.startswith("blocks.") and p.dim() == 2


@pytest.mark.parametrize("tie", [True, False])
def test_muon_takes_the_blocks_matrices_and_adamw_the_rest(toy, tie):
    model = GPT(dataclasses.replace(tiny_rows(toy[0].vocab_size)[-1].config, tie_embeddings=tie))
    muon, adamw = train_module.make_optimizer(model, MUON).optimizers
    assert isinstance(muon, torch.optim.Muon) and isinstance(adamw, torch.optim.AdamW)
    assert muon.param_groups[0]["adjust_lr_fn"] == "match_rms_adamw"
    in_muon = {id(p) for g in muon.param_groups for p in g["params"]}
    in_adamw = {id(p) for g in adamw.param_groups for p in g["params"]}
    for name, p in model.named_parameters():
        assert (id(p) in in_muon, id(p) in in_adamw) == ((True, False) if blocks_matrix(name, p) else (False, True)), name
    assert len(train_module.make_optimizer(model, MUON).param_groups) == 3   # the schedule sets all


def newton_schulz(g: torch.Tensor, steps: int = 5, a=3.4445, b=-4.775, c=2.0315) -> torch.Tensor:
    """Muon's orthogonalisation, written out: g / |g|, then X <- aX + (b XX' + c (XX')^2) X, on the wide side."""
    x = g / (g.norm() + 1e-7)
    wide = x.size(0) > x.size(1)
    x = x.T if wide else x
    for _ in range(steps):
        s = x @ x.T
        x = a * x + (b * s + c * s @ s) @ x
    return x.T if wide else x


def test_one_muon_step_by_hand(toy):
    """Muon on a block's matrix: Nesterov momentum (0.95), Newton-Schulz orthogonalisation, scaled by
    0.2 sqrt(max(rows, cols)) (match_rms_adamw: an orthogonal update's RMS becomes 0.2, an AdamW step's), then
    lr; decoupled decay lr x weight_decay (torch orthogonalises in bfloat16). AdamW's first step on the rest: lr x g / |g|, decay on matrices."""
    torch.manual_seed(0)
    model = GPT(dataclasses.replace(tiny_rows(toy[0].vocab_size)[-1].config, tie_embeddings=False))
    opt = train_module.make_optimizer(model, MUON)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    x, y = get_batch(toy[1], model.cfg.block_size, 8, torch.Generator().manual_seed(0))
    model(x, y)[1].backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    opt.step()
    lr, wd = MUON.lr, MUON.weight_decay
    for name, p in model.named_parameters():
        g, w = grads[name].double(), before[name].double()
        step = (w * (1 - lr * (wd if p.dim() == 2 else 0)) - p.detach().double()) / lr
        if blocks_matrix(name, p):
            nesterov = g.lerp((1 - 0.95) * g, 0.95)                     # the momentum buffer after one step
            expected = 0.2 * math.sqrt(max(g.shape)) * newton_schulz(nesterov)
            # torch's Newton-Schulz runs in bfloat16: equal to its precision, in direction and in size (the
            # gradient itself, not orthogonalised, points elsewhere: cosine about 0.8)
            assert F.cosine_similarity(step.flatten(), expected.flatten(), dim=0) > 0.99, name
            assert F.cosine_similarity(step.flatten(), g.flatten(), dim=0) < 0.95, name
            assert abs(step.norm() / expected.norm() - 1) < 0.02, name
            orthogonal = 0.2 * math.sqrt(max(g.shape)) * newton_schulz(nesterov, steps=50)
            assert 0.15 < orthogonal.pow(2).mean().sqrt() < 0.25         # converged: RMS 0.2, as AdamW's
        else:
            torch.testing.assert_close(step, g / (g.abs() + 1e-8), atol=1e-4, rtol=1e-4, msg=name)


def test_muon_trains_and_seeds_batched_refuse_it_in_one_line(toy):
    tok, train_data, val_data = toy
    cfg = tiny_rows(tok.vocab_size)[-1].config
    _, result = run("muon", cfg, dataclasses.replace(FAST, optimizer="muon"), train_data, val_data, seed=0,
                    val_chars=len(val_data), progress=False)
    assert not result.diverged and result.curve[-1].val < 0.75 * result.curve[0].val
    with pytest.raises(ConfigError, match="optimizer='muon': torch.optim.Muon steps 2-D matrices"):
        train_seeds(cfg, MUON, train_data, val_data, [0, 1])
    with pytest.raises(ConfigError, match="optimizer='sgd': allowed values are adamw, muon"):
        TrainConfig(optimizer="sgd")


def test_a_perturbation_at_rounding_level_moves_weights_by_about_1e_7_and_nothing_else(toy):
    cfg = tiny_rows(toy[0].vocab_size)[-1].config
    torch.manual_seed(0)
    model = GPT(cfg)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    perturb(model, 0.0, seed=0)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())      # 0: untouched
    state = torch.get_rng_state()
    perturb(model, 1e-7, seed=0)
    assert torch.equal(torch.get_rng_state(), state)              # its own generator: dropout's draws unchanged
    changed = total = 0
    for k, v in model.state_dict().items():
        nonzero = before[k] != 0
        rel = ((v - before[k])[nonzero] / before[k][nonzero]).abs()
        assert rel.max() < 1e-6, k
        changed, total = changed + int((v != before[k]).sum()), total + v.numel()
    assert changed > total / 3                                    # most weights move by a last bit or two
    again = GPT(cfg)
    again.load_state_dict(before)
    perturb(again, 1e-7, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), model.state_dict().values()))


def test_a_perturbed_run_sees_the_same_batches_and_starts_where_the_original_does(toy):
    _, train_data, val_data = toy
    cfg = tiny_rows(toy[0].vocab_size)[-1].config
    original = train(cfg, FAST, train_data, val_data, seed=1, progress=False)[1]
    perturbed_cfg = TrainConfig(**{**FAST.to_dict(), "init_perturbation": 1e-7})
    again = train(cfg, perturbed_cfg, train_data, val_data, seed=1, progress=False)[1]
    assert again.curve[0].val == pytest.approx(original.curve[0].val, abs=1e-5)    # the same start, to rounding
    assert again.curve != original.curve                                          # but not the same run
    assert abs(again.curve[-1].val - original.curve[-1].val) < 0.05
