"""The committed dvc.lock and reports/ belong to the committed code, data and params.

Whoever changes model, training, data or params code must run `dvc repro` and commit the new
dvc.lock and reports/ with it. Outputs missing from a clean clone (DVC's cache is not in git) are
fine; a changed source file, param, command, or a hand-edited committed output is not.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def produced_paths() -> list[str]:
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text())
    return [out["path"] for stage in lock["stages"].values() for out in stage.get("outs", [])]


def is_produced(path: str, outs: list[str]) -> bool:
    """An output of some stage, inside one, or a folder holding some (checked at their own stages)."""
    return any(path == o or path.startswith(o + "/") or o.startswith(path + "/") for o in outs)


def stale(status: dict, outs: list[str]) -> list[str]:
    problems = []
    for stage, changes in status.items():
        for change in changes:
            if not isinstance(change, dict):
                problems.append(f"{stage}: {change}")                      # e.g. changed command
                continue
            for kind, items in change.items():
                for path, state in items.items():
                    if isinstance(state, dict):                            # a params file
                        problems.append(f"{stage}: params {path} {state}")
                    elif kind == "changed deps" and not is_produced(path, outs):
                        problems.append(f"{stage}: {path} {state}")
                    elif kind == "changed outs" and state == "modified":
                        problems.append(f"{stage}: output {path} was edited")
    return problems


def test_lock_and_reports_match_the_code_data_and_params():
    out = subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "DVC_NO_ANALYTICS": "1"}, timeout=300)
    assert out.returncode == 0, out.stderr
    problems = stale(json.loads(out.stdout or "{}"), produced_paths())
    assert not problems, "dvc.lock is stale; run `dvc repro` and commit dvc.lock and reports/:\n" + "\n".join(problems)


def test_the_staleness_rule_itself():
    outs = ["data/tokenized", "data/runs/a/0/model.pt", "reports/ablation.md"]
    clean_clone = {
        "tokenize": [{"changed outs": {"data/tokenized": "not in cache"}}],
        "train@a-0": [{"changed deps": {"data/tokenized/train.bin": "deleted"}},
                      {"changed outs": {"data/runs/a/0/model.pt": "not in cache"}}],
        "report": [{"changed deps": {"data/runs": "modified"}}],
    }
    assert stale(clean_clone, outs) == []
    assert stale({"train@a-0": [{"changed deps": {"src/modern_gpt/model.py": "modified"}}]}, outs)
    assert stale({"plan": [{"changed deps": {"params.yaml": {"model": "modified"}}}]}, outs)
    assert stale({"report": [{"changed outs": {"reports/ablation.md": "modified"}}]}, outs)
    assert stale({"train@a-0": ["changed command"]}, outs)
