"""The training config: one typed field per knob, validated on construction (one-line errors). Torch-free.

Its defaults are the quick command's `--smoke` profile (cli/support/profiles.py, which also holds the command's CPU
recipe); the pipeline's profile is params.yaml's `train:` section.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from .choices import COMPILE_MODES, DEVICES, DTYPES, OPTIMIZERS
from .validate import check_choice, check_number, check_positive, check_types, from_dict


@dataclass(frozen=True)
class TrainConfig:
    iters: int = 200               # optimiser steps
    batch_size: int = 16           # sequences per step
    lr: float = 3e-3               # peak learning rate
    min_lr: float = 3e-4           # cosine decays to this
    warmup_iters: int = 20         # linear warm-up steps
    weight_decay: float = 0.1      # decoupled decay, matrices only (AdamW's, and Muon's)
    optimizer: str = "adamw"       # OPTIMIZERS: 'adamw' | 'muon' (Muon on the blocks' matrices, AdamW on the rest)
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0         # max global grad norm; 0 turns clipping off
    eval_interval: int = 50        # steps between points on the loss curve
    eval_iters: int = 8            # fixed batches per loss estimate
    device: str = "cpu"            # 'cpu' | 'cuda' | 'auto'
    compile: str = "none"          # 'none' (eager) or a torch.compile mode: 'default' | 'reduce-overhead' | 'max-autotune'
    dtype: str = "float32"         # 'bfloat16': matmuls under bf16 autocast (weights and optimiser stay fp32)
    init_perturbation: float = 0.0  # > 0: each initial weight times (1 + this x N(0, 1)); 1e-7 (float32 rounding)
                                    # stands in for a rerun on another machine (ablation.rerun)

    def __post_init__(self) -> None:
        check_types(self)
        check_positive(self, "iters", "batch_size", "eval_interval", "eval_iters")
        if self.warmup_iters < 0 or self.warmup_iters > self.iters:
            raise ConfigError(f"warmup_iters={self.warmup_iters}: must be between 0 and iters ({self.iters})")
        if not self.lr > 0 or not 0 <= self.min_lr <= self.lr:
            raise ConfigError(f"lr={self.lr}, min_lr={self.min_lr}: need lr > 0 and 0 <= min_lr <= lr")
        for name in ("weight_decay", "grad_clip"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)}: must be >= 0")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)}: must be in [0, 1)")
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("device", self.device, DEVICES)
        check_choice("compile", self.compile, COMPILE_MODES)
        check_choice("dtype", self.dtype, DTYPES)
        check_number("init_perturbation", self.init_perturbation, 0.0, 0.01)

    @classmethod
    def from_dict(cls, d: Any, where: str = "train") -> "TrainConfig":
        return from_dict(cls, d, where)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
