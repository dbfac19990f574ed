"""A trained model back from its run folder (data/runs/<row>/<seed>/: model.pt and run.json)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..config import ModelConfig
from ..core.errors import DataError
from .model import GPT


def load_into(cfg: ModelConfig, sd: dict[str, torch.Tensor], dtype: torch.dtype) -> GPT:
    """A GPT of `cfg` holding the state dict `sd`; weights of another shape are a one-line error."""
    model = GPT(cfg).to(dtype)
    try:
        model.load_state_dict(sd, strict=True)
    except RuntimeError as e:
        raise DataError(f"weights do not fit the config: {str(e).splitlines()[0]}") from None
    return model.eval()


def load_run(run_dir: str | Path) -> GPT:
    """The trained model of a pipeline run folder (data/runs/<row>/<seed>/: model.pt + run.json)."""
    run_dir = Path(run_dir)
    record_path, weights = run_dir / "run.json", run_dir / "model.pt"
    for p in (record_path, weights):
        if not p.is_file():
            raise DataError(f"{p}: not found (a run folder holds model.pt and run.json)")
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"{record_path}: not readable JSON ({e})") from None
    if not isinstance(record, dict) or "model" not in record:
        raise DataError(f"{record_path}: no 'model' key (the run's ModelConfig)")
    cfg = ModelConfig.from_dict(record["model"], where=f"{record_path}: model")
    try:
        sd = torch.load(weights, map_location="cpu", weights_only=True)
    except Exception as e:                              # noqa: BLE001 - any unreadable file is one line
        raise DataError(f"{weights}: not a readable state dict ({type(e).__name__})") from None
    return load_into(cfg, sd, torch.float32)
