"""End to end: the real `dvc` on a copy of this project in a temporary git repo, at smoke size.

The dependency graph is tried as a contributor would: edit a folder or a param, ask `dvc status` what
would rerun, and rerun it.
"""

import csv
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import yaml

from modern_gpt.config.params import read_yaml
from modern_gpt.records.stages import Plan
from modern_gpt.reporting.table import TABLE as COLUMNS

pytestmark = pytest.mark.slow

from e2e import (DVC, ENV, OPTION_RUNS, OPTION_SERVE, OPTIONS, ROOT, ROWS, RUNS, SERVE, commit, forget, ran,
                 run_cache_entries, set_params, sh, status)

LABELS = ["Step 1 baseline", "+ RMSNorm", "+ RoPE", "+ SwiGLU", "+ no bias", "+ GQA (kv=2)", "+ QK-norm"]
HEADERS = [c.header.replace("{confidence}", "95%") for c in COLUMNS if not c.looks_only]   # settle off at smoke size


def report_rows(repo: Path, name: str = "ablation.md") -> list[dict[str, str]]:
    """The report's ladder table's rows, each as {header: cell}: the contiguous table under its header."""
    lines = (repo / "reports" / name).read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.replace(" ", "").startswith("|#|"))
    table = []
    for line in lines[head:]:
        if not line.startswith("|"):
            break
        if "---" not in line:
            table.append(line)
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    assert cells[0] == HEADERS
    return [dict(zip(HEADERS, row)) for row in cells[1:]]


def repro_with(repo: Path, sets: list[str]) -> subprocess.CompletedProcess:
    """`dvc repro` after setting `sets` in params.yaml, each written as `dvc exp run -S` takes it (KEY.PATH=YAML,
    a leading + for a new key). The experiment machinery itself is tried by the tests that call `dvc exp run`
    (new K/V heads, a train change, NoPE, a bad param, a missing corpus); here it would add ~6 s a call."""
    params = read_yaml(repo / "params.yaml")
    for s in sets:
        key, value = s.split("=", 1)
        *path, last = key.removeprefix("+").split(".")
        node = params
        for k in path:
            node = node.setdefault(k, {})
        node[last] = yaml.safe_load(value)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return sh([*DVC, "repro"], repo)


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


@pytest.mark.light
def test_repro_writes_the_report_with_every_row_and_column(repo):
    rows = report_rows(repo)
    assert [r["variant"] for r in rows] == [*LABELS, "floor (entropy of the corpus process)"]
    for r in rows[:7]:
        assert r["params"].endswith("M") and " ± " in r["val"]              # params, val mean ± sd over 2 seeds
    assert all(r["verdict"].startswith(("**better**", "**worse**", "noise", "borderline")) for r in rows[1:7])
    text = (repo / "reports" / "ablation.md").read_text()
    for key in ("corpus", "md5", "tokenizer", "model shape", "seeds", "training code", "machine", "torch", "threads"):
        assert key in text
    assert "![validation loss" in text and (repo / "reports" / "val_curves.png").stat().st_size > 1000
    assert "## Learning rate" in text and (repo / "reports" / "lr_sweep.png").stat().st_size > 1000
    assert re.search(r"\*\*Full model against the baseline:\*\* Δ val [-+]\d\.\d{4} \(spread \d\.\d{4}, "
                     r"range \d\.\d{4}, 95% CI \[[-+]\d\.\d{4}, [-+]\d\.\d{4}\]\): "
                     r"(\*\*better\*\*|\*\*worse\*\*|noise|borderline)", text)
    metrics = json.loads((repo / "reports" / "metrics.json").read_text())
    assert list(metrics) == ROWS
    assert all(m["n"] == 2 and m["val_mean"] > 0 for m in metrics.values())


@pytest.mark.light
def test_the_report_reads_provenance_from_its_inputs(repo):
    record = json.loads((repo / "data" / "runs" / "qk_norm" / "1" / "run.json").read_text())
    assert record["code_md5"] and "stages/run.py" in record["code_files"]
    assert {f.split("/")[2] for f in record["code_files"] if f.startswith("src/")} == {
        "__init__.py", "changes", "config", "core", "nn", "records", "training"}
    assert f"md5 `{record['code_md5']}`" in (repo / "reports" / "ablation.md").read_text()
    threads = f"{record['threads']} thread{'s' * (record['threads'] != 1)}"
    assert record["machine"] and f"{record['machine']}, cpu, {threads}, torch {record['torch']}" \
        in (repo / "reports" / "ablation.md").read_text()
    plan = Plan.from_dict(json.loads((repo / "configs" / "plan.json").read_text()))
    assert [r.label for r in plan.ladders[0].rows] == LABELS
    assert [r.hf_class for r in plan.ladders[0].rows] == ["GPT2LMHeadModel", None, None, *["LlamaForCausalLM"] * 3,
                                                     "Qwen3ForCausalLM"]
    assert "LlamaForCausalLM" in (repo / "reports" / "ablation.md").read_text()
    assert set(json.loads((repo / "configs" / "norm.json").read_text())) == {"model", "train"}   # no display text


@pytest.mark.light
def test_reported_losses_are_the_trained_weights_own(repo):
    for row in ("baseline", "qk_norm"):
        record = json.loads((repo / "data" / "runs" / row / "0" / "run.json").read_text())
        assert record["val_loss"] == record["curve"][-1]["val"] and record["curve"][0]["val"] > record["val_loss"]


@pytest.mark.light
def test_second_repro_runs_nothing_and_the_report_is_byte_identical(repo):
    before = (repo / "reports" / "ablation.md").read_bytes()
    out = sh([*DVC, "repro"], repo)
    assert ran(out.stdout) == set() and "Data and pipelines are up to date" in out.stdout
    assert (repo / "reports" / "ablation.md").read_bytes() == before


