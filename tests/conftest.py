import dataclasses
import random

import pytest
import torch

from modern_gpt.config import ModelConfig
from modern_gpt.core.params import project_params
from modern_gpt.pipeline.params import parse


def toy_text(n_chars: int = 6000, seed: int = 0) -> str:
    """A small corpus with learnable structure: short 'sentences' of words from a fixed list."""
    rng = random.Random(seed)
    words = ["rama", "sita", "vanam", "gacchati", "pasyati", "devah", "phalam", "khadati", "jalam", "pibati"]
    out = []
    while sum(map(len, out)) < n_chars:
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 6))) + " .\n")
    return "".join(out)


@pytest.fixture
def tiny_cfg() -> ModelConfig:
    return ModelConfig(vocab_size=17, block_size=16, n_layer=2, n_head=4, n_kv_head=4, n_embd=32)


def tiny_rows(vocab_size: int = 17, **shape):
    """params.yaml's ladder (the book's design) at a tiny size; `shape` sets a field at both ends."""
    p = parse(project_params())
    tiny = {**dict(block_size=16, n_layer=2, n_head=4, n_embd=32), **shape}
    baseline = {**p.baseline, **{k: v for k, v in tiny.items() if k in p.baseline}}
    return dataclasses.replace(p, model={**p.model, **tiny}, baseline=baseline).rows(vocab_size)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def score(model, train_cfg, train_data, val_data, val_chars: int) -> dict[str, float]:
    """Train and val loss of the given weights on the loss curve's fixed windows, and bpc: what a run record's
    scores are, recomputed from a model."""
    from modern_gpt.training.batches import fixed_windows
    from modern_gpt.training.evaluate import bits_per_char, mean_loss
    block, n = model.cfg.block_size, train_cfg.eval_iters * train_cfg.batch_size
    val_loss = mean_loss(model, fixed_windows(val_data, block, n), train_cfg)
    return {"train_loss": mean_loss(model, fixed_windows(train_data, block, n), train_cfg), "val_loss": val_loss,
            "val_bpc": bits_per_char(val_loss, len(val_data), val_chars)}
