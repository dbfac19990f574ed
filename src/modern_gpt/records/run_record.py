"""The run record: what one training run (one row, one seed) leaves behind, typed in one place.

Training writes it (data/runs/<slug>/<seed>/run.json); the report and the serve stage read it,
each through `RunRecord.from_dict` (records/typed.py's strict `build`: every field, its type and its config checked).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..config import ModelConfig, TrainConfig
from .typed import build


@dataclass(frozen=True)
class Point:
    """One point of the loss curve: mean next-token loss on the fixed train and val windows after `iter` steps, and
    each auxiliary loss term a change adds (training minimises their sum), its mean on the train windows."""
    iter: int
    train: float
    val: float
    terms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord:
    slug: str                         # the run's slug (its config and folder): 'baseline', 'loo_pos', 'sweep_qk_norm_x4'
    seed: int
    model: ModelConfig                # the resolved model config the run trained
    train: TrainConfig                # the training config
    diverged: bool                    # the loss diverged (non-finite, or 10% above uniform past warm-up)
    steps: int                        # optimiser steps done
    curve: tuple[Point, ...]          # every eval_interval steps, and at the end
    train_loss: float | None          # from evaluating the trained weights (None when diverged)
    val_loss: float | None            # nats per token on the fixed validation windows
    val_bpc: float | None             # bits per character of the validation text
    params: int                       # all parameters (the tied token matrix once)
    params_non_embedding: int         # without the token and position tables
    secs: float                       # wall clock of the run, evaluation included
    tokens_per_sec: float             # training tokens per second of optimiser steps
    device: str
    torch: str                        # torch's version and build ('2.13.0+cpu', '2.11.0+cu128')
    machine: str = ""                 # the processor that computed: GPU name, or CPU model and vector ISA
    device_index: str = ""            # the GPU(s) the run held, as its machine numbers them ('3'; '0,1' under
                                      # torchrun): the device, not the kind of machine; '' on the CPU
    threads: int = 0                  # torch's CPU threads
    processes: int = 1                # torchrun's processes that trained the run together (DistributedDataParallel)
    python: str = ""
    compiled_graphs: int = 0          # torch.compile: graphs this run compiled (a cold kernel cache) ...
    cached_graphs: int = 0            # ... and graphs it loaded from the kernel cache
    code_md5: str = ""                # md5 over the code the run imported (pipeline runs)
    code_files: tuple[str, ...] = field(default=())
    losses: tuple[float, ...] = field(default=())     # every step's training-batch loss (spikes: the report)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "model": self.model.to_dict()}    # its changes as keys of their own

    @classmethod
    def from_dict(cls, d: Any, where: str = "run record") -> "RunRecord":
        """A run.json of this version, every field checked (typed.build): another version's is a one-line DataError."""
        return build(cls, d, where)
