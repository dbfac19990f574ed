"""The families of stages (pipeline/families.py) are dvc.yaml's: each stanza spelled from the family's stage name,
slug and matrix, and walking the families over params.yaml gives exactly the stages DVC resolves."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from modern_gpt.pipeline.families import (AA, BEYOND, LOO, MAIN, RERUN, SCALE, SERVING, SETTLE, SWEEP, TRAINING,
                                         training_stage)

ROOT = Path(__file__).resolve().parents[1]
STAGES = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
RUN_PATHS = "--configs configs --data data/tokenized --out data/runs"       # every training stage's, and settle's
SERVE_PATHS = "--runs data/runs --data data/tokenized --out data/serve"


def spelled(family) -> str:
    """The family's slug as dvc.yaml writes it, each item as ${item.<name>}."""
    return family.slug(**{name: f"${{item.{name}}}" for name in family.items})


def matrix(family) -> dict:
    return {name: list(source) if isinstance(source, tuple) else f"${{{source}}}" for name, source in family.matrix}


@pytest.mark.parametrize("family", TRAINING, ids=lambda f: f.stage)
def test_each_training_familys_stanza_is_spelled_from_its_definition(family):
    stage, slug = STAGES[family.stage], spelled(family)
    assert stage["matrix"] == matrix(family)
    assert stage["cmd"] == f"${{launch}} stages/run.py {slug} ${{item.seed}} {RUN_PATHS}"
    assert stage["params"] == [{f"configs/{slug}.json": None}]
    assert stage["outs"] == [f"data/runs/{slug}/${{item.seed}}/model.pt", f"data/runs/{slug}/${{item.seed}}/run.json"]


@pytest.mark.parametrize("family", SERVING, ids=lambda f: f.stage)
def test_each_serve_familys_stanza_is_spelled_from_its_definition(family):
    stage, slug = STAGES[family.stage], spelled(family)
    assert stage["matrix"] == matrix(family)
    assert stage["cmd"] == f"python stages/serve.py {slug} {SERVE_PATHS}"
    assert stage["outs"] == [f"data/serve/{slug}.json"]
    assert f"data/runs/{slug}/${{serve.run_seed}}" in stage["deps"]


def test_the_stages_that_run_the_run_script_are_the_training_families_and_serve_the_serving_ones():
    cmd = {name: s.get("do", s)["cmd"] for name, s in STAGES.items()}       # settle: a foreach stage's `do`
    assert {name for name, c in cmd.items() if "stages/run.py" in c} == {f.stage for f in TRAINING} | {SETTLE}
    assert {name for name, c in cmd.items() if "stages/serve.py" in c} == {f.stage for f in SERVING}


def test_the_settle_stage_trains_each_added_run_in_its_rows_folder_as_the_run_stage_does():
    do, run = STAGES[SETTLE]["do"], STAGES["run"]
    assert STAGES[SETTLE]["foreach"] == "${settle.runs}"
    assert do["cmd"] == f"${{launch}} stages/run.py ${{item.slug}} ${{item.seed}} {RUN_PATHS}"
    assert do["params"] == [{"configs/${item.slug}.json": None}]
    assert do["deps"] == run["deps"]
    assert do["outs"] == [f"data/runs/${{item.slug}}/${{item.seed}}/{f}" for f in ("model.pt", "run.json")]
    runs = {"settle": {"runs": {"bias-5": {"slug": "bias", "seed": 5}}}}
    assert training_stage("bias", 5, runs) == "settle@bias-5"
    assert training_stage("bias", 4, runs) == "run@bias-4"


def every_family_on() -> dict:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["ablation"] |= {"aa_seeds": [10, 11], "leave_one_out": ["norm", "pos"], "rerun": ["baseline", "qk_norm"]}
    raw["beyond"]["ladder"] = ["mlp", "optimizer"]
    raw["sweep"] |= {"lr": [4, 0.5], "rows": ["qk_norm", "beyond_optimizer"], "seeds": [0, 1]}
    raw["scale"] = {"sizes": {"xs": {"n_layer": 2, "n_embd": 48, "n_head": 4}}}
    raw["seeds"] = [0, 1]
    return raw


def test_walking_the_families_over_params_gives_the_stages_dvc_resolves(tmp_path):
    raw = every_family_on()
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=tmp_path, check=True)
    listed = subprocess.run([sys.executable, "-m", "dvc", "stage", "list", "--name-only"], cwd=tmp_path, check=True,
                            capture_output=True, text=True).stdout.split()
    ours = [f.stage_name(**items) for f in (*TRAINING, *SERVING) for items in f.walk(raw)]
    assert [name for name in listed if name.split("@")[0] in {f.stage for f in (*TRAINING, *SERVING)}] == ours
    assert len(ours) == 7 * 2 + 2 + 2 * 2 + 2 * 2 + 2 * 2 * 2 + 2 * 2 + 7 * 2 + 7 + 2   # every family, every item


@pytest.mark.parametrize("family, items", [
    (MAIN, {"row": "qk_norm"}), (LOO, {"flag": "norm"}), (RERUN, {"row": "n_kv_head"}),
    (SWEEP, {"row": "beyond_optimizer", "lr": "0.5"}), (BEYOND, {"flag": "logit_softcap"}),
    (SCALE, {"size": "xs", "row": "n_kv_head"})])
def test_a_slug_reads_back_as_its_items_and_names_its_stage(family, items):
    slug = family.slug(**items)
    assert family.parse(slug) == items
    assert training_stage(slug, 3) == family.stage_name(**items, seed=3)
    assert all(other.parse(slug) is None for other in TRAINING if other.slug_format not in ("{row}",
                                                                                            family.slug_format))


def test_the_baselines_runs_are_aa_where_params_list_the_seed_for_the_aa_check():
    raw = every_family_on()
    assert training_stage("baseline", 10, raw) == AA.stage_name(row="baseline", seed=10) == "aa@baseline-10"
    assert training_stage("baseline", 1, raw) == "run@baseline-1"
    assert training_stage("baseline", 10) == "run@baseline-10"        # no params: the main family
