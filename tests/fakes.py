"""What the tests build by hand, defined once: a run record (run_record) and its run.json (run_json), a ladder's
rows of them (ladder), the book's ladder labels (LABELS), the committed params (default) and the plan stage's files
on them (plan_files), and the checks that an error is one line (one_line) saying a message (refused). Fixtures live
in conftest.py; the trained workspaces in e2e.py; the one Markdown-table reader in md_tables.py."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Callable

import pytest

from modern_gpt.config import ModelConfig, TrainConfig
from modern_gpt.config.params import read_yaml
from modern_gpt.core.errors import ConfigError
from modern_gpt.pipeline.ladder_params import parse
from modern_gpt.pipeline.plan import plan
from modern_gpt.records.inputs import CorpusFile, CorpusMeta, SplitSize
from modern_gpt.records.run_record import Point, RunRecord
from modern_gpt.records.stages import Plan
from modern_gpt.reporting.results import RowResult, ladder_results
from modern_gpt.reporting.settings import Settings

ROOT = Path(__file__).resolve().parents[1]

LABELS = ["Step 1 baseline", "+ RMSNorm", "+ RoPE", "+ SwiGLU", "+ no bias", "+ GQA (kv=2)", "+ QK-norm"]
MODEL = {"n_layer": 2, "n_head": 4, "n_embd": 32, "block_size": 16, "dropout": 0.0, "mlp_hidden": 0}
TRAIN = {"iters": 300, "batch_size": 4, "lr": 0.002, "min_lr": 0.0002, "warmup_iters": 30, "weight_decay": 0.1,
         "grad_clip": 1.0, "eval_interval": 100, "eval_iters": 2}


def run_record(seed: int = 0, val: float | None = 1.0, train: float | None = None, params: int = 100_000,
               curve: list[float] | None = None, slug: str = "r", *, model: dict | None = None,
               train_cfg: dict | None = None, **fields: Any) -> RunRecord:
    """A run record as a run writes one, at a tiny shape: val None is a diverged seed; train the training loss
    (default: val); the curve's points are evaluations 100 steps apart, its last the final val loss by default;
    `model` and `train_cfg` replace MODEL and TRAIN whole; `fields` set any other field (machine, code_md5, ...)."""
    diverged = val is None
    points = curve if curve is not None else ([] if diverged else [3.0, 2.0, val])
    record = dict(
        slug=slug, seed=seed, model=ModelConfig.from_dict(MODEL if model is None else model),
        train=TrainConfig.from_dict(TRAIN if train_cfg is None else train_cfg), diverged=diverged,
        steps=100 * len(points), curve=tuple(Point(iter=100 * i, train=v, val=v) for i, v in enumerate(points)),
        train_loss=None if diverged else (val if train is None else train), val_loss=val,
        val_bpc=None if diverged else val / math.log(2), params=params, params_non_embedding=params - 5000,
        secs=10.0, tokens_per_sec=1000.0, device="cpu", torch="2.0.0")
    return RunRecord(**{**record, **fields})


def run_json(cfg: ModelConfig, slug: str = "qk_norm", seed: int = 0) -> str:
    """A run.json as a run of model `cfg` writes it (the rest: run_record's)."""
    return json.dumps(dataclasses.replace(run_record(seed, slug=slug), model=cfg).to_dict())


def ladder(vals: list[list[float | None]], params: list[int] | None = None, s: Settings = Settings(),
           **kw) -> list[RowResult]:
    """Rows r0, r1, ... labelled LABELS[0], LABELS[1], ... (seed i is index i), each against the row above, at the
    settings' confidence; `kw` go to each run_record."""
    params = params or [100_000] * len(vals)
    return ladder_results(
        [(f"r{i}", LABELS[i], [run_record(seed, v, params=p, slug=f"r{i}", **kw) for seed, v in enumerate(row)])
         for i, (row, p) in enumerate(zip(vals, params))],
        confidence=s.confidence, param_tolerance=s.param_tolerance)


def default() -> dict:
    """The committed params.yaml, as read."""
    return read_yaml(ROOT / "params.yaml")


META = CorpusMeta(CorpusFile("corpus.txt", 110_000, "", 110_000), 0.1, "char", 48, SplitSize(100_000, 100_000),
                  SplitSize(10_000, 10_000))


def plan_files(raw: dict) -> tuple[dict[str, dict], Plan]:
    """The plan stage's work on params `raw` (on the corpus META): each row's config file as it is written, and
    the plan."""
    configs, planned = plan(parse(raw), META)
    return {slug: config.to_dict() for slug, config in configs.items()}, planned


def one_line(call: Callable[[], Any], kind: type[BaseException] = Exception) -> str:
    """The error `call` raises (of `kind`), checked to be one line; its text."""
    with pytest.raises(kind) as e:
        call()
    assert "\n" not in str(e.value), str(e.value)
    return str(e.value)


def refused(call: Callable[[], Any], message: str) -> None:
    """`call` raises a one-line ConfigError that says `message`."""
    said = one_line(call, ConfigError)
    assert message in said, said
