"""Adding a norm is its name in config/choices.py, one class and one table entry in nn/model.py, and a label in
the norm switch's declaration (changes/builtin.py). A change of a new kind is one file: tests/test_changes.py.

DyT (Dynamic Tanh, Zhu et al. 2025: y = w · tanh(a · x) + b, no statistics) is added here, in the test, and
a row with it goes through the pipeline's own stage scripts, in process: tokenize → plan → run → serve → report.
"""

import runpy
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import yaml

from conftest import toy_text
from modern_gpt.config import choices
from modern_gpt.config.params import read_yaml
from modern_gpt.nn import model
from modern_gpt.changes.builtin import declared

ROOT = Path(__file__).resolve().parents[1]


class DyT(nn.Module):
    inits = {"alpha": 0.5, "weight": "ones", "bias": "zeros"}     # its parameters' init (the model's rule reads it)

    def __init__(self, dim: int, alpha: float = 0.5):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(alpha))
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * torch.tanh(self.alpha * x) + self.bias


# each stage script's arguments as dvc.yaml's command gives them, but a matrix's items (${item.row}, ...)
COMMANDS: dict[str, list[str]] = {}
for _cmd in (s.get("cmd", "") for s in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].values()):
    if _cmd:
        COMMANDS.setdefault(_cmd.split()[1], [a for a in _cmd.split()[2:] if "${" not in a])


def stage(name: str, *items: str) -> None:
    """stages/<name>.py run here, with a matrix stage's `items` (its row and seed) and dvc.yaml's other arguments."""
    argv = sys.argv
    sys.argv = [str(ROOT / "stages" / f"{name}.py"), *items, *COMMANDS[f"stages/{name}.py"]]
    try:
        runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="__main__")
    finally:
        sys.argv = argv


def test_a_new_norm_is_one_name_one_class_one_entry_and_a_label(tmp_path, monkeypatch):
    monkeypatch.setattr(choices, "NORMS", (*choices.NORMS, "dyt"))                   # the name
    monkeypatch.setattr("modern_gpt.config.model.NORMS", choices.NORMS)               # (as config/model.py sees it)
    monkeypatch.setitem(model.NORMS, "dyt", lambda dim, cfg: DyT(dim))               # the class's table entry
    monkeypatch.setitem(declared("norm").labels, "dyt", "DyT")                       # the label, in its declaration
    choices.registered("norm", choices.NORMS, model.NORMS)                          # the import-time check holds

    (tmp_path / "corpus.txt").write_text(toy_text(6000), encoding="utf-8")
    params = read_yaml(ROOT / "params.yaml")
    params.update(data={"corpus": "corpus.txt", "val_fraction": 0.1}, ladder=["baseline", "norm"], seeds=[0, 1],
                  settle={"looks": [], "scale_cap": None, "runs": {}},
                  sweep={"lr": [], "rows": [], "seeds": []})
    params["model"].update(n_layer=1, n_embd=32, block_size=16, norm="dyt")
    params["baseline"] = {"norm": "layernorm"}                   # the baseline differs in the norm alone
    params["train"].update(iters=6, batch_size=4, warmup_iters=1, eval_interval=3, eval_iters=2)
    params["serve"].update(prompt_tokens=4, new_tokens=4, repeats=1, batch=1)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    monkeypatch.chdir(tmp_path)

    stage("tokenize_corpus")
    stage("plan")
    for row in ("baseline", "norm"):
        for seed in ("0", "1"):
            stage("run", row, seed)
        stage("serve", row)
    (tmp_path / "data" / "generated").mkdir(parents=True)
    stage("report")
    text = (tmp_path / "reports" / "ablation.md").read_text()
    assert "+ DyT" in text
    state = torch.load(tmp_path / "data/runs/norm/0/model.pt")
    assert any(k.endswith(".alpha") for k in state)                                # DyT's own parameter trained
    assert not any(k.endswith(".alpha") for k in torch.load(tmp_path / "data/runs/baseline/0/model.pt"))


def test_a_name_without_its_module_fails_at_import():
    with pytest.raises(TypeError, match="dyt"):
        choices.registered("norm", (*choices.NORMS, "dyt"), dict(model.NORMS))
