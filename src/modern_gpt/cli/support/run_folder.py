"""A run folder named on the command line (sample, export): a missing one is one line that says how to get it.
Not the runs themselves: those are trained through DVC (dvc_calls.py, shared_runs.py)."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import ConfigError, DataError
from ...pipeline.families import training_stage


def check_run(run_dir: str | Path) -> None:
    """Nothing when run_dir holds a trained run; otherwise a DataError that says what is missing and, for a
    pipeline path data/runs/<slug>/<seed>, how to train or pull it (a fresh clone has no weights)."""
    path = Path(run_dir)
    if path.is_dir() and any((path / name).exists() for name in ("run.json", "model.pt")):
        return                                        # a run, or half of one: load_run names the missing file
    parts = path.parts
    if len(parts) >= 3 and parts[-3] == "runs" and parts[-1].isdigit():
        stage = training_stage(parts[-2], int(parts[-1]), params_here())
        raise DataError(f"{path}: no trained run here (a clone has the report and configs/, not the weights): "
                        f"`dvc repro {stage}` trains it, or `dvc pull tokenize {stage}` fetches it and the "
                        "tokenizer from a DVC remote that holds the runs (docs/machines.md)")
    what = "no such folder" if not path.exists() else "not a run folder (a run folder holds model.pt and run.json)"
    raise DataError(f"{path}: {what}")



def params_here(path: str | Path = "params.yaml") -> dict:
    """The params.yaml in this folder (the clone the command runs in), as plain values, or {} (none, or unreadable:
    the stage name is then a guess). Not config.params.project_params, which reads the installed checkout's and
    stops on a bad one."""
    from ...config.params import read_yaml
    try:
        raw = read_yaml(path) if Path(path).is_file() else {}
    except ConfigError:
        return {}
    return raw if isinstance(raw, dict) else {}
