"""params.yaml's model: and baseline:, typed as they are given: ModelConfig's fields (vocab_size aside, the
tokenizer's), each section checked on parsing, and a row's ModelConfig built from them once the vocabulary is known.

They stay as given, not resolved, because a null means "follow the shape": model.head_dim null is n_embd / n_head
at whatever shape a row trains (a size of scale:, the quick command's profile), and baseline.n_kv_head null is one
K/V head per query head. A ModelConfig resolves both on construction, so it is built only at the end (`config`).
No run imports this file: a run reads its own resolved config (configs/<slug>.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from .. import changes as registry
from ..core.errors import ConfigError
from .model import ModelConfig, model_keys
from .validate import check_keys

def _mapping(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be a mapping, got {raw!r}")
    check_keys(raw, where, [k for k in model_keys() if k != "vocab_size"])
    return dict(raw)


@dataclass(frozen=True)
class ModelSection:
    """model: the design under study, as given (a key left out takes ModelConfig's default)."""
    given: Mapping[str, Any]

    @classmethod
    def parse(cls, raw: Any, where: str = "model") -> "ModelSection":
        section = cls(MappingProxyType(_mapping(raw, where)))
        section.config(1, where)                                   # types and values now
        return section

    def replace(self, **changes: Any) -> "ModelSection":
        """The section with some fields given otherwise (a size's or a profile's shape)."""
        return ModelSection(MappingProxyType({**self.given, **_mapping(changes, "model")}))

    def config(self, vocab_size: int, where: str = "model") -> ModelConfig:
        return ModelConfig.from_dict({**self.given, "vocab_size": vocab_size}, where)

    @property
    def block_size(self) -> int:
        """The context length, ModelConfig's default where left out (the tokenize stage parses model:'s block_size
        alone, its only setting of model:, and reads it here)."""
        return self.config(1).block_size


@dataclass(frozen=True)
class Baseline:
    """baseline: the Step 1 values of the ablation flags, overrides of model: at its shape (n_kv_head null: one K/V
    head per query head). A change of a new kind is off in it unless it says otherwise (its default: the design
    without it), so `model.<change>: true` and the change's name at the end of `ladder:` make it a row."""
    overrides: Mapping[str, Any]

    @classmethod
    def parse(cls, raw: Any, where: str = "baseline") -> "Baseline":
        return cls(MappingProxyType(_mapping(raw, where)))

    def replace(self, **changes: Any) -> "Baseline":
        return Baseline(MappingProxyType({**self.overrides, **_mapping(changes, "baseline")}))

    def config(self, model: ModelSection, vocab_size: int) -> ModelConfig:
        """The baseline row's config on `model`."""
        plugged = set(registry.plugged_names()) - set(self.overrides)     # the 2017 design has no change of yours
        base = {**{k: v for k, v in model.given.items() if k not in plugged}, **self.overrides, "vocab_size": vocab_size}
        if base.get("n_kv_head") is None:
            base["n_kv_head"] = model.config(vocab_size).n_head
        return ModelConfig.from_dict(base, "baseline")
