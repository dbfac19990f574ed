"""The typed settings, torch-free: what a run, a stage and the report are configured with.

`ModelConfig` and `TrainConfig` (model.py, train.py), the names their switches accept (choices.py), and
one validation mechanism (validate.py) whose errors are one line naming `section.key`. Nothing here
imports torch, so the report and the pipeline side read typed configs without it.
"""

from .model import ModelConfig
from .train import TrainConfig

__all__ = ["ModelConfig", "TrainConfig"]
