"""The report's section of params.yaml (thresholds of the verdicts and warnings), and the corpus facts it needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from ..config.validate import check_keys, check_number
from .stats import BAND

SPIKE = 0.5    # nats; chosen on the bundled corpus (README: "Learning rate")

# key: (default, low, high): each a number in [low, high)
REPORT: dict[str, tuple[float, float, float]] = {
    "confidence": (0.95, 0.5, 1.0),          # of the paired t interval behind each verdict
    "borderline": (BAND, 0.0, 10.0),          # the band around both thresholds, in pooled seed sds
    "memorised_below": (0.2, 0.0, math.inf),  # nats per character: train and val both below this = memorised
    "overfit_rise": (0.02, 0.0, math.inf),    # val loss ending this fraction above its minimum = overfitting
    "param_tolerance": (0.05, 0.0, math.inf),  # non-embedding params differing by more than this are marked
    "spike_threshold": (SPIKE, 0.0, math.inf),  # nats above the running minimum of the training loss: a spike
    "serving_budget_gib": (16.0, 1e-6, math.inf),  # memory for weights + KV caches: how many sequences fit
}


@dataclass(frozen=True)
class Settings:
    confidence: float = 0.95
    borderline: float = BAND        # a margin within +- this x the pooled seed sd reads borderline
    memorised_below: float = 0.2    # nats per character, train and val both
    overfit_rise: float = 0.02      # final val above the curve's minimum, as a fraction
    param_tolerance: float = 0.05   # non-embedding params, as a fraction of the compared row's
    spike_threshold: float = SPIKE  # a step's training loss this far above the lowest before it: a spike
    serving_budget_gib: float = 16.0  # GiB for one copy of the weights and the sequences' KV caches
    train_chars_per_token: float = 1.0
    val_chars_per_token: float = 1.0
    floor: float | None = None      # nats per character: the corpus process's entropy, when known


def report_settings(section: Any, **corpus: Any) -> Settings:
    """Settings from params.yaml's `report:` (every key optional) and the corpus facts given as keywords."""
    section = {} if section is None else section
    if not isinstance(section, dict):
        raise ConfigError(f"report: must be a mapping, got {section!r}")
    check_keys(section, "report", list(REPORT))
    values = {}
    for key, (default, low, high) in REPORT.items():
        v = section.get(key, default)
        check_number(f"report.{key}", v, low, high)
        values[key] = float(v)
    return Settings(**values, **corpus)