@pytest.mark.light
def test_a_reviewer_pulls_the_authors_runs_and_regenerates_the_committed_report(repo, tmp_path):
    """DVC's answer to exact numbers on another machine: the author pushes the run outputs to a remote (here
    a local folder); a fresh clone with data/ and reports/ deleted pulls, `dvc repro` trains nothing, and the
    report it writes is the committed one, byte for byte (the report stage measures nothing: seconds,
    tokens/s and the machine come from the run records). Without the remote the same clone has to train."""
    remote = tmp_path / "remote"
    sh([*DVC, "remote", "add", "-d", "store", str(remote)], repo)
    commit(repo, "a remote for the run outputs")
    sh([*DVC, "push"], repo)
    committed = {p.name: p.read_bytes() for p in (repo / "reports").iterdir()}
    assert set(committed) >= {"ablation.md", "ablation.csv", "metrics.json", "val_curves.png"}

    def fresh_clone(name: str) -> Path:
        path = tmp_path / name
        sh(["git", "clone", "-q", str(repo), str(path)], tmp_path)
        for folder in ("data", "reports"):
            shutil.rmtree(path / folder, ignore_errors=True)
        return path

    reviewer = fresh_clone("reviewer")
    sh([*DVC, "pull"], reviewer)
    out = sh([*DVC, "repro"], reviewer)
    assert ran(out.stdout) == {"report"}                                  # no generate, tokenize or run@
    assert {p.name: p.read_bytes() for p in (reviewer / "reports").iterdir()} == committed

    stranger = fresh_clone("stranger")                                     # the control: no remote, no pull
    sh([*DVC, "remote", "remove", "store"], stranger)
    out = sh([*DVC, "repro", "run@qk_norm-1"], stranger)
    assert {"generate", "tokenize", "run@qk_norm-1"} <= ran(out.stdout) and "skipping run" not in out.stdout
    assert json.loads((stranger / "data" / "runs" / "qk_norm" / "1" / "run.json").read_text())["steps"] > 0


def object_md5s_match(remote: Path) -> int:
    """Every object in a local DVC remote holds the bytes its name says (files/md5/ab/cdef... = md5 abcdef...):
    nothing half-written. Returns how many there are."""
    objects = [f for f in (remote / "files" / "md5").glob("*/*") if f.is_file()]
    for f in objects:
        assert hashlib.md5(f.read_bytes()).hexdigest() == f.parent.name + f.name.removesuffix(".dir"), f
    return len(objects)


def slurm_scripts() -> dict[str, str]:
    """docs/machines.md's sbatch scripts, by the name their second line gives them: what a cluster would run."""
    text = (ROOT / "docs" / "machines.md").read_text()
    blocks = re.findall(r"```bash\n(#!/bin/bash\n# (\S+\.sbatch):.*?)```", text, re.S)
    return {name: body for body, name in blocks}


