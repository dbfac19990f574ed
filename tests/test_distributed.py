"""One run over several processes: the run stage under torchrun (gloo on CPU) trains what one process trains."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from modern_gpt.core.files import token_bytes, write_bytes, write_json
from modern_gpt.config import ModelConfig, TrainConfig
from modern_gpt.records.inputs import CorpusFile, CorpusMeta, RowConfig, SplitSize

from conftest import toy_text

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]


def project(tmp: Path, batch_size: int = 8) -> Path:
    """What stages/run.py reads: a row's config and a tokenized corpus."""
    text = toy_text(8000)
    vocab = sorted(set(text))
    ids = [vocab.index(c) for c in text]
    split = int(len(ids) * 0.9)
    write_bytes(tmp / "data" / "train.bin", token_bytes(ids[:split]))
    write_bytes(tmp / "data" / "val.bin", token_bytes(ids[split:]))
    meta = CorpusMeta(CorpusFile("toy.txt", len(text.encode()), "", len(text)), 0.1, "char", len(vocab),
                      SplitSize(split, split), SplitSize(len(ids) - split, len(ids) - split))
    write_json(tmp / "data" / "meta.json", meta.to_dict())
    model = ModelConfig(vocab_size=len(vocab), block_size=16, n_layer=2, n_head=4, n_kv_head=2, n_embd=32,
                        norm="rmsnorm", pos="rope", mlp="swiglu", bias=False, qk_norm=True)
    train = TrainConfig(iters=30, batch_size=batch_size, lr=3e-3, min_lr=3e-4, warmup_iters=3, eval_interval=10,
                        eval_iters=2)
    write_json(tmp / "configs" / "row.json", RowConfig(model, train).to_dict())
    return tmp


def run_stage(launcher: list[str], tmp: Path, out: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}
    done = subprocess.run([*launcher, str(ROOT / "stages" / "run.py"), "row", "0", "--configs", "configs",
                           "--data", "data", "--out", out], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=300)
    if check and done.returncode:
        raise AssertionError(f"{launcher} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


@pytest.mark.slow                  # processes of their own, each importing torch
def test_two_gloo_processes_train_the_single_process_run_to_within_1e_5(tmp_path):
    """Each of 2 processes trains half of the same global batch of 8, and DistributedDataParallel averages
    their gradients: the loss curve (every step's loss, and the eval points) is the 1-process run's within
    1e-5, and only the first process writes the run."""
    tmp = project(tmp_path)
    run_stage([sys.executable], tmp, "one")
    run_stage([*TORCHRUN, "--nproc_per_node=2"], tmp, "two")
    one = json.loads((tmp / "one" / "row" / "0" / "run.json").read_text())
    two = json.loads((tmp / "two" / "row" / "0" / "run.json").read_text())
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["steps"] == two["steps"] == 30 and len(one["losses"]) == len(two["losses"]) == 30
    assert max(abs(a - b) for a, b in zip(one["losses"], two["losses"])) <= 1e-5
    for a, b in zip(one["curve"], two["curve"], strict=True):
        assert a["iter"] == b["iter"] and abs(a["train"] - b["train"]) <= 1e-5 and abs(a["val"] - b["val"]) <= 1e-5
    assert abs(one["val_loss"] - two["val_loss"]) <= 1e-5
    assert one["losses"][-1] < one["losses"][0] - 0.3                    # it learned: the comparison means something
    assert sorted(p.name for p in (tmp / "two" / "row" / "0").iterdir()) == ["model.pt", "run.json"]


def test_a_batch_that_does_not_split_evenly_over_the_processes_is_a_one_line_error(tmp_path):
    tmp = project(tmp_path, batch_size=7)
    done = run_stage([*TORCHRUN, "--nproc_per_node=2"], tmp, "two", check=False)
    assert done.returncode != 0
    # each process says it in one line; torchrun then reports its failed children in a report of its own
    assert done.stderr.startswith("error: train.batch_size=7: torchrun runs 2 processes, each training an equal "
                                  "slice of the batch: use a multiple of 2\n")
    for ours in ("src", "stages"):                                     # no traceback from this project's code
        assert f'File "{ROOT / ours}' not in done.stderr
    assert not (tmp / "two").exists()
