"""The model. Everything a training run computes with lives here or in training/; its config is config/'s."""

from .model import GPT

__all__ = ["GPT"]