@pytest.mark.both_cores
def test_two_workers_share_the_runs_and_the_aggregator_trains_none(options_and_remote, tmp_path):
    """docs/machines.md's SLURM array, its scripts run by bash with the variables SLURM would set: two array tasks
    (--array=0-1: workers 1/2 and 2/2) start at once, each in a clone of its own, sharing the project's default
    remote (a folder next to the clones), which holds the options build's runs (its 10 runs of three families: run,
    aa, loo) but five: the first two of worker 1's share and the first three of worker 2's (and no serve). The
    second is killed after its first run; run again, it makes a new clone, pulls the run it had pushed, trains the
    two it lacks and pulls the rest. Every run is trained once (the remote's run-cache). The aggregator's `dvc repro --pull` then trains nothing, and its
    report has the single-machine run's results (the committed report of the build): losses, spreads, intervals,
    verdicts; not the seconds."""
    repo = options_and_remote
    scripts = slurm_scripts()
    assert set(scripts) == {"workers.sbatch", "report.sbatch"}
    for name, body in scripts.items():
        (tmp_path / name).write_text(body)
    remote = tmp_path / "modern-gpt-remote"                  # where the default remote of tmp_path/<clone> points
    origin = tmp_path / "origin"                             # the commit the cluster trains: nothing recorded yet,
    sh(["git", "clone", "-q", str(repo), str(origin)], tmp_path)    # so every run trains or is pulled
    sh(["git", "rm", "-q", "dvc.lock"], origin)
    commit(origin, "no lock")
    slurm = {"REPO": str(origin), "COMMIT": sh(["git", "rev-parse", "HEAD"], origin).stdout.strip(),
             "WORK": str(tmp_path), "VENV": sys.prefix, "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "2"}

    def task(script: str, log: Path, **env: str) -> subprocess.Popen:
        return subprocess.Popen(["bash", str(tmp_path / script)], cwd=tmp_path, env={**ENV, **slurm, **env},
                                stdout=log.open("w"), stderr=subprocess.STDOUT, text=True, start_new_session=True)

    shares = {s: sh([sys.executable, "-m", "modern_gpt", "shard", s, "--list"], repo).stdout.split()
              for s in ("1/2", "2/2")}
    assert set(shares["1/2"]).isdisjoint(shares["2/2"]) and set(shares["1/2"]) | set(shares["2/2"]) == OPTION_RUNS
    one, two = shares["1/2"], shares["2/2"]
    forget(repo, remote, [*one[:2], *two[:3], *OPTION_SERVE, "report"])    # what the workers must run

    logs = {name: tmp_path / f"{name}.log" for name in ("one", "two", "three", "report")}
    first = task("workers.sbatch", logs["one"], SLURM_ARRAY_TASK_ID="0")
    second = task("workers.sbatch", logs["two"], SLURM_ARRAY_TASK_ID="1")
    deadline = time.time() + 600
    while "[1/" not in logs["two"].read_text() and second.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert second.poll() is None, logs["two"].read_text()
    os.killpg(second.pid, signal.SIGKILL)                      # task 2 dies during its second run
    second.wait()
    assert first.wait(timeout=900) == 0, logs["one"].read_text()
    assert logs["one"].read_text().startswith("worker 1/2: ") and logs["two"].read_text().startswith("worker 2/2: ")
    assert object_md5s_match(remote) > 0
    pushed_by_two = re.findall(r"\] (\S+): trained", logs["two"].read_text())
    assert pushed_by_two == two[:1], logs["two"].read_text()
    assert re.findall(r"\] (\S+): trained", logs["one"].read_text()) == one[:2]
    assert re.findall(r"\] (\S+): pulled", logs["one"].read_text()) == one[2:]

    assert task("workers.sbatch", logs["three"], SLURM_ARRAY_TASK_ID="1").wait(timeout=900) == 0, \
        logs["three"].read_text()                              # task 2 again, as a resubmitted array would run it
    told = logs["three"].read_text()
    assert f"{two[0]}: pulled" in told                         # the dead worker's pushed run: not trained again
    assert re.findall(r"\] (\S+): trained", told) == two[1:3]
    assert re.findall(r"\] (\S+): pulled", told) == [two[0], *two[3:]]
    assert len(list(tmp_path.glob("worker-2.*"))) == 2 and len(list(tmp_path.glob("worker-1.*"))) == 1
    assert object_md5s_match(remote) > 0
    assert sorted(trained_per_run(remote).values()) == [1] * len(OPTION_RUNS)

    assert task("report.sbatch", logs["report"]).wait(timeout=900) == 0, logs["report"].read_text()
    out = logs["report"].read_text()
    [aggregator] = [d for d in tmp_path.glob("report.*") if d.is_dir()]
    assert f"the report: {aggregator}/reports/ablation.md" in out
    assert not ran(out) & OPTION_RUNS and {"report"} | OPTION_SERVE <= ran(out)
    mine, single = report_rows(aggregator), report_rows(repo)
    assert [{k: v for k, v in r.items() if k != "secs"} for r in mine] == \
        [{k: v for k, v in r.items() if k != "secs"} for r in single]
    for name in ("val_curves.csv", "lr_sweep.csv", "metrics.json"):
        assert (aggregator / "reports" / name).read_text() == (repo / "reports" / name).read_text(), name
    csv_rows = [{k: v for k, v in r.items() if k != "secs"}
                for r in csv.DictReader(io.StringIO((aggregator / "reports" / "ablation.csv").read_text()))]
    assert csv_rows == [{k: v for k, v in r.items() if k != "secs"}
                        for r in csv.DictReader(io.StringIO((repo / "reports" / "ablation.csv").read_text()))]


@pytest.mark.both_cores
def test_the_runner_trains_two_at_a_time_on_their_share_of_the_cores_and_survives_kill_9(repo, tmp_path):
    """`modern-gpt repro --jobs 2`: each pending run its own `dvc --wait-for-lock repro -s`, with half the cores
    as its threads. Killed with its whole process group (kill -9) in the cheap stages and again with two runs
    training, the same command finishes the rest: nothing recorded is trained again (even from an empty dvc.lock,
    what a kill leaves while DVC writes it), no lock is left, dvc.lock holds every stage and `dvc status` is
    clean. From the smoke build with nothing recorded (its outputs and dvc.lock gone, its DVC cache kept) and a
    three-row ladder on another baseline: six runs to train."""
    baseline = {"norm": "layernorm", "pos": "learned", "mlp": "swiglu", "bias": False, "n_kv_head": 2, "qk_norm": True}
    set_params(repo, {"ladder": ["baseline", "norm", "pos"], "baseline": baseline, "sweep": {"lr": [], "rows": []}})
    for folder in ("data/runs", "data/serve", "data/generated", "data/tokenized", "reports", "configs"):
        shutil.rmtree(repo / folder, ignore_errors=True)
    sh(["git", "rm", "-rq", "dvc.lock", "reports", "configs"], repo)
    commit(repo, "a three-row ladder, nothing recorded")
    runs = {f"run@{row}-{seed}" for row in ROWS[:3] for seed in (0, 1)}
    cmd = [sys.executable, "-m", "modern_gpt", "repro", "--jobs", "2"]
    recorded = []
    for k, until in enumerate([lambda text: time.time() > t0 + 2, lambda text: "[2/" in text]):
        log = tmp_path / f"killed-{k}.log"
        t0 = time.time()
        runner = subprocess.Popen(cmd, cwd=repo, env=ENV, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
        while not until(log.read_text()) and runner.poll() is None and time.time() < t0 + 600:
            time.sleep(0.1)
        assert runner.poll() is None, log.read_text()
        os.killpg(runner.pid, signal.SIGKILL)
        runner.wait()
        recorded += re.findall(r"\] (\S+): trained", log.read_text())
    assert recorded, "the second kill came after two runs had finished"
    # what DVC recorded before the kills: the runs printed, and any that finished in the instant before the kill,
    # recorded in dvc.lock by their own DVC process before the runner could print them. Unless the kill landed
    # while a DVC process was writing dvc.lock (DVC truncates it, then writes it): that leaves it empty (CI met it)
    text = (repo / "dvc.lock").read_text()
    locked = set(yaml.safe_load(text)["stages"]) & runs if text.strip() else set()
    assert set(recorded) <= locked or not text.strip()
    # the same command mends an empty dvc.lock: leave it as such a kill does, so that every run shows the mending,
    # and every run DVC had recorded comes back from the run-cache, none trained again
    (repo / "dvc.lock").write_text("")
    out = sh(cmd, repo).stdout
    assert out.startswith("dvc.lock: empty, as a DVC process killed while writing it leaves it: removed; ")
    assert "training runs, 2 at a time" in out
    trained = set(re.findall(r"\] (\S+): trained", out))
    restored = set(re.findall(r"\] (\S+): restored from the run-cache", out))
    assert trained | restored == runs and set(recorded) | locked <= restored
    assert "Running stage 'report'" in out
    assert status(repo) == set()
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    assert set(lock) == runs | {f"serve@{row}" for row in ROWS[:3]} | {"generate", "tokenize", "plan", "report"}
    rwlock = repo / ".dvc" / "tmp" / "rwlock"            # entries of killed processes block nothing: DVC drops
    live = [info["pid"] for mode in (json.loads(rwlock.read_text()) if rwlock.exists() else {}).values()
            for infos in mode.values() for info in (infos if isinstance(infos, list) else [infos])]
    assert not [pid for pid in live if psutil.pid_exists(pid)]          # them when it next needs their paths
    assert "Data and pipelines are up to date" in sh([*DVC, "repro"], repo).stdout
    share = max(1, len(os.sched_getaffinity(0)) // 2)
    records = list((repo / "data" / "runs").glob("*/*/run.json"))
    assert len(records) == len(runs)
    assert {json.loads(f.read_text())["threads"] for f in records} == {share}
    assert [r["variant"] for r in report_rows(repo)][:3] == LABELS[:3]


@pytest.mark.light
def test_a_worker_stops_before_training_when_the_remote_cannot_be_written(repo, tmp_path):
    path = tmp_path / "worker"
    sh(["git", "clone", "-q", str(repo), str(path)], tmp_path)
    sh([*DVC, "remote", "modify", "nearby", "url", "/dev/null/remote"], path)    # below a file: never writable
    out = sh([sys.executable, "-m", "modern_gpt", "shard", "1/2"], path, check=False)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("modern-gpt: error: DVC remote 'nearby' (/dev/null/remote) cannot be written: ")
    assert out.stderr.rstrip().endswith("nothing was trained (mend it with: dvc remote modify nearby url URL)")
    assert len(out.stderr.strip().splitlines()) == 1 and not (path / "data" / "runs").exists()


@pytest.mark.light
def test_dvc_draws_one_series_per_row_with_its_seed_band_and_the_pngs(repo):
    """`dvc plots diff` as a reviewer runs it: read the rendered vega-lite, not the YAML."""
    data = json.loads(sh([*DVC, "plots", "diff", "HEAD", "--json"], repo).stdout)["data"]
    curves = next(v for k, v in data.items() if k.startswith("validation loss per row"))[0]["content"]
    assert [layer["mark"]["type"] for layer in curves["layer"]] == ["area", "line"]
    assert curves["layer"][0]["encoding"]["y2"] == {"field": "high"}                  # the band: seed min to max
    assert curves["encoding"]["color"]["field"] == "series"                          # one series per row and rev
    assert {"calculate": "datum.rev + ' · ' + datum.variant", "as": "series"} in curves["transform"]
    values = curves["data"]["values"]
    assert {v["variant"] for v in values} == set(LABELS) and {v["rev"] for v in values} == {"HEAD", "workspace"}
    assert all({"iter", "val_mean", "val_min", "val_max"} <= set(v) for v in values)
    effects = next(v for k, v in data.items() if k.startswith("effect of each change"))[0]["content"]
    assert [layer["mark"]["type"] for layer in effects["layer"]] == ["rule", "point", "rule"]
    assert effects["layer"][0]["encoding"]["y2"] == {"field": "high"}                # the 95% interval
    assert {v["variant"] for v in effects["data"]["values"] if v["d_val"] != ""} == set(LABELS[1:])
    rates = next(v for k, v in data.items() if k.startswith("val loss against learning rate"))[0]["content"]
    assert {v["row"] for v in rates["data"]["values"]} == {"qk_norm"}
    assert rates["encoding"]["x"]["scale"] == {"type": "log"}                       # multiples of train.lr
    assert rates["encoding"]["x"]["axis"]["labelOverlap"] == "greedy"               # no labels on top of each other
    assert "scale" not in curves["encoding"]["x"]                                    # training steps stay linear
    for png in ("reports/val_curves.png", "reports/lr_sweep.png"):
        assert [p["type"] for p in data[png]] == ["image", "image"]                   # HEAD and workspace
    assert not any(k.endswith(".csv") for k in data)            # no default plot zigzagging through the rows


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
    ("records/run.py", {"plan"} | RUNS | SERVE | REPORT),             # runs write records; the corpus stages no
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


def test_new_kv_heads_retrain_only_the_gqa_row_and_those_after_it(repo):
    out = sh([*DVC, "exp", "run", "-S", "model.n_kv_head=1"], repo)
    assert {s for s in ran(out.stdout) if s.startswith("run@")} == {
        f"run@{row}-{seed}" for row in ("n_kv_head", "qk_norm") for seed in (0, 1)}
    assert report_rows(repo)[5]["variant"] == "+ MQA (kv=1)"
    reviewed_as_a_pull_request(repo)

    # going back to the committed params restores every result from the run-cache: no training
    sh(["git", "checkout", "params.yaml"], repo)
    out = sh([*DVC, "repro"], repo)
    assert not {s for s in ran(out.stdout) if s.startswith("run@")}
    assert "is cached - skipping run" in out.stdout
    assert report_rows(repo)[5]["variant"] == "+ GQA (kv=2)"
    assert sh(["git", "status", "--porcelain", "reports"], repo).stdout == ""   # the committed report again


def review(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh([sys.executable, "-m", "modern_gpt", "review", *args], repo, check=check)


def reviewed_as_a_pull_request(repo: Path) -> None:
    """The experiment committed as a pull request's commit: review against the fixture's commit names exactly the
    runs whose config changed, pairs both seeds of every row, and judges the changed rows; the rest move by 0."""
    base = sh(["git", "rev-parse", "HEAD"], repo).stdout.strip()
    branch = sh(["git", "rev-parse", "--abbrev-ref", "HEAD"], repo).stdout.strip()
    sh(["git", "checkout", "-q", "-b", "pr"], repo)
    try:
        commit(repo, "a pull request: model.n_kv_head=1")
        text = review(repo, base).stdout
        found = json.loads(review(repo, base, "--json").stdout)
    finally:
        sh(["git", "checkout", "-q", branch], repo)
        sh(["git", "branch", "-q", "-D", "pr"], repo)
    changed = {"n_kv_head", "qk_norm", "sweep_qk_norm_x4"}      # the GQA row, the row after it, and its grid run
    assert found["configs"] == sorted(changed) and found["paired"]
    assert {p["key"]: [p["base"], p["here"]] for p in found["params"]} == {"model.n_kv_head": [2, 1]}
    rows = {r["run"]: r for r in found["rows"]}
    assert set(rows) == {*ROWS, "sweep_qk_norm_x4"} and all(r["seeds"] == [0, 1] for r in rows.values())
    assert {r for r, x in rows.items() if x["inputs_changed"]} == changed
    for run in changed:
        assert rows[run]["delta"] != 0 and rows[run]["verdict"] and rows[run]["ci"][0] <= rows[run]["delta"]
    assert all(x["delta"] == 0 and x["moved"] == 0 for r, x in rows.items() if r not in changed)
    assert found["moved"] == [] and found["one_side"] == []
    assert text.splitlines()[2].startswith(f"**this working tree against {base} ({base[:7]}):** 3 of 8 rows")
    assert "`model.n_kv_head` `2` → `1`" in text and "| `bias` " in text


@pytest.mark.light
def test_review_check_names_a_hand_edited_report_and_a_params_edit_without_repro(repo):
    assert review(repo, "--check").returncode == 0
    report = repo / "reports" / "ablation.md"
    report.write_text(report.read_text().replace("Step 1 baseline", "Step 1 baseline ", 1))
    out = review(repo, "--check", check=False)
    assert out.returncode == 1 and out.stderr.startswith("review --check: reports/ablation.md: md5 ")
    assert len(out.stderr.splitlines()) == 1
    sh(["git", "checkout", "reports"], repo)
    params = read_yaml(repo / "params.yaml")
    params["train"]["lr"] = 0.003
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        out = review(repo, "--check", check=False)
    finally:
        sh(["git", "checkout", "params.yaml"], repo)
    assert out.returncode == 1 and "review --check: stage plan: params params.yaml: train modified" in out.stderr


@pytest.mark.light
def test_review_of_a_base_that_is_no_commit_or_predates_the_runs_table_is_one_line(repo):
    first = sh(["git", "rev-list", "--max-parents=0", "HEAD"], repo).stdout.strip()   # the copy, before any report
    for base, says in (("no-such-branch", "not a commit of this repository"),
                       (first, "has no reports/runs.csv (it predates the runs table")):
        out = review(repo, base, check=False)
        assert out.returncode == 2 and says in out.stderr and len(out.stderr.splitlines()) == 1
        assert "Traceback" not in out.stderr


@pytest.mark.light
def test_the_review_workflow_runs_its_steps_and_comments_once(repo, tmp_path):
    """.github/workflows/review.yml's `run:` steps in a clone of the fixture (origin: the base branch) with a pull
    request's commit; a stand-in `gh` writes the comment to a file instead of posting it. Set-up is the README's
    command (checked, not run: the clone gets this test's environment as its .venv)."""
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "review.yml").read_text())
    steps = [s for s in flow["jobs"]["review"]["steps"] if "run" in s]
    readme = (ROOT / "README.md").read_text()
    setup = steps[0]["run"].strip()
    assert setup in readme and "pull_request" in flow[True] and flow["permissions"]["pull-requests"] == "write"
    base = sh(["git", "rev-parse", "--abbrev-ref", "HEAD"], repo).stdout.strip()
    clone = tmp_path / "pr"
    sh(["git", "clone", "-q", str(repo), str(clone)], tmp_path)
    (clone / "README.md").write_text((clone / "README.md").read_text() + "\nA pull request's edit.\n")
    commit(clone, "a pull request")
    (clone / ".venv").symlink_to(Path(sys.prefix))
    gh = tmp_path / "bin" / "gh"
    gh.parent.mkdir()
    gh.write_text('#!/bin/sh\nprintf "%s\\n" "$*" > "$GH_OUT.args"\nwhile [ $# -gt 0 ]; do '
                  '[ "$1" = --body-file ] && cp "$2" "$GH_OUT"; shift; done\n')
    gh.chmod(0o755)
    github = {"github.base_ref": base, "github.token": "a-token", "github.event.pull_request.number": "7"}
    def job() -> list[tuple[str, int, str]]:
        """The steps after set-up as GitHub runs them: a failed step ends the job unless it may fail."""
        done = []
        for step in steps[1:]:
            env = {k: re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: github[m.group(1)], str(v))
                   for k, v in step.get("env", {}).items()}
            out = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=clone,
                                 capture_output=True, text=True, timeout=300,
                                 env={**ENV, **env, "GH_OUT": str(tmp_path / "comment.md"),
                                      "PATH": f"{gh.parent}{os.pathsep}{ENV['PATH']}"})
            done.append((step["name"], out.returncode, out.stdout + out.stderr))
            if out.returncode and not step.get("continue-on-error"):
                break
        return done

    done = job()
    assert all(rc == 0 for _, rc, _ in done) and len(done) == len(steps) - 1, done
    comment = (tmp_path / "comment.md").read_text()
    assert (tmp_path / "comment.md.args").read_text().split() == [
        "pr", "comment", "7", "--edit-last", "--create-if-none", "--body-file", "review.md"]
    assert comment.startswith("## modern-gpt review\n") and f"against origin/{base} (" in comment
    assert "0 of 8 rows changed inputs" in comment
    # a fork's pull request: its token cannot comment (here a `gh` that fails), and the check still runs and decides
    gh.write_text('#!/bin/sh\necho "GraphQL: Resource not accessible by integration (addComment)" >&2\nexit 1\n')
    done = job()
    assert [rc != 0 for _, rc, _ in done] == [False, True, False], done
    assert "review --check: the committed reports are what dvc.lock" in done[-1][2]
    (clone / "reports" / "ablation.md").write_text((clone / "reports" / "ablation.md").read_text() + "edited\n")
    commit(clone, "a report edited by hand")
    done = job()
    assert done[-1][1] != 0 and "review --check" in done[-1][2], done               # a failed check fails the job


