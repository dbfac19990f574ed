"""End to end, what reruns: the real `dvc` on a copy of this project in a temporary git repo, at smoke size. The
dependency graph tried as a contributor would: edit a folder or a param, ask `dvc status` what would rerun, and
rerun it; a bad param or corpus stops before anything trains; each stage reads only what it declares; launch's
torchrun trains what one process trained."""

import json
import shutil
import sys

import pytest
import yaml

from e2e import DVC, OPTION_SERVE, OPTIONS, ROOT, RUNS, SERVE, edit, ran, report_rows, repro_with, sh, status
from modern_gpt.config.params import read_yaml

pytestmark = pytest.mark.slow


@pytest.mark.light
def test_rewording_a_label_retrains_nothing(repo):
    labels = repo / "src" / "modern_gpt" / "changes" / "builtin.py"           # the switches' declarations
    text = labels.read_text()
    assert ': "RMSNorm",' in text
    labels.write_text(text.replace(': "RMSNorm",', ': "RMS norm",'))
    assert status(repo) == {"plan"}
    out = sh([*DVC, "repro"], repo)
    assert ran(out.stdout) == {"plan", "report"}
    assert report_rows(repo)[1]["variant"] == "+ RMS norm"


@pytest.mark.light
def test_an_edit_under_reporting_reruns_only_the_report(repo):
    edit(repo / "src" / "modern_gpt" / "reporting" / "pages.py")
    assert status(repo) == {"report"}
    assert ran(sh([*DVC, "repro"], repo).stdout) == {"report"}


CORPUS, REPORT = {"generate", "tokenize"}, {"report"}


# For each folder of src/modern_gpt/, a file in it and the stages an edit there reruns, as `dvc status` says.
# Runs depend on the files they import, file by file: code no run imports (params reading, planning, labels,
# checkpoint loading, the report) retrains nothing.
EDITS = [
    ("config/model.py", CORPUS | {"plan"} | RUNS | SERVE | REPORT),   # every stage reads typed configs
    ("changes/__init__.py", CORPUS | {"plan"} | RUNS | SERVE | REPORT),   # typed configs know changes by it
    ("changes/builtin.py", {"plan"}),                                 # the switches' declarations and labels
    ("changes/parallel_block.py", {"plan"}),                          # a change no row of the ladder uses
    ("config/sections.py", CORPUS | {"plan"} | SERVE | REPORT),       # the other sections' checks: no run
    ("records/run_record.py", {"plan"} | RUNS | SERVE | REPORT),             # runs write records; the corpus stages no
    ("config/params.py", CORPUS | {"plan"} | SERVE | REPORT),         # params reading: no run imports it
    ("core/files.py", CORPUS | {"plan"} | RUNS | SERVE | REPORT),     # every stage reads and writes files
    ("corpus/tokenizers.py", CORPUS | SERVE),                         # serve decodes its samples
    ("hf/arch.py", set()),                                           # the bridge, a tool: no stage imports it
    ("nn/model.py", {"plan"} | RUNS | SERVE),                          # plan sizes MLPs with the model
    ("nn/checkpoint.py", {"plan"} | SERVE),                           # loading weights: no run imports it
    ("pipeline/labels.py", {"plan"}),
    ("reporting/pages.py", REPORT),
    ("serving/generate.py", SERVE | REPORT),                          # the report formats with serving's units
    ("training/evaluate.py", RUNS | SERVE),                           # evaluation is part of every run
    ("training/batched.py", SERVE),                                   # seeds batched: the quick command's, no run's
    ("cli/ablate.py", set()),                                         # the quick command: no stage imports it
    ("bench/training.py", set()),                                     # the bench, a tool: no stage imports it
    ("review/diff.py", set()),                                        # the review, a tool: no stage imports it
    ("settling/looks.py", {"plan"} | REPORT),                         # the looks: the plan asks, the report judges
    ("stats/paired.py", {"plan"} | REPORT),                           # the rule: the plan checks the levels, the report judges
]


