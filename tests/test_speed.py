"""Speed that does not change what is measured: fused AdamW, bf16 autocast, torch.compile with its kernel
cache, and seeds batched into one model (the quick command's and the bench's, never the pipeline's)."""

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import modern_gpt.training.loop as loop
from fakes import TRAIN, run_record
from conftest import tiny_rows, toy_text
from e2e import code_copy
from modern_gpt.core.errors import ConfigError
from modern_gpt.core.files import token_bytes
from modern_gpt.records.inputs import CorpusFile, CorpusMeta, RowConfig, SplitSize
from modern_gpt.records.run_record import RunRecord
from modern_gpt.corpus.reading import split_text
from modern_gpt.corpus.tokenizers import SymbolTokenizer
from modern_gpt.nn import GPT
from modern_gpt.reporting.provenance import speed_line
from modern_gpt.training.batched import Stacked, train_seeds
from modern_gpt.config import TrainConfig
from modern_gpt.training.loop import make_optimizer, train

ROOT = Path(__file__).resolve().parents[1]
SMOKE = TrainConfig(iters=10, batch_size=8, lr=3e-3, min_lr=3e-4, warmup_iters=2, eval_interval=2, eval_iters=2)


def max_curve_gap(a, b) -> float:
    assert [p.iter for p in a.curve] == [p.iter for p in b.curve]
    return max(max(abs(p.train - q.train), abs(p.val - q.val)) for p, q in zip(a.curve, b.curve))


@pytest.mark.parametrize("index", [0, 6], ids=["baseline", "full"])
@pytest.mark.parametrize("placement", ["pre", "post"])
def test_batched_seeds_give_each_seed_its_own_runs_numbers(toy, index, placement):
    tok, train_data, val_data = toy
    vocab = tok.vocab_size
    cfg = tiny_rows(vocab, norm_placement=placement)[index].config
    batched = train_seeds(cfg, SMOKE, train_data, val_data, [0, 1, 2], progress=False)
    for seed, (model, trained) in zip([0, 1, 2], batched):
        alone_model, alone = train(cfg, SMOKE, train_data, val_data, seed, progress=False)
        assert not trained.diverged and trained.steps == alone.steps == 10
        assert max_curve_gap(trained, alone) < 1e-5                     # 10 smoke-size steps, each seed alike
        for (name, p), q in zip(model.named_parameters(), alone_model.parameters()):
            torch.testing.assert_close(p, q, atol=1e-4, rtol=0, msg=name)
    # and the seeds really are different runs
    assert batched[0][1].curve[-1].val != batched[1][1].curve[-1].val


def test_a_diverging_seed_stops_alone_with_its_weights_before_the_bad_step(toy, monkeypatch):
    tok, train_data, val_data = toy
    vocab = tok.vocab_size
    cfg = tiny_rows(vocab)[-1].config
    calls = []
    real_losses = Stacked.losses

    def nan_for_seed_1_at_step_3(self, x, y):
        losses = real_losses(self, x, y)
        calls.append(1)
        if len(calls) == 4:
            losses[1] = float("nan")
        return losses

    monkeypatch.setattr(Stacked, "losses", nan_for_seed_1_at_step_3)
    (m0, t0), (m1, t1) = train_seeds(cfg, SMOKE, train_data, val_data, [0, 1], progress=False)
    monkeypatch.undo()
    assert not t0.diverged and t0.steps == 10
    assert t1.diverged and t1.steps == 3 and [p.iter for p in t1.curve] == [0, 2]
    real_one = loop.One.losses
    steps = []

    def nan_at_call_4(self, x, y):
        steps.append(1)
        values = real_one(self, x, y)
        return [float("nan")] if len(steps) == 4 else values      # the loop sees the loss before the update

    monkeypatch.setattr(loop.One, "losses", nan_at_call_4)
    alone_model, alone = train(cfg, SMOKE, train_data, val_data, 1, progress=False)
    assert alone.diverged and alone.steps == 3 and max_curve_gap(t1, alone) < 1e-5
    for p, q in zip(m1.parameters(), alone_model.parameters()):
        torch.testing.assert_close(p, q, atol=1e-4, rtol=0)


@pytest.mark.parametrize("change, message", [
    ({"compile": "default"}, "compile='default': seeds batched train eagerly"),
    ({"dropout": 0.1}, "dropout=0.1: training seeds batched needs dropout 0"),
])
def test_batched_seeds_refuse_what_would_break_the_equality(toy, change, message):
    tok, train_data, val_data = toy
    vocab = tok.vocab_size
    cfg, train_cfg = tiny_rows(vocab)[0].config, SMOKE
    if "dropout" in change:
        cfg = type(cfg)(**{**cfg.to_dict(), **change})
    else:
        train_cfg = TrainConfig(**{**SMOKE.to_dict(), **change})
    with pytest.raises(ConfigError, match=message):
        train_seeds(cfg, train_cfg, train_data, val_data, [0, 1], progress=False)