@pytest.mark.light
def test_nope_is_a_row_that_a_flag_runs(repo):
    sh([*DVC, "exp", "run", "-S", "model.pos=none", "plan"], repo)       # the plan alone: what would retrain
    assert {s for s in status(repo) if s.startswith("run@")} == {
        f"run@{row}-{seed}" for row in ROWS[2:] for seed in (0, 1)}        # the pos row and every row after it
    assert json.loads((repo / "configs" / "plan.json").read_text())["ladders"][0]["rows"][2]["label"] == "+ NoPE"
    assert json.loads((repo / "configs" / "pos.json").read_text())["model"]["pos"] == "none"


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


# A smaller ladder with the optional rows switched on, the A/A copy and leave-one-out: conftest.py's options_repo.
@pytest.mark.light
def test_aa_and_leave_one_out_run_end_to_end(options_repo):
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "## A/A check" in text and "seeds 5, 6" in text
    assert "## Leave one out" in text and "| − QK-norm" in text
    configs = {p.name for p in (options_repo / "configs").glob("*.json")}
    assert configs == {"baseline.json", "norm.json", "qk_norm.json", "loo_qk_norm.json", "plan.json"}
    loo = json.loads((options_repo / "configs" / "loo_qk_norm.json").read_text())["model"]
    assert loo["qk_norm"] is False and loo["norm"] == "rmsnorm"               # full model, one change reverted
    csv = (options_repo / "reports" / "ablation.csv").read_text()
    assert "\naa," in csv and "\nloo_qk_norm," in csv
    assert sorted(p.name for p in (options_repo / "data" / "runs" / "baseline").iterdir()) == ["0", "1", "5", "6"]


