"""The model and its config. Everything a training run computes with lives here or in training/."""

from .config import ModelConfig
from .model import GPT

__all__ = ["GPT", "ModelConfig"]
