"""`modern-gpt shard I/N`: which runs a worker takes, and its one-line errors (the workers themselves, with the
real dvc and a shared remote: test_e2e_machines.py)."""

import contextlib
import io
import json
import subprocess
import sys

import pytest

from modern_gpt.cli import main
from modern_gpt.cli.shard import parse_share, share
from modern_gpt.cli.support.dvc_calls import dvc_error


@pytest.mark.parametrize("n", [1, 2, 3, 5, 40])
def test_the_shares_of_n_workers_are_disjoint_and_cover_every_run_and_only_runs(n):
    names = ["generate", "tokenize", "plan", *[f"run@{r}-{s}" for r in ("baseline", "norm", "pos") for s in range(3)],
             *[f"sweep@qk_norm-{m}-{s}" for m in (4, 32) for s in range(3)], "serve@baseline", "report"]
    shares = [share(names, {"run", "sweep"}, i, n) for i in range(1, n + 1)]
    runs = [x for x in names if x.startswith(("run@", "sweep@"))]
    assert sorted(sum(shares, [])) == sorted(runs)
    assert max(map(len, shares)) - min(map(len, shares)) <= 1               # balanced to one run


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "1/0", "a/b", "1/2/3"])
def test_a_share_that_is_not_i_of_n_is_one_line(text, capsys):
    assert main(["shard", text]) == 2
    err = capsys.readouterr().err
    assert err == f"modern-gpt: error: shard {text!r}: give I/N, this worker's number I of N workers, 1 <= I <= N " \
                  "(e.g. 1/2)\n"
    assert parse_share(" 2/3 ") == (2, 3)


def test_shard_outside_a_project_or_without_a_default_remote_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["shard", "1/2"]) == 2
    assert capsys.readouterr().err == ("modern-gpt: error: dvc.yaml: not found here; run shard at the root of a "
                                       "clone of the project\n")
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], check=True)
    (tmp_path / "dvc.yaml").write_text("stages:\n  run:\n    cmd: python stages/run.py a 0\n    deps:\n    - x\n")
    assert main(["shard", "1/2", "--list"]) == 0 and capsys.readouterr().out == "run\n"
    assert main(["shard", "1/2"]) == 2
    assert capsys.readouterr().err.startswith("modern-gpt: error: DVC remote: none is the default; the workers "
                                              "share their runs through one: dvc remote add -d NAME URL")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dvc", ".dvcignore", ".git", "dvc.yaml"]


def test_a_failing_dvc_command_is_told_by_the_stage_s_own_line_else_dvc_s():
    def done(out: str, err: str) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess([], 1, out, err)
    stage = done("Running stage 'plan':\n", "error: model.bias='no': must be true or false\n"
                 "ERROR: failed to reproduce 'plan': failed to run: python stages/plan.py, exited with 2\n")
    assert dvc_error(stage) == "model.bias='no': must be true or false"
    assert dvc_error(done("", "ERROR: unexpected error - [Errno 20] Not a directory\n")) == \
        "unexpected error - [Errno 20] Not a directory"
    assert dvc_error(done("a\nlast words\n", "")) == "last words" and dvc_error(done("", "")) == "exit status 1"


def one_stage_project(path, cmd):
    """A DVC project at `path` (here) whose one stage, copy, runs `cmd` from x to y."""
    from dvc.repo import Repo
    subprocess.run(["git", "init", "-q"], check=True)
    Repo.init().close()
    (path / "x").write_text("in\n")
    (path / "dvc.yaml").write_text(f"stages:\n  copy:\n    cmd: {cmd}\n    deps: [x]\n    outs: [y]\n")


def mended(path):
    """mend_killed_writes(path) and what it printed. Not capsys: DVC's log handlers keep the stdout of the test
    that first imported DVC, which capsys closes when that test ends."""
    from modern_gpt.cli.support.dvc_calls import mend_killed_writes
    with contextlib.redirect_stdout(io.StringIO()) as out:
        removed = mend_killed_writes(path)
    return removed, out.getvalue()


def test_an_empty_dvc_lock_left_by_a_killed_dvc_is_removed_and_the_run_cache_restores_its_stages(tmp_path, monkeypatch):
    """DVC truncates dvc.lock, then writes it: a kill -9 in between leaves it empty, and DVC then refuses every
    command here. mend_killed_writes (the runner, shard and each unit call it first) removes an empty one only; the
    stage that had finished comes back from the run-cache, its command not run again."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    monkeypatch.chdir(tmp_path)
    one_stage_project(tmp_path, "cp x y && echo ran >> ../count")
    lock = tmp_path / "dvc.lock"
    with Repo() as repo:
        repo.reproduce()
    assert (tmp_path.parent / "count").read_text() == "ran\n" and "copy" in lock.read_text()
    lock.write_text("")                                                   # what the killed writer leaves
    with Repo() as repo, pytest.raises(DvcException, match="dvc.lock"):
        repo.status()
    assert mended(tmp_path) == ([lock], f"{lock}: empty, as a DVC process killed while writing it leaves it: "
                                "removed; dvc repro restores every stage that had finished from the run-cache\n")
    assert not lock.exists()
    with Repo() as repo:
        repo.reproduce()
        assert repo.status() == {}
    assert (tmp_path.parent / "count").read_text() == "ran\n" and "copy" in lock.read_text()   # restored, not run
    assert mended(tmp_path) == ([], "")                                   # a dvc.lock with something in it is DVC's
    lock.write_text("stages: {copy: [\n")
    assert mended(tmp_path) == ([], "") and lock.read_text() == "stages: {copy: [\n"
    lock.unlink()
    assert mended(tmp_path) == ([], "")


def test_a_cut_short_rwlock_left_by_a_killed_dvc_is_removed_and_the_stage_runs_again(tmp_path, monkeypatch):
    """DVC's lock file of who reads and writes which path (.dvc/tmp/rwlock) is written in place too: a kill -9 in
    the instant leaves it empty or cut short, and every stage DVC then runs here stops on it (CI met it in the
    runner's kill test). mend_killed_writes removes one that is not JSON, and only such a one."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    monkeypatch.chdir(tmp_path)
    one_stage_project(tmp_path, "cp x y")
    rwlock = tmp_path / ".dvc" / "tmp" / "rwlock"
    for left in ("", '{"write": {"y": {"pid": 1, "cmd": "dv'):                # empty, and cut mid-entry
        rwlock.write_text(left)
        with Repo() as repo, pytest.raises(DvcException, match="failed to reproduce 'copy'") as failed:
            repo.reproduce(force=True)
        assert "RWLock-file '.dvc/tmp/rwlock'. JSON structure is corrupted" in str(failed.value.__cause__)
        assert mended(tmp_path) == ([rwlock], f"{rwlock}: not JSON, as a DVC process killed while writing it leaves "
                                    "it: removed; DVC reads a missing one as empty\n")
        assert not rwlock.exists()
        with Repo() as repo:
            repo.reproduce(force=True)
            assert repo.status() == {}
    dead = subprocess.Popen(["true"])
    dead.wait()                                                           # JSON is DVC's, a dead process's entry too
    kept = json.dumps({"read": {}, "write": {str(tmp_path / "y"): {"pid": dead.pid, "cmd": "dvc repro"}}})
    rwlock.write_text(kept)
    assert mended(tmp_path) == ([], "") and rwlock.read_text() == kept
    with Repo() as repo:
        repo.reproduce(force=True)                                        # DVC drops the dead process's entry
    assert "pid" not in rwlock.read_text()