@pytest.mark.parametrize("tokenizer", [["tokenizer.kind=akshara"], ["tokenizer.kind=bpe", "tokenizer.vocab_size=300"]],
                         ids=["akshara", "bpe"])
def test_each_tokenizer_runs_end_to_end_and_reports_bits_per_character(options_repo, tokenizer):
    sets = [*tokenizer, "seeds=[0]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]", "ablation.match_params=true"]
    repro_with(options_repo, sets)
    meta = json.loads((options_repo / "data" / "tokenized" / "meta.json").read_text())
    kind = tokenizer[0].split("=")[1]
    assert meta["tokenizer"] == kind and meta["val"]["tokens"] < meta["val"]["chars"]
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert f"| tokenizer | {kind}, vocabulary" in re.sub(" +", " ", text)
    rows = report_rows(options_repo)
    assert all(0.5 < float(r["bpc"]) < 8 for r in rows[:3])
    assert "parameter matching" in text                                        # match_params on: sized MLPs
    assert json.loads((options_repo / "configs" / "qk_norm.json").read_text())["model"]["mlp_hidden"] > 0


def test_a_diverged_run_reaches_the_report_counted_and_marked(options_repo):
    sets = ["train.lr=100", "train.min_lr=0", "train.grad_clip=0", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"]
    repro_with(options_repo, sets)
    records = {row: [json.loads((options_repo / "data" / "runs" / row / f"{seed}" / "run.json").read_text())
                     for seed in (0, 1)] for row in ("baseline", "norm", "qk_norm")}
    diverged = {row: sum(r["diverged"] for r in runs) for row, runs in records.items()}
    assert diverged["baseline"] >= 1                                      # lr 100 without clipping blows up
    assert all(r["val_loss"] is None for runs in records.values() for r in runs if r["diverged"])
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "**Diverged:**" in text and not re.search(r"\bnan\b", text, re.IGNORECASE)
    for r in report_rows(options_repo)[:3]:
        n = diverged[{"Step 1 baseline": "baseline", "+ RMSNorm": "norm", "+ QK-norm": "qk_norm"}[r["variant"]]]
        assert (f"{n}/2 diverged" in r["val"]) == (n > 0)


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


def test_the_second_ladder_and_a_size_reuse_the_books_runs_write_their_reports_and_off_keeps_them(options_repo):
    """The second ladder, and the main ladder at one more size (scale.sizes), in one run: neither retrains the
    main table's runs; switched off, beyond.md and scale.md stay."""
    sets = ["beyond.ladder=[tie_embeddings,optimizer,attn_window]", "beyond.model.attn_window=4",
            "ablation.aa_seeds=[]", "ablation.leave_one_out=[]", "+scale.sizes.xs={n_layer: 1, n_embd: 16, n_head: 2}"]
    out = repro_with(options_repo, sets)
    flags = ("tie_embeddings", "optimizer", "attn_window")
    assert {s for s in ran(out.stdout) if "@" in s} == {f"beyond@{f}-{s}" for f in flags for s in (0, 1)} | {
        f"serve_beyond@{f}" for f in flags} | {                                 # row 0 trains and serves nothing
        f"scale@xs-{r}-{s}" for r in OPTIONS["ladder"] for s in (0, 1)}        # the default size: the main runs
    scaled = json.loads((options_repo / "configs" / "scale_xs_qk_norm.json").read_text())["model"]
    assert (scaled["n_layer"], scaled["n_embd"], scaled["n_head"], scaled["qk_norm"]) == (1, 16, 2, True)
    scale_md = (options_repo / "reports" / "scale.md").read_text()
    assert "| change " in scale_md and "| + QK-norm " in scale_md and "xs 0.00" in scale_md
    assert "(scale.budget: steps)" in scale_md and (options_repo / "reports" / "scale.png").is_file()
    rows = report_rows(options_repo, "beyond.md")
    assert [r["variant"] for r in rows] == ["the book's design", "+ untied head", "+ Muon", "+ sliding window 4 (S)"]
    main = {r["variant"]: r for r in report_rows(options_repo)}
    assert rows[0]["val"] == main["+ QK-norm"]["val"]                            # the main table's last row
    assert all(r["verdict"] for r in rows[1:])
    record = json.loads((options_repo / "data" / "runs" / "beyond_optimizer" / "0" / "run.json").read_text())
    assert record["train"]["optimizer"] == "muon" and record["model"]["tie_embeddings"] is False
    text = (options_repo / "reports" / "beyond.md").read_text()
    assert "| optimizer | fused AdamW; from + Muon on: Muon on the blocks' matrices (torch.optim.Muon" in \
        re.sub(" +", " ", text)
    served = json.loads((options_repo / "data" / "serve" / "beyond_attn_window.json").read_text())
    assert served["windows"] == [4] and served["kv_bytes_tensor"] == served["kv_bytes_per_sequence"]
    assert "## Serving cost" in text and "| window 4 on 1 of 1 layers |" in re.sub(" +", " ", text)
    written = [(options_repo / "reports" / name).read_bytes() for name in ("beyond.md", "scale.md")]
    sh(["git", "checkout", "params.yaml"], options_repo)
    sh([*DVC, "repro"], options_repo)                                           # off again
    assert [(options_repo / "reports" / name).read_bytes() for name in ("beyond.md", "scale.md")] == written
    assert not list((options_repo / "configs").glob("beyond_*")) and not list((options_repo / "configs").glob("scale_*"))


def test_a_planted_huge_learning_rate_shows_in_the_sweep_and_a_new_rate_trains_only_its_runs(options_repo):
    overrides = ["sweep.rows=[norm,qk_norm]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"]
    out = repro_with(options_repo, [*overrides, "sweep.lr=[1000]"])
    assert {s for s in ran(out.stdout) if "@" in s} == {f"sweep@{r}-1000-{s}" for r in ("norm", "qk_norm") for s in (0, 1)}
    table = list(csv.DictReader(io.StringIO((options_repo / "reports" / "lr_sweep.csv").read_text())))
    assert [(r["row"], float(r["multiple"])) for r in table] == [("norm", 1.0), ("norm", 1000.0), ("qk_norm", 1.0),
                                                                  ("qk_norm", 1000.0)]
    for r in table:                                  # lr 2: every row blew up there, and only there
        unstable = int(r["diverged"]) + int(r["seeds_spiked"]) > 0
        assert unstable == (float(r["multiple"]) == 1000.0), r
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "## Learning rate" in text and "| + RMSNorm" in text[text.index("## Learning rate"):]
    assert re.search(r"At lr 2 \(×1000\), \+ RMSNorm: spikes in \d/2 seeds \(\d+ in all\), diverged \d/2", text)
    assert (options_repo / "reports" / "lr_sweep.png").stat().st_size > 1000

    out = repro_with(options_repo, [*overrides, "sweep.lr=[1000,0.5]"])
    assert {s for s in ran(out.stdout) if "@" in s} == {f"sweep@{r}-0.5-{s}" for r in ("norm", "qk_norm") for s in (0, 1)}
    assert "| 0.001 (×0.5) |" in re.sub(" +", " ", (options_repo / "reports" / "ablation.md").read_text())


@pytest.mark.light
def test_char_tokenizer_reports_bpc_as_loss_over_ln2(repo):
    row = report_rows(repo)[0]
    assert float(row["bpc"]) == pytest.approx(float(row["val"].split(" ± ")[0]) / 0.6931471805599453, abs=2e-3)


def test_a_users_corpus_folder_from_params(options_repo):
    mine = options_repo / "data" / "mine"
    mine.mkdir()
    a, b = "नरः वनम् गच्छति ।\n" * 400, "सीता फलम् खादति ।\n" * 400
    (mine / "a.txt").write_text(a, encoding="utf-8")
    (mine / "b.txt").write_text(b, encoding="utf-8")
    sets = ["data.corpus=data/mine", "seeds=[0]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"]
    repro_with(options_repo, sets)
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "`data/mine`" in text and "floor" not in text                    # the floor is the generator's only
    assert json.loads((options_repo / "data" / "tokenized" / "meta.json").read_text())["corpus"]["chars"] == len(a + "\n" + b)
    sh(["git", "checkout", "params.yaml"], options_repo)
    out = sh([*DVC, "exp", "run", "-S", "data.corpus=data/missing.txt"], options_repo, check=False)
    assert out.returncode != 0 and "data/missing.txt" in out.stderr and "Traceback" not in out.stderr



# Ray: a real local cluster of 2 CPUs for the test below, started and stopped with it. The test is both_cores: it
# runs beside no other slow test, so the cluster's daemons load no other test (and `ray stop` stops only this one).

RAY = str(Path(sys.executable).parent / "ray")
REPRO = [sys.executable, "-m", "modern_gpt", "repro"]


def free_port() -> int:
    """A local TCP port no process listens on (the system's pick, released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class RayCluster:
    address: str
    env: dict[str, str]        # a driver's: a home of its own, and the cluster's token where Ray looks


@pytest.fixture
def ray_cluster(tmp_path_factory):
    """A cluster with token authentication on (RAY_AUTH_MODE=token) and a token of its own; neither it nor the
    drivers read the home directory (each gets an empty one), so whatever ~/.ray holds changes nothing."""
    home = tmp_path_factory.mktemp("ray-home")
    token = home / "cluster-token"
    token.write_text(secrets.token_hex(32))
    base = {**{k: v for k, v in ENV.items() if not k.startswith("RAY_AUTH")}, "HOME": str(home),
            "RAY_USAGE_STATS_ENABLED": "0"}
    cluster = {**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    port = free_port()
    subprocess.run([RAY, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                    "--object-store-memory=80000000", "--disable-usage-stats"], env=cluster, check=True,
                   capture_output=True, timeout=300)
    yield RayCluster(f"127.0.0.1:{port}", {**base, "RAY_AUTH_TOKEN_PATH": str(token)})   # RAY_AUTH_MODE unset
    subprocess.run([RAY, "stop", "--force"], env=cluster, capture_output=True, timeout=300)


def driver_clone(repo: Path, tmp_path: Path, name: str = "driver") -> Path:
    """A clone of the fixture's commit with nothing recorded, as a user's driver: every run is trained or pulled."""
    path = tmp_path / name
    sh(["git", "clone", "-q", str(repo), str(path)], tmp_path)
    sh(["git", "rm", "-q", "dvc.lock"], path)
    commit(path, "no lock")
    return path


def trained_per_run(remote: Path) -> dict[str, int]:
    """How many times each run was trained and pushed, from a local remote's run-cache: an entry is one set of
    outputs of one command on one set of inputs, and every training writes other seconds into run.json."""
    return {cmd: len(entries) for cmd, entries in run_cache_entries(remote).items() if "stages/run.py" in cmd}


def slot_holders() -> set[int]:
    """The processes holding a core slot now (/proc/locks: their flocks on the slot files)."""
    folder = Path(os.environ.get("MODERN_GPT_CORES_DIR") or f"/tmp/modern-gpt-cores-{os.getuid()}")
    inodes = {f.stat().st_ino for f in folder.glob("core-*")} if folder.exists() else set()
    holders = set()
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        if "FLOCK" in parts and "->" not in parts and int(parts[5].split(":")[-1]) in inodes:
            holders.add(int(parts[4]))
    return holders


@pytest.mark.both_cores
def test_repro_on_ray_refuses_bad_input_before_any_task_then_trains_each_run_once_through_a_killed_worker(
        options_and_remote, ray_cluster, tmp_path):
    """`modern-gpt repro --ray ADDRESS` on the options build's commit (10 runs of three families), on a real local
    Ray cluster of 2 CPUs, one for both parts (starting and stopping one takes about 9 s here).
    First what it refuses, in one line each, before any task starts: a dirty workspace, a remote it cannot write,
    an address where no cluster listens. Then one task per run, with the default remote holding every run but four
    (and no serve). Once a run holds its core slot, its worker's process group is killed (kill -9): Ray's retry
    trains that run again, no process of the group survives, the four are trained and the rest pulled, and every
    run is trained exactly once (counted from the remote's run-cache). The report then equals the build's in every
    column but the seconds."""
    repo = options_and_remote
    missing = sorted(OPTION_RUNS)[::3]
    forget(repo, tmp_path / "modern-gpt-remote", [*missing, *OPTION_SERVE, "report"])
    nodes = tmp_path / "nodes"
    cmd = [*REPRO, "--ray", ray_cluster.address, "--workdir", str(nodes)]
    env = ray_cluster.env

    refused = driver_clone(repo, tmp_path, "refused")   # its own clone: a refusal may have run the cheap stages
    edit(refused / "params.yaml")
    out = sh(cmd, refused, check=False, env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("modern-gpt: error: --ray: params.yaml differ from commit ")
    assert "which the workers check out: they would train something else" in out.stderr
    sh(["git", "checkout", "params.yaml"], refused)
    sh([*DVC, "remote", "modify", "nearby", "url", "/dev/null/remote"], refused)
    out = sh(cmd, refused, check=False, env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("modern-gpt: error: DVC remote 'nearby' (/dev/null/remote) cannot be written: ")
    sh(["git", "checkout", ".dvc/config"], refused)
    closed = f"127.0.0.1:{free_port()}"                 # a port where nothing listens
    out = sh([*REPRO, "--ray", closed, "--workdir", str(nodes)], refused, check=False, env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith(f"modern-gpt: error: --ray: cannot reach the Ray cluster at {closed}: ")
    out = sh(cmd, refused, check=False, env={**env, "RAY_AUTH_TOKEN": "not-the-clusters"})   # Ray's first choice
    assert out.returncode == 2 and out.stderr.strip() == (
        f"modern-gpt: error: --ray: the Ray cluster at {ray_cluster.address} refused this driver's token: its token "
        "authentication is on; give the driver the cluster's token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
        "~/.ray/auth_token (docs/machines.md)"), out.stderr                                 # not Ray's warnings
    assert not nodes.exists() and not (refused / "data" / "runs").exists()      # no task ever started

    driver = driver_clone(repo, tmp_path)
    log = tmp_path / "driver.log"
    proc = subprocess.Popen(cmd, cwd=driver, env={**ENV, **env}, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        deadline, victim = time.time() + 300, None
        while victim is None and proc.poll() is None and time.time() < deadline:
            runs = [p for p in psutil.process_iter(["cmdline"]) if "stages/run.py" in " ".join(p.info["cmdline"] or [])]
            victim = next((p for p in runs if p.pid in slot_holders()), None)
            time.sleep(0.1)
        assert victim is not None, log.read_text()
        group = os.getpgid(victim.pid)
        assert "ray" in " ".join(psutil.Process(group).cmdline()).lower()      # the group is the task's worker's
        members = [p for p in psutil.process_iter() if _pgid(p.pid) == group]
        os.killpg(group, signal.SIGKILL)
        assert proc.wait(timeout=900) == 0, log.read_text()
    finally:                                             # a failed test leaves no driver behind
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out = log.read_text()
    assert not [p for p in members if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]     # no orphan
    assert sorted(re.findall(r"\] (\S+): trained \(", out)) == missing
    assert sorted(re.findall(r"\] (\S+): pulled \(", out)) == sorted(OPTION_RUNS - set(missing))
    assert sorted(trained_per_run(tmp_path / "modern-gpt-remote").values()) == [1] * len(OPTION_RUNS)
    assert "Running stage 'report'" in out and not ran(out) & OPTION_RUNS          # dvc repro --pull trained nothing
    mine, single = report_rows(driver), report_rows(repo)
    assert [{k: v for k, v in r.items() if k != "secs"} for r in mine] == \
        [{k: v for k, v in r.items() if k != "secs"} for r in single]
    for name in ("val_curves.csv", "lr_sweep.csv", "metrics.json"):
        assert (driver / "reports" / name).read_text() == (repo / "reports" / name).read_text(), name


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
