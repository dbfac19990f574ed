"""End to end: the real `dvc` on a copy of this project in a temporary git repo, at smoke size."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from modern_gpt.params import read_yaml

ROOT = Path(__file__).resolve().parents[1]
DVC = [sys.executable, "-m", "dvc"]
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t", "DVC_NO_ANALYTICS": "1", "PYTHONPATH": "",
       # the stages run `python`: make it this interpreter, activated environment or not
       "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
LABELS = ["Step 1 baseline", "+ RMSNorm", "+ RoPE", "+ SwiGLU", "+ no bias", "+ GQA (kv=2)", "+ QK-norm"]
COLUMNS = ["#", "variant", "params", "Δ params", "train", "val", "bpc", "Δ val", "spread", "95% CI of Δ",
           "verdict", "secs"]

SMOKE = {
    "generate": {"chars": 30000, "seed": 0},
    "model": {"n_layer": 1, "n_embd": 32, "block_size": 16},
    "seeds": [0, 1],
    "train": {"iters": 20, "batch_size": 8, "warmup_iters": 2, "eval_interval": 10, "eval_iters": 2},
}


def sh(args, cwd, check=True):
    out = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900)
    if check and out.returncode:
        raise AssertionError(f"{args} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def project_copy(tmp: Path, **overrides) -> Path:
    """The tracked and untracked-but-not-ignored files of this checkout, in a fresh git repo."""
    repo = tmp / "project"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    skip = ("data/", "reports/", "configs/", "dvc.lock")
    for f in files:
        if f.startswith(skip) or not (ROOT / f).is_file():
            continue
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, repo / f)
    params = read_yaml(repo / "params.yaml")
    for section, values in {**SMOKE, **overrides}.items():
        params[section] = {**params[section], **values} if isinstance(values, dict) else values
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    sh(["git", "init", "-q"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "smoke"], repo)
    return repo


def report_rows(repo: Path) -> list[list[str]]:
    lines = (repo / "reports" / "ablation.md").read_text().splitlines()
    table = [line for line in lines if line.startswith("|") and "---" not in line]
    head = next(i for i, line in enumerate(table) if line.replace(" ", "").startswith("|#|"))
    return [[c.strip() for c in line.strip("|").split("|")] for line in table[head:]]


def commit(repo: Path, message: str) -> None:
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", message], repo)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = project_copy(tmp_path_factory.mktemp("e2e"))
    out = sh([*DVC, "repro"], repo)
    runs = {f"{stage}@{row}-{seed}" for stage in ("train", "evaluate") for row in
            ("norm", "pos", "mlp", "bias", "n_kv_head", "qk_norm") for seed in (0, 1)}
    runs |= {f"{stage}_baseline@{seed}" for stage in ("train", "evaluate") for seed in (0, 1)}
    assert ran(out.stdout) == runs | {"generate", "tokenize", "plan", "report"}
    commit(repo, "repro")
    return repo


def test_repro_writes_the_report_with_every_row_and_column(repo):
    rows = report_rows(repo)
    assert rows[0] == COLUMNS
    assert [r[1] for r in rows[1:]] == [*LABELS, "floor (entropy of the corpus process)"]
    for r in rows[1:8]:
        assert r[2].endswith("M") and " ± " in r[5]                # params, val mean ± sd over 2 seeds
    assert all(r[10].startswith(("**better**", "**worse**", "noise")) for r in rows[2:8])
    text = (repo / "reports" / "ablation.md").read_text()
    for key in ("corpus", "md5", "tokenizer", "model shape", "seeds", "training code", "torch", "DVC", "device"):
        assert key in text
    assert "![validation loss" in text and (repo / "reports" / "val_curves.png").stat().st_size > 1000
    metrics = json.loads((repo / "reports" / "metrics.json").read_text())
    assert list(metrics) == ["baseline", "norm", "pos", "mlp", "bias", "n_kv_head", "qk_norm"]
    assert all(m["n"] == 2 and m["val_mean"] > 0 for m in metrics.values())


def test_second_repro_runs_nothing_and_the_report_is_byte_identical(repo):
    before = (repo / "reports" / "ablation.md").read_bytes()
    out = sh([*DVC, "repro"], repo)
    assert ran(out.stdout) == set() and "Data and pipelines are up to date" in out.stdout
    assert (repo / "reports" / "ablation.md").read_bytes() == before


def test_new_kv_heads_retrain_only_the_gqa_row_and_those_after_it(repo):
    out = sh([*DVC, "exp", "run", "-S", "model.n_kv_head=1"], repo)
    retrained = {s for s in ran(out.stdout) if s.startswith(("train", "evaluate"))}
    assert retrained == {f"{stage}@{row}-{seed}" for stage in ("train", "evaluate")
                         for row in ("n_kv_head", "qk_norm") for seed in (0, 1)}
    assert [r[1] for r in report_rows(repo)][6] == "+ MQA (kv=1)"

    # going back to the committed params restores every result from the run-cache: no training
    sh(["git", "checkout", "params.yaml"], repo)
    out = sh([*DVC, "repro"], repo)
    assert not {s for s in ran(out.stdout) if s.startswith(("train", "evaluate"))}
    assert "is cached - skipping run" in out.stdout
    assert [r[1] for r in report_rows(repo)][6] == "+ GQA (kv=2)"
    assert sh(["git", "status", "--porcelain", "reports"], repo).stdout == ""   # the committed report again


def test_a_new_seed_trains_only_its_runs_and_a_shrunk_list_leaves_no_stale_run(repo):
    out = sh([*DVC, "exp", "run", "-S", "seeds=[0,1,2]"], repo)
    assert {s for s in ran(out.stdout) if s.startswith(("train", "evaluate"))} == {
        s for s in ran(out.stdout) if s.endswith("-2") or s.endswith("@2")} and len(ran(out.stdout)) == 16
    assert all(m["n"] == 3 for m in json.loads((repo / "reports" / "metrics.json").read_text()).values())
    out = sh([*DVC, "exp", "run", "-S", "seeds=[1]"], repo)
    assert ran(out.stdout) == {"plan", "report"}
    assert all(m["n"] == 1 for m in json.loads((repo / "reports" / "metrics.json").read_text()).values())
    assert "n/a (1 seed)" in (repo / "reports" / "ablation.md").read_text()
    assert sorted(p.name for p in (repo / "data" / "results" / "norm").iterdir()) == ["1.json"]   # no stale run
    sh(["git", "checkout", "params.yaml"], repo)
    sh([*DVC, "repro"], repo)


def changed_stages(repo: Path) -> set[str]:
    return set(json.loads(sh([*DVC, "status", "--json"], repo).stdout))


def test_report_code_reruns_only_the_report_and_model_code_reruns_training(repo):
    report_py = repo / "src" / "modern_gpt" / "report.py"
    report_py.write_text(report_py.read_text() + "\n# an edit\n")
    assert changed_stages(repo) == {"report"}
    out = sh([*DVC, "repro"], repo)
    assert ran(out.stdout) == {"report"}
    sh(["git", "checkout", "src"], repo)
    model_py = repo / "src" / "modern_gpt" / "model.py"
    model_py.write_text(model_py.read_text() + "\n# an edit\n")
    changed = changed_stages(repo)
    assert {s for s in changed if s.startswith("train")} == {
        f"train@{r}-{s}" for r in ("norm", "pos", "mlp", "bias", "n_kv_head", "qk_norm") for s in (0, 1)
    } | {"train_baseline@0", "train_baseline@1"}
    assert not {"generate", "tokenize"} & changed          # (plan imports the model, to match parameters)
    sh(["git", "checkout", "src"], repo)
    sh([*DVC, "repro"], repo)


def test_a_bad_param_stops_with_one_line_and_changes_nothing(repo):
    before = (repo / "reports" / "ablation.md").read_bytes()
    out = sh([*DVC, "exp", "run", "-S", "model.bias=no"], repo, check=False)
    assert out.returncode != 0
    assert "error: model.bias='no': must be true or false" in out.stderr + out.stdout
    assert "Traceback" not in out.stderr + out.stdout
    assert (repo / "reports" / "ablation.md").read_bytes() == before
    sh(["git", "checkout", "params.yaml"], repo)


# A smaller ladder with the optional rows switched on: the A/A copy and leave-one-out.
OPTIONS = {
    "baseline": {"norm": "layernorm", "pos": "rope", "mlp": "swiglu", "bias": False, "n_kv_head": 2, "qk_norm": False},
    "ladder": ["norm", "qk_norm"],
    "ablation": {"match_params": False, "aa_seeds": [5, 6], "leave_one_out": ["qk_norm"]},
}


@pytest.fixture(scope="module")
def options_repo(tmp_path_factory):
    repo = project_copy(tmp_path_factory.mktemp("options"), **OPTIONS)
    out = sh([*DVC, "repro"], repo)
    assert {"train_aa@5", "train_aa@6", "train_loo@qk_norm-0", "train_loo@qk_norm-1", "evaluate_loo@qk_norm-1"} <= ran(out.stdout)
    commit(repo, "repro")
    return repo


def test_aa_and_leave_one_out_run_end_to_end(options_repo):
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "## A/A check" in text and "seeds 5, 6" in text
    assert "## Leave one out" in text and "| − QK-norm" in text
    configs = {p.name for p in (options_repo / "configs").glob("*.json")}
    assert configs == {"baseline.json", "norm.json", "qk_norm.json", "loo_qk_norm.json"}
    loo = json.loads((options_repo / "configs" / "loo_qk_norm.json").read_text())["model"]
    assert loo["qk_norm"] is False and loo["norm"] == "rmsnorm"               # full model, one change reverted
    csv = (options_repo / "reports" / "ablation.csv").read_text()
    assert "\naa," in csv and "\nloo_qk_norm," in csv


@pytest.mark.parametrize("tokenizer", [["tokenizer.kind=akshara"], ["tokenizer.kind=bpe", "tokenizer.vocab_size=300"]],
                         ids=["akshara", "bpe"])
def test_each_tokenizer_runs_end_to_end_and_reports_bits_per_character(options_repo, tokenizer):
    sets = [*tokenizer, "seeds=[0]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]", "ablation.match_params=true"]
    sh([*DVC, "exp", "run", *[a for s in sets for a in ("-S", s)]], options_repo)
    meta = json.loads((options_repo / "data" / "tokenized" / "meta.json").read_text())
    kind = tokenizer[0].split("=")[1]
    assert meta["tokenizer"] == kind and meta["val"]["tokens"] < meta["val"]["chars"]
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert f"| tokenizer | {kind}, vocabulary" in re.sub(" +", " ", text)
    rows = report_rows(options_repo)
    bpc = [float(r[6]) for r in rows[1:4]]
    assert all(0.5 < b < 8 for b in bpc)
    assert "parameter matching" in text                                        # match_params on: sized MLPs
    assert json.loads((options_repo / "configs" / "qk_norm.json").read_text())["model"]["mlp_hidden"] > 0
    sh(["git", "checkout", "params.yaml"], options_repo)


def test_char_tokenizer_reports_bpc_as_loss_over_ln2(repo):
    row = report_rows(repo)[1]
    val, bpc = float(row[5].split(" ± ")[0]), float(row[6])
    assert bpc == pytest.approx(val / 0.6931471805599453, abs=2e-3)


def test_a_users_corpus_folder_from_params(options_repo):
    mine = options_repo / "data" / "mine"
    mine.mkdir()
    a, b = "नरः वनम् गच्छति ।\n" * 400, "सीता फलम् खादति ।\n" * 400
    (mine / "a.txt").write_text(a, encoding="utf-8")
    (mine / "b.txt").write_text(b, encoding="utf-8")
    sets = ["data.corpus=data/mine", "seeds=[0]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"]
    sh([*DVC, "exp", "run", *[a for s in sets for a in ("-S", s)]], options_repo)
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "`data/mine`" in text and "floor" not in text                    # the floor is the generator's only
    assert json.loads((options_repo / "data" / "tokenized" / "meta.json").read_text())["corpus"]["chars"] == len(a + "\n" + b)
    sh(["git", "checkout", "params.yaml"], options_repo)
    out = sh([*DVC, "exp", "run", "-S", "data.corpus=data/missing.txt"], options_repo, check=False)
    assert out.returncode != 0 and "data/missing.txt" in out.stderr and "Traceback" not in out.stderr
    sh(["git", "checkout", "params.yaml"], options_repo)