@pytest.mark.light
def test_each_folder_of_the_package_reruns_the_stages_it_should(repo):
    assert {path.split("/")[0] for path, _ in EDITS} == {
        p.name for p in (ROOT / "src" / "modern_gpt").iterdir() if p.is_dir() and p.name != "__pycache__"}
    for path, stages in EDITS:
        file = repo / "src" / "modern_gpt" / path
        text = file.read_text()
        edit(file)
        assert status(repo) == stages, path
        file.write_text(text)                                          # undone: nothing to rerun again
        assert status(repo) == set(), path


@pytest.mark.light
@pytest.mark.parametrize("setting, stages", [
    ("generate.seed=1", {"generate", "plan"}),                 # plan checks every setting: it reads them all
    ("data.val_fraction=0.2", {"tokenize", "plan"}),
    ("tokenizer.kind=akshara", {"tokenize", "plan"}),
    ("report.confidence=0.9", {"report", "plan"}),
    ("report.overfit_rise=0.5", {"report", "plan"}),
    ("train.iters=21", {"plan"}),
    ("ablation.match_params=true", {"plan"}),
    ("sweep.lr=[4,8]", {"plan", "sweep@qk_norm-8-0", "sweep@qk_norm-8-1"}),   # and the new rate's runs
    ("report.spike_threshold=0.3", {"report", "plan"}),
    ("serve.top_k=5", SERVE | {"plan"}),
])
def test_a_params_change_is_seen_by_the_stage_that_reads_it(repo, setting, stages):
    section, value = setting.split("=")
    params = read_yaml(repo / "params.yaml")
    top, key = section.split(".")
    params[top][key] = yaml.safe_load(value)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert status(repo) == stages


@pytest.mark.light
def test_a_train_change_retrains_every_run_through_the_plan(repo):
    """Every run's config changes, so every run retrains; so does the report, which reads each run's config for
    its md5 in reports/runs.csv."""
    sh([*DVC, "exp", "run", "-S", "train.min_lr=0.0001", "plan"], repo)
    assert status(repo) == RUNS | {"report"}


def test_a_new_seed_trains_only_its_runs_and_a_shrunk_list_reads_only_its_runs(options_repo):
    """On the options build's three rows (A/A and leave-one-out off: they have seeds of their own)."""
    rows = OPTIONS["ladder"]
    out = repro_with(options_repo, ["seeds=[0,1,2]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"])
    assert {s for s in ran(out.stdout) if s.startswith("run@")} == {f"run@{row}-2" for row in rows}
    metrics = json.loads((options_repo / "reports" / "metrics.json").read_text())
    assert all(m["n"] == 3 for m in metrics.values())
    out = repro_with(options_repo, ["seeds=[1]", "sweep.seeds=[1]", "serve.run_seed=1"])
    assert ran(out.stdout) == OPTION_SERVE | {"plan", "report"}      # serve: each row's run of seed 1 now
    assert all(m["n"] == 1 for m in json.loads((options_repo / "reports" / "metrics.json").read_text()).values())
    assert "n/a (1 seed)" in (options_repo / "reports" / "ablation.md").read_text()
    # the report reads the runs the plan lists, never a glob: a stray run on disk changes nothing it prints
    stray = options_repo / "data" / "runs" / "norm" / "7"
    shutil.copytree(options_repo / "data" / "runs" / "norm" / "1", stray)
    assert ran(sh([*DVC, "repro"], options_repo).stdout) == {"report"}
    assert all(m["n"] == 1 for m in json.loads((options_repo / "reports" / "metrics.json").read_text()).values())


@pytest.mark.light
def test_a_bad_param_stops_with_one_line_and_changes_nothing(repo):
    before = (repo / "reports" / "ablation.md").read_bytes()
    out = sh([*DVC, "exp", "run", "-S", "model.bias=no"], repo, check=False)
    assert out.returncode != 0
    assert "error: model.bias='no': must be true or false" in out.stderr + out.stdout
    assert "Traceback" not in out.stderr + out.stdout
    assert (repo / "reports" / "ablation.md").read_bytes() == before