@pytest.mark.slow                  # the quick command, the bench or a stage in processes of their own
def test_quick_command_batch_seeds_prints_the_same_table_as_seeds_one_by_one():
    args = [sys.executable, "-m", "modern_gpt", "ablate", "--smoke", "--iters", "6", "--n-layer", "1", "--seeds", "2"]
    one_by_one = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=True).stdout
    batched = subprocess.run([*args, "--batch-seeds"], capture_output=True, text=True, cwd=ROOT, check=True).stdout

    def losses(out: str) -> list[list[str]]:                    # every column but the seconds
        return [[w for w in line.split() if not re.fullmatch(r"\d+s", w)]
                for line in out.splitlines() if line.startswith(("Step 1", "+ "))]

    assert len(losses(batched)) == 7 and losses(batched) == losses(one_by_one)


def test_adamw_is_fused_and_the_precision_is_a_setting(toy):
    model = GPT(tiny_rows(toy[0].vocab_size)[0].config)
    assert make_optimizer(model, SMOKE).defaults["fused"] is True
    with pytest.raises(ConfigError, match="compile='fast': allowed values are none, default, reduce-overhead"):
        TrainConfig(compile="fast")
    with pytest.raises(ConfigError, match="dtype='float16': allowed values are float32, bfloat16"):
        TrainConfig(dtype="float16")


def test_bf16_autocast_trains_on_cpu_and_rounds_differently(toy):
    tok, train_data, val_data = toy
    vocab = tok.vocab_size
    cfg = tiny_rows(vocab)[-1].config
    _, fp32 = train(cfg, SMOKE, train_data, val_data, 0, progress=False)
    _, bf16 = train(cfg, TrainConfig(**{**SMOKE.to_dict(), "dtype": "bfloat16"}), train_data, val_data, 0,
                    progress=False)
    assert not bf16.diverged and all(math.isfinite(p.val) for p in bf16.curve)
    assert 0 < max_curve_gap(bf16, fp32) < 0.05                        # autocast is on, and it is only rounding


def test_the_report_says_how_the_runs_computed():
    def record(**train) -> RunRecord:
        return run_record(train_cfg={**TRAIN, **train}, compiled_graphs=2 if train else 0,
                          cached_graphs=1 if train else 0)

    assert speed_line([record(), record()]) == "float32 (TF32 matmuls on CUDA), eager (train.compile: none)"
    line = speed_line([record(compile="default"), record(compile="default")])
    assert "torch.compile mode 'default'" in line and "4 graphs compiled, 2 loaded from the kernel cache" in line
    assert speed_line([record(), record(dtype="bfloat16")]).startswith("**runs differ**")


COMPILED_RUN = textwrap.dedent("""
    import json, sys, torch
    sys.path.insert(0, sys.argv[1])
    from conftest import tiny_rows, toy_text
    from modern_gpt.corpus.reading import split_text
    from modern_gpt.corpus.tokenizers import SymbolTokenizer
    from modern_gpt.config import TrainConfig
    from modern_gpt.training.single import run
    text = toy_text(3000)
    tok = SymbolTokenizer.fit({"kind": "char"}, text)
    train_data, val_data = (torch.tensor(tok.encode(p)) for p in split_text(text, 0.1))
    cfg = TrainConfig(iters=6, batch_size=4, lr=3e-3, min_lr=3e-4, warmup_iters=1, eval_interval=3, eval_iters=2,
                      compile=sys.argv[2])
    row = tiny_rows(tok.vocab_size, n_layer=1)[-1]
    _, record = run(row.slug, row.config, cfg, train_data, val_data, 0, val_chars=len(val_data), progress=False)
    print(json.dumps(record.to_dict()))
""")


def compiled_run(kernels: Path, mode: str) -> RunRecord:
    """A run compiled in a fresh process, with Inductor's kernel cache in `kernels`."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(kernels)}
    out = subprocess.run([sys.executable, "-c", COMPILED_RUN, str(ROOT / "tests"), mode], capture_output=True,
                         text=True, env=env, cwd=kernels.parent, check=True).stdout
    return RunRecord.from_dict(json.loads(out.splitlines()[-1]))


@pytest.fixture(scope="session")
def kernels(builds) -> Path:
    """One Inductor kernel cache for the session's compiled runs (every pytest process of it): each graph compiles
    once. The test of the cold-then-warm cache keeps a cache of its own."""
    return builds / "kernels"


def stage_run(project: Path, row: str, seed: int, out: str) -> RunRecord:
    """The run stage's script of `project` (a copy of this checkout's stages/ and src/), in a process of its own,
    with no TORCHINDUCTOR_CACHE_DIR set: the script picks the kernel cache."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    subprocess.run([sys.executable, str(project / "stages" / "run.py"), row, str(seed), "--configs",
                    str(project / "configs"), "--data", str(project / "tokenized"), "--out", str(project / out)],
                   cwd=project, env=env, check=True, capture_output=True)
    return RunRecord.from_dict(json.loads((project / out / row / str(seed) / "run.json").read_text()))


