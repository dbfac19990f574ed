"""The ladder's sections of params.yaml (model, baseline, ladder, seeds, train, launch, ablation, sweep), checked
strictly.

The plan stage reads these and nothing else; the corpus sections are corpus/settings.py's, the
report's is reporting/settings.py's.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import ModelConfig, TrainConfig
from ..core import params as params_file
from ..core.errors import ConfigError
from ..config.validate import check_keys, check_number, seed_list
from .ladder import Row, check_flags, ladder, leave_one_out

SECTIONS = ("model", "baseline", "ladder", "seeds", "train", "launch", "ablation", "sweep")
MODEL_KEYS = [f.name for f in dataclasses.fields(ModelConfig) if f.name != "vocab_size"]
ABLATION_DEFAULTS: dict[str, Any] = {"match_params": False, "aa_seeds": [], "leave_one_out": [], "rerun": [],
                                     "rerun_perturbation": 1e-7}
SWEEP_DEFAULTS: dict[str, Any] = {"lr": [], "rows": [], "seeds": []}


@dataclass(frozen=True)
class Params:
    model: dict                       # ModelConfig fields but vocab_size
    baseline: dict                    # the Step 1 values of the ablation flags
    ladder: list[str]                 # the flags after the baseline, in order
    seeds: list[int]
    train: TrainConfig
    ablation: dict                    # match_params, aa_seeds, leave_one_out, rerun, rerun_perturbation
    sweep: dict = dataclasses.field(default_factory=lambda: dict(SWEEP_DEFAULTS))   # lr (multiples), rows, seeds

    def configs(self, vocab_size: int) -> tuple[ModelConfig, ModelConfig]:
        """The baseline and the model under study, at the model's shape."""
        model = ModelConfig.from_dict({**self.model, "vocab_size": vocab_size}, "model")
        base = {**self.model, **self.baseline, "vocab_size": vocab_size}
        if base.get("n_kv_head") is None:                       # null: plain multi-head
            base["n_kv_head"] = model.n_head
        return ModelConfig.from_dict(base, "baseline"), model

    def rows(self, vocab_size: int) -> list[Row]:
        """The ladder's rows for a tokenizer of `vocab_size` tokens."""
        return ladder(*self.configs(vocab_size), self.ladder)

    def leave_one_out(self, vocab_size: int) -> list[Row]:
        return leave_one_out(*self.configs(vocab_size), self.ablation["leave_one_out"])


def _mapping(raw: dict, name: str) -> dict:
    value = raw[name]
    if not isinstance(value, dict):
        raise ConfigError(f"{name}: must be a mapping, got {value!r}")
    return value


def parse(raw: Any) -> Params:
    s = params_file.sections(raw, SECTIONS, optional=("launch", "ablation", "sweep"))
    model = _mapping(s, "model")
    check_keys(model, "model", MODEL_KEYS)
    ModelConfig.from_dict({**model, "vocab_size": 1}, "model")               # types and values now
    baseline = _mapping(s, "baseline")
    check_keys(baseline, "baseline", MODEL_KEYS)

    flags = s["ladder"]
    if not isinstance(flags, list) or not flags or flags[0] != "baseline":
        raise ConfigError(f"ladder: must be a list that starts with baseline (row 0), then flags; got {flags!r}")
    flags = flags[1:]
    check_flags(flags)

    seeds = seed_list("seeds", s["seeds"])
    if not seeds:
        raise ConfigError("seeds: give at least one seed")

    train = TrainConfig.from_dict(_mapping(s, "train"), "train")
    ablation = {**ABLATION_DEFAULTS, **(s["ablation"] or {})}
    check_keys(ablation, "ablation", list(ABLATION_DEFAULTS))
    if not isinstance(ablation["match_params"], bool):
        raise ConfigError(f"ablation.match_params={ablation['match_params']!r}: must be true or false")
    aa = seed_list("ablation.aa_seeds", ablation["aa_seeds"])
    if aa and (len(aa) != len(seeds) or set(aa) & set(seeds)):
        raise ConfigError(f"ablation.aa_seeds={aa}: give {len(seeds)} seeds (as many as seeds), none of {seeds}")
    loo = ablation["leave_one_out"]
    if not isinstance(loo, list) or any(f not in flags for f in loo) or len(set(loo)) != len(loo):
        raise ConfigError(f"ablation.leave_one_out={loo!r}: must list flags of the ladder ({', '.join(flags)}), "
                          "each once")

    rerun = ablation["rerun"]
    rows = ["baseline", *flags]
    if not isinstance(rerun, list) or any(r not in rows for r in rerun) or len(set(rerun)) != len(rerun):
        raise ConfigError(f"ablation.rerun={rerun!r}: must list rows of the ladder ({', '.join(rows)}), each once")
    check_number("ablation.rerun_perturbation", ablation["rerun_perturbation"], 1e-12, 0.01)
    ablation["rerun"] = [r for r in rows if r in rerun]                # in ladder order

    params = Params(model=dict(model), baseline=dict(baseline), ladder=list(flags), seeds=list(seeds),
                    train=train, ablation=ablation)
    params.rows(vocab_size=1)                                   # the ladder must resolve, now
    params.leave_one_out(vocab_size=1)
    check_launch(s["launch"], train.batch_size)
    return dataclasses.replace(params, sweep=parse_sweep(s["sweep"], rows, seeds))


