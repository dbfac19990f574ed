"""End to end, experiments and review: the real `dvc` on a copy of this project in a temporary git repo, at smoke
size. A reviewer pulls an author's runs and regenerates the report; `dvc exp run` retrains only the rows a change
touches, and `modern-gpt review` pairs them by seed as a pull request's comment; `review --check` names a
hand-edited report; the pull-request workflow's steps run as GitHub would run them."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from e2e import DVC, ENV, ROOT, ROWS, commit, ran, report_rows, sh
from modern_gpt.config.params import read_yaml

pytestmark = pytest.mark.slow


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
    request's commit; a stand-in `gh` writes the comment to a file instead of posting it. Set-up is the command
    docs/review.md gives (checked, not run here: the clone gets this test's environment as its .venv; the review
    install's own test installs it in a fresh environment)."""
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "review.yml").read_text())
    steps = [s for s in flow["jobs"]["review"]["steps"] if "run" in s]
    page = (ROOT / "docs" / "review.md").read_text()
    setup = steps[0]["run"].strip()
    assert setup in page and "pull_request" in flow[True] and flow["permissions"]["pull-requests"] == "write"
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
def test_the_review_install_brings_no_training_dependency_and_runs_review_and_the_check(repo, tmp_path):
    """The review workflow's set-up step, as it is, in a clone of the fixture: a fresh environment with the project
    and no extra, at requirements.txt's pins. Neither torch, ray nor transformers is installed, and `modern-gpt
    review HEAD` and `review --check` run there (the check passes: the fixture's reports are what its runs give)."""
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "review.yml").read_text())
    setup = next(s for s in flow["jobs"]["review"]["steps"] if "run" in s)["run"]
    clone = tmp_path / "review"
    sh(["git", "clone", "-q", str(repo), str(clone)], tmp_path)
    env = {k: v for k, v in ENV.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix))
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", setup], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    python = clone / ".venv" / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import importlib.util as u; print([m for m in ('torch', 'ray', "
                            "'transformers', 'pandas', 'matplotlib') if u.find_spec(m)])"],
                           capture_output=True, text=True, env=env)
    assert found.stdout.strip() == "[]", found.stdout + found.stderr
    review_ = subprocess.run([str(clone / ".venv" / "bin" / "modern-gpt"), "review", "HEAD"], cwd=clone, env=env,
                             capture_output=True, text=True, timeout=300)
    assert review_.returncode == 0 and review_.stdout.startswith("## modern-gpt review"), review_.stderr
    check = subprocess.run([str(clone / ".venv" / "bin" / "modern-gpt"), "review", "--check"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and "the committed reports are what" in check.stdout, check.stdout + check.stderr