@pytest.mark.slow
def test_a_compiled_run_is_deterministic_and_the_next_process_reuses_the_kernels_the_project_keeps(tmp_path):
    """stages/run.py points Inductor at <project>/.cache/torchinductor (ignored by git and DVC): in a copy of this
    checkout, the first process compiles, the next (the same run, then another seed) compiles nothing and loads
    them, with the same numbers; an eager run computes the same maths with other kernels. This test keeps a cache
    of its own, cold (the copy's); the other compiled runs share the session's."""
    project = code_copy(tmp_path / "project")
    text = toy_text(3000)
    tok = SymbolTokenizer.fit({"kind": "char"}, text)
    data = project / "tokenized"
    data.mkdir()
    train_text, val_text = split_text(text, 0.1)
    for name, part in (("train", train_text), ("val", val_text)):
        (data / f"{name}.bin").write_bytes(token_bytes(tok.encode(part)))
    meta = CorpusMeta(CorpusFile("toy.txt", len(text.encode()), "", len(text)), 0.1, "char", tok.vocab_size,
                      SplitSize(len(tok.encode(train_text)), len(train_text)),
                      SplitSize(len(tok.encode(val_text)), len(val_text)))
    (data / "meta.json").write_text(json.dumps(meta.to_dict()))
    row = tiny_rows(tok.vocab_size, n_layer=1)[-1]
    (project / "configs").mkdir()
    for name, mode in (("compiled", "default"), ("eager", "none")):
        train_cfg = TrainConfig(iters=6, batch_size=4, lr=3e-3, min_lr=3e-4, warmup_iters=1, eval_interval=3,
                                eval_iters=2, compile=mode)
        (project / "configs" / f"{name}.json").write_text(json.dumps(RowConfig(row.config, train_cfg).to_dict()))

    cold = stage_run(project, "compiled", 0, "cold")
    warm = stage_run(project, "compiled", 0, "warm")
    assert cold.train.compile == "default" and (project / ".cache" / "torchinductor").is_dir()
    assert cold.compiled_graphs > 0 and cold.cached_graphs == 0          # the first process pays ...
    assert warm.compiled_graphs == 0 and warm.cached_graphs == cold.compiled_graphs   # ... the next loads them
    assert warm.curve == cold.curve and warm.val_loss == cold.val_loss     # same seed, same numbers
    other_seed = stage_run(project, "compiled", 1, "warm")
    assert other_seed.compiled_graphs == 0 and other_seed.cached_graphs > 0
    eager = stage_run(project, "eager", 0, "eager")
    assert eager.compiled_graphs == eager.cached_graphs == 0
    assert max(abs(p.val - q.val) for p, q in zip(eager.curve, cold.curve)) < 1e-3   # other kernels, same maths
    ignored = subprocess.run(["git", "check-ignore", "-q", ".cache/torchinductor"], cwd=ROOT)
    assert ignored.returncode == 0 and "/.cache/" in (ROOT / ".dvcignore").read_text().split()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_every_compile_mode_trains_on_cpu(kernels, mode):
    record = compiled_run(kernels, mode)
    assert not record.diverged and record.compiled_graphs > 0 and math.isfinite(record.val_loss)


def test_batched_seeds_perturb_each_seed_as_its_own_run_does(toy):
    tok, train_data, val_data = toy
    vocab = tok.vocab_size
    cfg = tiny_rows(vocab)[-1].config
    perturbed = dataclasses.replace(SMOKE, init_perturbation=1e-7)
    batched = train_seeds(cfg, perturbed, train_data, val_data, [0, 1], progress=False)
    for seed, (model, trained) in zip([0, 1], batched):
        alone_model, alone = train(cfg, perturbed, train_data, val_data, seed, progress=False)
        plain_model, _ = train(cfg, SMOKE, train_data, val_data, seed, progress=False)
        assert max_curve_gap(trained, alone) < 1e-5
        for p, q, r in zip(model.parameters(), alone_model.parameters(), plain_model.parameters()):
            torch.testing.assert_close(p, q, atol=1e-4, rtol=0)
        assert any(not torch.equal(q, r) for q, r in zip(alone_model.parameters(), plain_model.parameters()))