TORCHRUN = (["torchrun"], ["python", "-m", "torch.distributed.run"], ["python3", "-m", "torch.distributed.run"])


def check_launch(raw: Any, batch_size: int) -> None:
    """`launch`, what starts each training run's process (dvc.yaml puts it before `stages/run.py ...`):
    `python`, or a torchrun command line that trains each run over N processes together, each an equal slice
    of train.batch_size. Checked here, before any run starts, since torchrun wraps a child's one-line error in
    a report of its own; an --nproc_per_node torchrun works out itself (auto, gpu) is checked by each run."""
    if raw is None or raw == "python":
        return
    try:
        words = shlex.split(raw) if isinstance(raw, str) else []
    except ValueError:                            # an unclosed quote
        words = []
    if not any(words[:len(t)] == t for t in TORCHRUN):
        raise ConfigError(f"launch={raw!r}: allowed are python, or torchrun with its options, e.g. "
                          "torchrun --standalone --nproc_per_node=2")
    line = " ".join(words)
    found = re.search(r"--nproc[_-]per[_-]node[= ](\d+)\b", line)
    if found and batch_size % int(found.group(1)):
        n = int(found.group(1))
        raise ConfigError(f"train.batch_size={batch_size}: launch runs {n} processes per run, each training an "
                          f"equal slice of the batch: use a multiple of {n}")


def parse_sweep(raw: Any, rows: list[str], seeds: list[int]) -> dict:
    """The learning-rate grid: `lr`, multiples of train.lr (min_lr scales with it) other than 1, whose runs the
    main table already has; `rows`, the ladder rows it covers (kept in ladder order); `seeds`, the seeds of the
    main table it trains on (its runs at train.lr are the main table's on those seeds). lr or rows empty: off."""
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"sweep: must be a mapping with lr and rows, got {raw!r}")
    sweep = {**SWEEP_DEFAULTS, **(raw or {})}
    check_keys(sweep, "sweep", list(SWEEP_DEFAULTS))
    lrs, covered = sweep["lr"], sweep["rows"]
    if (not isinstance(lrs, list) or any(isinstance(m, bool) or not isinstance(m, (int, float)) or not m > 0
                                         or m == 1 or m != m or m == float("inf") for m in lrs)
            or len(set(lrs)) != len(lrs)):
        raise ConfigError(f"sweep.lr={lrs!r}: must list multiples of train.lr, each a positive number other than 1 "
                          "(the main table's runs), each once; [] switches the grid off")
    if not isinstance(covered, list) or any(r not in rows for r in covered) or len(set(covered)) != len(covered):
        raise ConfigError(f"sweep.rows={covered!r}: must list rows of the ladder ({', '.join(rows)}), each once")
    grid_seeds = seed_list("sweep.seeds", sweep["seeds"])
    if lrs and covered and (not grid_seeds or set(grid_seeds) - set(seeds)):
        raise ConfigError(f"sweep.seeds={grid_seeds!r}: must list seeds of the main table ({seeds}), at least one; "
                          "the grid's runs at train.lr are the main table's (sweep.lr=[] switches the grid off)")
    return {"lr": list(lrs), "rows": [r for r in rows if r in covered], "seeds": [s for s in seeds if s in grid_seeds]}


def load(path: str | Path = "params.yaml") -> Params:
    return parse(params_file.read_yaml(path))
