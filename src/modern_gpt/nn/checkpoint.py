"""A trained model back from its run folder (data/runs/<slug>/<seed>/: model.pt and run.json)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..config import ModelConfig
from ..core.errors import DataError
from ..core.files import read_json
from ..records.run_record import RunRecord
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
    """The trained model of a pipeline run folder (data/runs/<slug>/<seed>/: model.pt + run.json)."""
    run_dir = Path(run_dir)
    record_path, weights = run_dir / "run.json", run_dir / "model.pt"
    for p in (record_path, weights):
        if not p.is_file():
            raise DataError(f"{p}: not found (a run folder holds model.pt and run.json)")
    cfg = RunRecord.from_dict(read_json(record_path), str(record_path)).model     # the one strict reader
    try:
        sd = torch.load(weights, map_location="cpu", weights_only=True)
    except Exception as e:                              # noqa: BLE001 - any unreadable file is one line
        raise DataError(f"{weights}: not a readable state dict ({type(e).__name__})") from None
    return load_into(cfg, sd, torch.float32)
