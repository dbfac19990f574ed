"""The report's settings: params.yaml's `report:` section (config.sections.ReportConfig) and the corpus facts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..config.sections import ReportConfig, section


@dataclass(frozen=True)
class Settings(ReportConfig):
    """The `report:` thresholds, and what the report needs to know of the corpus."""
    train_chars_per_token: float = 1.0
    val_chars_per_token: float = 1.0
    floor: float | None = None      # nats per character: the corpus process's entropy, when known


def report_settings(raw: Any, **corpus: Any) -> Settings:
    """Settings from params.yaml's `report:` (every key optional) and the corpus facts given as keywords."""
    return Settings(**asdict(section(ReportConfig, raw, "report")), **corpus)
