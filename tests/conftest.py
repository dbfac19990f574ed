import dataclasses
import fcntl
import os
import random
from pathlib import Path

if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    # pytest-xdist's workers share the cores: each worker, and every process a test starts, computes on its share
    # (torch reads this as it loads; two processes that each spin a thread per core run many times slower)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(
        max(1, len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))

import pytest
import torch

import e2e

from modern_gpt.config import ModelConfig
from modern_gpt.config.params import project_params
from modern_gpt.corpus.reading import split_text
from modern_gpt.corpus.tokenizers import SymbolTokenizer
from modern_gpt.pipeline.ladder_params import parse


def toy_text(n_chars: int = 6000, seed: int = 0) -> str:
    """A small corpus with learnable structure: short 'sentences' of words from a fixed list."""
    rng = random.Random(seed)
    words = ["rama", "sita", "vanam", "gacchati", "pasyati", "devah", "phalam", "khadati", "jalam", "pibati"]
    out = []
    while sum(map(len, out)) < n_chars:
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 6))) + " .\n")
    return "".join(out)


@pytest.fixture(scope="module")
def toy():
    """The toy text's tokenizer, and its train and validation tokens (the last 10% validate)."""
    text = toy_text()
    tok = SymbolTokenizer.fit({"kind": "char"}, text)
    return tok, *(torch.tensor(tok.encode(part)) for part in split_text(text, 0.1))


@pytest.fixture
def tiny_cfg() -> ModelConfig:
    return ModelConfig(vocab_size=17, block_size=16, n_layer=2, n_head=4, n_kv_head=4, n_embd=32)


def tiny_rows(vocab_size: int = 17, **shape):
    """params.yaml's ladder (the book's design) at a tiny size; `shape` sets a field at both ends."""
    p = parse(project_params())
    tiny = {**dict(block_size=16, n_layer=2, n_head=4, n_embd=32), **shape}
    baseline = p.baseline.replace(**{k: v for k, v in tiny.items() if k in p.baseline.overrides})
    return dataclasses.replace(p, model=p.model.replace(**tiny), baseline=baseline).rows(vocab_size)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# --- the end-to-end tests' workspaces and cores (tests/e2e.py) -------------------------------------------------

BUILT_FOR = {"repo": "smoke", "options_repo": "options", "options_and_remote": "options"}  # fixture: its build
QUICK, BOTH_CORES, SLOW, LIGHT = range(4)            # what a test is, for the core lock and the order


def kind(item) -> int:
    """A unit test (QUICK), a both_cores test, a light end-to-end test, or another slow one, by its marks."""
    marks = {m.name for m in item.iter_markers()}
    return BOTH_CORES if "both_cores" in marks else LIGHT if "light" in marks else SLOW if "slow" in marks else QUICK


def builds_of(item) -> set[str]:
    """The builds a test's fixtures copy."""
    return {BUILT_FOR[f] for f in item.fixturenames if f in BUILT_FOR}


@pytest.fixture
def repo(builds, tmp_path) -> Path:
    """A copy of its own of the smoke build (tests/e2e.py): the book's ladder, trained once per session by `dvc repro`
    (which ran exactly the 16 runs, 7 serves, generate, tokenize, plan and report) and committed."""
    return e2e.workspace("smoke", builds, tmp_path)


@pytest.fixture
def options_repo(builds, tmp_path) -> Path:
    """A copy of its own of the options build (tests/e2e.py's OPTIONS: a smaller ladder with the A/A copy and
    leave-one-out on), trained once per session by `dvc repro` (which ran exactly its 10 runs, aa@baseline-5 and -6
    and loo@qk_norm-0 and -1 among them, 3 serves, generate, tokenize, plan and report) and committed."""
    return e2e.workspace("options", builds, tmp_path)


@pytest.fixture
def options_and_remote(builds, tmp_path) -> Path:
    """A copy of its own of the options build, and of the remote it pushed to (where the copy's default remote
    points: tmp_path/modern-gpt-remote)."""
    return e2e.workspace("options", builds, tmp_path, remote=True)


@pytest.fixture(scope="session")
def builds(tmp_path_factory) -> Path:
    """Where the session's builds live: a folder every pytest process of the session sees (under pytest-xdist, the
    workers' temporary folders share a parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def _builds_in_the_background(request, builds):
    """The builds this session's tests use start training before the first test, in processes of their own: the
    unit tests run while they train, and the first end-to-end test finds them made (or waits on their lock)."""
    procs = e2e.start(builds, sorted(set().union(*map(builds_of, request.session.items))))
    yield
    for proc in procs:
        proc.wait()


@pytest.fixture(autouse=True)
def _cores(request, builds):
    """A test marked both_cores (modern-gpt repro's runs side by side, SLURM's two workers, a Ray cluster of 2
    CPUs) runs with no other slow test beside it: it holds the session's core lock alone, where every other slow
    test holds it shared. Unit tests and the light end-to-end tests (which train and compile nothing) take no lock."""
    if kind(request.node) in (QUICK, LIGHT):
        yield
        return
    for name in builds_of(request.node):
        e2e.build(name, builds)                             # waited for before the lock, not while holding it
    with open(builds / "cores.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if kind(request.node) == BOTH_CORES else fcntl.LOCK_SH)
        yield


def score(model, train_cfg, train_data, val_data, val_chars: int) -> dict[str, float]:
    """Train and val loss of the given weights on the loss curve's fixed windows, and bpc: what a run record's
    scores are, recomputed from a model."""
    from modern_gpt.training.batches import fixed_windows
    from modern_gpt.training.evaluate import bits_per_char, mean_loss
    block, n = model.cfg.block_size, train_cfg.eval_iters * train_cfg.batch_size
    val_loss, _ = mean_loss(model, fixed_windows(val_data, block, n), train_cfg)
    return {"train_loss": mean_loss(model, fixed_windows(train_data, block, n), train_cfg)[0], "val_loss": val_loss,
            "val_bpc": bits_per_char(val_loss, len(val_data), val_chars)}


def pytest_collection_modifyitems(config, items):
    """The order the tests are handed out in, for the time the suite takes (each test passes alone and in any order):
    a few unit tests, the both_cores tests, the other unit tests, the light end-to-end tests, then the other slow
    ones. pytest-xdist gives each worker a run of consecutive tests to start with, so one worker takes the
    both_cores tests, one after another, while the other runs the tests that take no core lock and the builds train
    in the background; the slow tests, which would wait for the lock, come last."""
    def waits_for(item) -> int:                   # the both_cores tests by the build they wait for: none, the
        names = builds_of(item)                                       # options build (quicker), the smoke one
        return 2 if "smoke" in names else 1 if "options" in names else 0

    quick, alone, slow, light = ([i for i in items if kind(i) == k] for k in (QUICK, BOTH_CORES, SLOW, LIGHT))
    items[:] = [*quick[:20], *sorted(alone, key=waits_for), *quick[20:], *light, *slow]
