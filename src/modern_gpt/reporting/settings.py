"""The report's settings: params.yaml's `report:` section (config.sections.ReportConfig) and the corpus facts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..config.sections import PARSERS, ReportConfig


@dataclass(frozen=True)
class Settings(ReportConfig):
    """The `report:` thresholds, and what the report needs to know of the corpus."""
    train_chars_per_token: float = 1.0
    val_chars_per_token: float = 1.0
    floor: float | None = None      # nats per character: the corpus process's entropy, when known

    @property
    def floor_per_token(self) -> float | None:
        """The floor in the losses' unit, nats per validation token: the table's floor row, the curves' line and
        the scale page's measure r all read it here."""
        return self.floor * self.val_chars_per_token if self.floor is not None else None


def report_settings(raw: Any, **corpus: Any) -> Settings:
    """Settings from params.yaml's `report:` (every key optional) and the corpus facts given as keywords."""
    return Settings(**asdict(PARSERS["report"](raw, "report")), **corpus)