@pytest.mark.light
@pytest.mark.parametrize("change, message", [
    ({"trian": {"iters": 5}}, "params.trian: unknown section; allowed are generate, data, tokenizer"),
    ({"seeds": []}, "seeds: give at least one seed"),
    ({"report": {"confidence": 95}}, "report.confidence=95: must be a number in [0.5, 1.0)"),
])
def test_every_setting_is_checked_by_plan_before_anything_trains(repo, change, message):
    params = read_yaml(repo / "params.yaml")
    (repo / "params.yaml").write_text(yaml.safe_dump({**params, **change}, sort_keys=False))
    out = sh([*DVC, "repro"], repo, check=False)
    assert out.returncode != 0 and message in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr and "Could not find" not in out.stdout + out.stderr
    assert not {s for s in ran(out.stdout) if s.startswith(("run@", "sweep@", "serve@"))}


@pytest.mark.light
def test_tokenize_refuses_a_split_too_short_for_one_example_before_it_writes(repo):
    before = {p.name: p.read_bytes() for p in (repo / "data" / "tokenized").iterdir()}
    (repo / "data" / "tiny.txt").write_text("अग्नि", encoding="utf-8")
    params = read_yaml(repo / "params.yaml")
    params["data"]["corpus"] = "data/tiny.txt"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out = sh([sys.executable, "stages/tokenize_corpus.py", "--out", "data/tokenized"], repo, check=False)
    assert out.returncode != 0 and "split has" in out.stderr and "block_size=16 needs at least 17" in out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert {p.name: p.read_bytes() for p in (repo / "data" / "tokenized").iterdir()} == before


AUDIT = """
import json, os, runpy, sys
root, log, script = os.getcwd(), sys.argv[1], sys.argv[2]
reads = set()

def hook(event, args):
    if event != "open" or not isinstance(args[0], (str, os.PathLike)):
        return
    mode, flags = args[1], args[2]
    reading = ("r" in mode and "+" not in mode) if isinstance(mode, str) else (flags & os.O_ACCMODE) == os.O_RDONLY
    path = os.path.realpath(args[0])
    if reading and path.startswith(root + os.sep) and "__pycache__" not in path:
        reads.add(os.path.relpath(path, root))

sys.addaudithook(hook)
sys.argv = sys.argv[2:]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    with open(log, "w") as f:
        json.dump(sorted(reads), f)
"""


def test_each_stage_reads_only_its_declared_deps_and_every_data_dep_it_declares(repo, tmp_path):
    """Run one stage of each family under an audit hook (in a copy): every file it opens lies under a
    declared dep, and every declared data dep is read (no dep that only causes reruns)."""
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git", ".dvc"))
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    for name in ("generate", "tokenize", "plan", "run@baseline-0", "sweep@qk_norm-4-1", "serve@pos", "report"):
        stage = lock[name]
        cmd = stage["cmd"].split()
        assert cmd[0] == "python"
        log = tmp_path / f"{name}.json"
        sh([sys.executable, "-c", AUDIT, str(log), *cmd[1:]], copy)
        reads = json.loads(log.read_text())
        deps = [d["path"] for d in stage["deps"]] + list(stage.get("params", {}))   # params files: params.yaml, configs
        stray = [r for r in reads if not any(r == d or r.startswith(d + "/") for d in deps)]
        assert not stray, f"{name} read files it does not depend on: {stray}"
        data_deps = [d for d in deps if not d.startswith(("src/", "stages/"))]
        unread = [d for d in data_deps if not any(r == d or r.startswith(d + "/") for r in reads)]
        assert not unread, f"{name} depends on files it never reads: {unread}"


def test_launch_puts_torchrun_in_front_of_a_run_and_two_processes_train_what_one_trained(options_repo):
    """`launch` starts every training stage's command: python by default (the rendered command is the one
    dvc.lock holds), torchrun for one run over several processes; DVC sees a new command and retrains."""
    record = options_repo / "data" / "runs" / "qk_norm" / "0" / "run.json"
    before = json.loads(record.read_text())
    params = read_yaml(options_repo / "params.yaml")
    params["launch"] = "torchrun --standalone --nproc_per_node=2"
    (options_repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out = sh([*DVC, "repro", "run@qk_norm-0"], options_repo)
    assert ran(out.stdout) == {"plan", "run@qk_norm-0"}                   # plan checks launch; configs unchanged
    after = json.loads(record.read_text())
    assert (before["processes"], after["processes"]) == (1, 2)
    assert max(abs(a - b) for a, b in zip(before["losses"], after["losses"], strict=True)) <= 1e-5
    assert abs(before["val_loss"] - after["val_loss"]) <= 1e-5
