"""End to end, more than one process or machine: the real `dvc` on a copy of this project in a temporary git repo,
at smoke size. The local runner (two runs at a time, a kill -9), SLURM's array scripts (two workers and the
aggregator), a worker that cannot write the remote, and real Ray clusters: with token authentication on or off, the
local one a driver starts, and what the tests' own clusters leave running after a failure (docs/machines.md)."""

import contextlib
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
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
import yaml

from e2e import (DVC, ENV, OPTION_RUNS, OPTION_SERVE, ROOT, ROWS, commit, edit, forget, project_copy, ran,
                 report_rows, run_cache_entries, set_params, sh, status)
from fakes import LABELS

pytestmark = pytest.mark.slow


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


def group_gone(group: int, timeout: float = 60.0) -> None:
    """Wait until no process of a killed process group is left (zombies included: DVC counts one as alive)."""
    deadline = time.time() + timeout
    while any(_pgid(p.pid) == group for p in psutil.process_iter()) and time.time() < deadline:
        time.sleep(0.05)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


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
        group_gone(runner.pid)         # its dvc child dies a moment after the runner: until then DVC's lock names it
        recorded += re.findall(r"\] (\S+): trained", log.read_text())
    assert recorded, "the second kill came after two runs had finished"
    # what DVC recorded before the kills: the runs printed, and any that finished in the instant before the kill,
    # recorded in dvc.lock by their own DVC process before the runner could print them. Unless the kill landed
    # while a DVC process was writing dvc.lock (DVC truncates it, then writes it): that leaves it empty (CI met it)
    text = (repo / "dvc.lock").read_text()
    locked = set(yaml.safe_load(text)["stages"]) & runs if text.strip() else set()
    assert set(recorded) <= locked or not text.strip()
    # the same command mends an empty dvc.lock, and an rwlock cut short (CI met that too): leave them as such a kill
    # does, so that every run shows the mending, and every run DVC had recorded comes back from the run-cache, none
    # trained again
    (repo / "dvc.lock").write_text("")
    (repo / ".dvc" / "tmp" / "rwlock").write_text('{"write": {"data/runs/')
    out = sh(cmd, repo).stdout
    assert out.startswith("dvc.lock: empty, as a DVC process killed while writing it leaves it: removed; ")
    assert "\n.dvc/tmp/rwlock: not JSON, as a DVC process killed while writing it leaves it: removed; " in out
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


# Ray: real local clusters of 2 CPUs, each started and stopped with its test. The Ray tests are both_cores: they run
# beside no other slow test, so a cluster's daemons load no other test. A cluster stops only what it started, also
# after a start that failed half-way: `ray start --head --block` leads a session of its own, which Ray's daemons,
# workers and the tasks' processes stay in, each of them carries MARK in its environment (a process that left the
# session carries it too), and the cluster's --temp-dir is its own. Never `ray stop`: that stops every Ray process of
# the user on the machine.

RAY = str(Path(sys.executable).parent / "ray")


REPRO = [sys.executable, "-m", "modern_gpt", "repro"]
MARK = "MODERN_GPT_TEST_RAY"         # in the environment of every process a test's Ray started: its temp dir
# A driver of the tests' own clusters (RayHead: already running, its address known) tries to connect 5 times, a
# second apart, where Ray tries 20 (ray/_private/node.py: _init_gcs_client, RAY_gcs_server_port_wait_time_s): a
# refused token is the same one-line refusal, 15 s sooner; a driver let in connects at its first try. The cluster's
# own processes and a local cluster that a driver starts keep Ray's 20.
DRIVER_TRIES = {"RAY_gcs_server_port_wait_time_s": "5"}


def free_port() -> int:
    """A local TCP port no process listens on (the system's pick, released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def own_processes(leader: int, mark: str, since: float) -> list[psutil.Process]:
    """The live processes that `leader` (started at `since`, in a session of its own) and what it started left: those
    of its session, and those whose environment holds MARK=`mark` (a child that left the session with setsid too).
    Each with its name in `.info`, readable once it is gone."""
    found = []
    for p in psutil.process_iter(["name"]):
        try:
            if p.create_time() < since or p.status() == psutil.STATUS_ZOMBIE:
                continue                     # older than the leader (a reused id), or dead and waiting for its parent
            if os.getsid(p.pid) == leader or p.environ().get(MARK) == mark:
                found.append(p)
        except (psutil.Error, OSError):      # gone meanwhile, or another user's
            pass
    return found


def stop_own(leader: subprocess.Popen, mark: str, since: float, grace: float = 10.0) -> list[psutil.Process]:
    """Stop what `leader` started, and nothing else: SIGTERM to the leader (`ray start --block` then stops its
    cluster as `ray stop` would; a driver, the local cluster it started), and after at most `grace` seconds SIGKILL
    to each of its processes left (own_processes), again until none is. Returns every process it found running."""
    found = {p.pid: p for p in own_processes(leader.pid, mark, since)}
    if leader.poll() is None:
        leader.terminate()
    deadline = time.time() + grace
    while (leader.poll() is None or own_processes(leader.pid, mark, since)) and time.time() < deadline:
        time.sleep(0.1)
    deadline = time.time() + 60
    while left := own_processes(leader.pid, mark, since):
        assert time.time() < deadline, f"still running after SIGKILL: {left}"
        for p in left:
            found.setdefault(p.pid, p)
            try:
                p.kill()
            except psutil.Error:
                pass
        time.sleep(0.1)
    leader.wait(timeout=60)
    return list(found.values())


@dataclass(frozen=True)
class RayCluster:
    address: str
    env: dict[str, str]        # a driver's: a home of its own, and the cluster's token (if it has one) where Ray looks


@dataclass
class RayHead:
    """A local Ray cluster of 2 CPUs: `ray start --head --block` in a session of its own (start), with token
    authentication on and a token of its own, or off; its --temp-dir its own (short: Ray's sockets live below it,
    108 bytes a path). Neither it nor its drivers read the home directory: they get an empty one, so whatever ~/.ray
    holds changes nothing. running() waits for it and stops it on leaving the block, however far it got."""
    proc: subprocess.Popen
    since: float                       # when `ray start` started (psutil's clock)
    temp: Path
    port: int
    log: Path
    driver_env: dict[str, str]
    stopped: list[psutil.Process] = field(default_factory=list)    # what stop() found running

    @classmethod
    def start(cls, root: Path, *, auth: bool = True) -> "RayHead":
        home = root / "home"
        home.mkdir(parents=True)
        base = {**{k: v for k, v in ENV.items() if not k.startswith("RAY_")}, "HOME": str(home),
                "RAY_USAGE_STATS_ENABLED": "0"}
        if auth:
            token = root / "cluster-token"
            token.write_text(secrets.token_hex(32))
            cluster = {**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
            driver = {**base, "RAY_AUTH_TOKEN_PATH": str(token), **DRIVER_TRIES}      # RAY_AUTH_MODE unset
        else:
            cluster, driver = {**base, "RAY_AUTH_MODE": "disabled"}, {**base, **DRIVER_TRIES}
        temp, port, log = Path(tempfile.mkdtemp(prefix="mgpt-ray-")), free_port(), root / "ray-start.log"
        try:
            with log.open("w") as out:
                proc = subprocess.Popen(
                    [RAY, "start", "--head", "--block", f"--port={port}", f"--temp-dir={temp}", "--num-cpus=2",
                     "--include-dashboard=false", f"--dashboard-port={free_port()}", "--object-store-memory=80000000",
                     "--disable-usage-stats"],
                    env={**cluster, MARK: str(temp)}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError:
            shutil.rmtree(temp)
            raise
        return cls(proc, psutil.Process(proc.pid).create_time(), temp, port, log, driver)

    def processes(self) -> list[psutil.Process]:
        return own_processes(self.proc.pid, str(self.temp), self.since)

    def wait_started(self, timeout: float) -> None:
        """Until `ray start` has written the cluster's address into its temp dir (once the head runs) and the port
        answers; `ray start` exiting first, or `timeout` seconds passing, is an error."""
        deadline = time.time() + timeout
        while not (self.temp / "ray_current_cluster").exists():
            if self.proc.poll() is not None or time.time() > deadline:
                why = f"exited ({self.proc.returncode})" if self.proc.returncode is not None else \
                    f"no cluster after {timeout:.0f} s"
                raise RuntimeError(f"ray start: {why}:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)
        socket.create_connection(("127.0.0.1", self.port), timeout=10).close()

    def stop(self) -> None:
        """Every process of the head stopped (stop_own): a head that runs is first asked to stop (SIGTERM: Ray's own
        shutdown, seconds), one that never started is killed at once (its `ray start` would wait for what is not
        there); its temp dir removed."""
        started = (self.temp / "ray_current_cluster").exists()
        self.stopped = stop_own(self.proc, str(self.temp), self.since, grace=10.0 if started else 0.0)
        shutil.rmtree(self.temp, ignore_errors=True)

    @contextlib.contextmanager
    def running(self, timeout: float = 300) -> Iterator[RayCluster]:
        try:
            self.wait_started(timeout)
            yield RayCluster(f"127.0.0.1:{self.port}", self.driver_env)
        finally:
            self.stop()


@pytest.fixture
def ray_cluster(tmp_path_factory):
    """A cluster with token authentication on (RAY_AUTH_MODE=token) and a token of its own, which the drivers
    find through RAY_AUTH_TOKEN_PATH alone (RayHead)."""
    with RayHead.start(tmp_path_factory.mktemp("ray")).running() as cluster:
        yield cluster


@pytest.fixture
def ray_cluster_without_auth(tmp_path_factory):
    """A cluster with token authentication off (RAY_AUTH_MODE=disabled); its drivers are given no token."""
    with RayHead.start(tmp_path_factory.mktemp("ray"), auth=False).running() as cluster:
        yield cluster


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
        f"modern-gpt: error: --ray: the Ray cluster at {ray_cluster.address} refused this driver's token (from "
        "RAY_AUTH_TOKEN): its token "
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


def unrecorded(repo: Path, remote: Path, runs: list[str]) -> None:
    """`runs` taken out of the remote's run-cache (forget) and out of dvc.lock, committed: a driver with every other
    stage recorded and its outputs in place, whose `dvc status` lists only these, so that only these become Ray
    tasks, each trained (a clone with no dvc.lock, driver_clone, makes a task of every run)."""
    forget(repo, remote, runs)
    path = repo / "dvc.lock"
    lock = yaml.safe_load(path.read_text())
    for run in runs:
        del lock["stages"][run]
    path.write_text(yaml.safe_dump(lock, sort_keys=False))
    commit(repo, f"{', '.join(runs)} not recorded")


def drive(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A driver run with exactly `env` (sh lays its env over this process's, which may hold RAY_ variables)."""
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def stale_home(path: Path) -> Path:
    """A home whose ~/.ray/auth_token holds a token no cluster here has (another cluster's, left behind)."""
    (path / ".ray").mkdir(parents=True)
    (path / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    return path


def alive(p: psutil.Process) -> bool:
    """Whether the process runs (neither gone nor a zombie waiting for its parent)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# a driver whose one task leads a process group of its own (as modern-gpt's tasks do), starts a process in that group
# and one in a session of its own, writes the three ids into the file argv[2] names, then waits
LINGERING_TASK = """
import os, subprocess, sys, time
import ray
ray.init(address=sys.argv[1], log_to_driver=False)
@ray.remote
def task(path):
    os.setpgid(0, 0)
    group = subprocess.Popen(["sleep", "600"])
    alone = subprocess.Popen(["sleep", "600"], start_new_session=True)
    with open(path + ".part", "w") as f:
        f.write(f"{os.getpid()} {group.pid} {alone.pid}")
    os.rename(path + ".part", path)
    time.sleep(600)
ray.get(task.remote(sys.argv[2]))
"""


@pytest.mark.both_cores
def test_a_ray_cluster_of_the_tests_stops_what_it_started_and_nothing_else_after_a_failed_start_or_test(tmp_path):
    """The Ray tests' clusters (RayHead) after a failure. Beside them, a process `ray stop` would take for one of
    Ray's (its arguments name default_worker.py). A head that hangs half-way (its `ray start` frozen once its GCS
    server runs) fails the fixture's wait, and nothing of it is left, nor its temp dir (a head on a port another
    process held was the half-way head once: its GCS server could die before the test saw it run). A head that
    starts, with a task running whose worker leads a process group of its own and has started a process in it and
    one in a session of its own: a test failing inside the block leaves none of them running. The process that looks
    like Ray's runs on, and no Ray process that was running before was among those stopped."""
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)",
                              "ray/_private/workers/default_worker.py"], start_new_session=True)
    before = {p.pid for p in psutil.process_iter(["cmdline"]) if re.search(
        r"raylet|gcs_server|ray::|default_worker\.py|ray start", " ".join(p.info["cmdline"] or []))}
    driver = None
    try:
        failed = RayHead.start(tmp_path / "failed")
        deadline = time.time() + 300                         # half-way: its GCS server runs, and `ray start`, frozen
        while ("gcs_server" not in {p.info["name"] for p in failed.processes()} and failed.proc.poll() is None
               and time.time() < deadline):
            time.sleep(0.02)
        os.kill(failed.proc.pid, signal.SIGSTOP)             # there, never writes the cluster's address (seconds later)
        with pytest.raises(RuntimeError, match="ray start: no cluster after 0 s"):
            with failed.running(timeout=0):                 # the fixture's wait gives up there
                pass
        assert "gcs_server" in {p.info["name"] for p in failed.stopped}          # it failed half-way
        assert not [p for p in failed.stopped if alive(p)]
        assert not failed.processes() and not failed.temp.exists()

        head, ids = RayHead.start(tmp_path / "failing"), tmp_path / "ids"
        with pytest.raises(RuntimeError, match="the test failed"):
            with head.running() as cluster:
                driver = subprocess.Popen([sys.executable, "-c", LINGERING_TASK, cluster.address, str(ids)],
                                          env={**cluster.env, "RAY_AUTH_MODE": "token"}, start_new_session=True,
                                          stdout=(tmp_path / "driver.log").open("w"), stderr=subprocess.STDOUT)
                deadline = time.time() + 300
                while not ids.exists() and driver.poll() is None and time.time() < deadline:
                    time.sleep(0.1)
                assert ids.exists(), (tmp_path / "driver.log").read_text()
                worker, group, alone = (psutil.Process(int(pid)) for pid in ids.read_text().split())
                assert os.getpgid(worker.pid) == os.getpgid(group.pid) == worker.pid != os.getsid(worker.pid)
                assert os.getsid(alone.pid) == alone.pid                # it left the cluster's session
                assert {worker.pid, group.pid, alone.pid} <= {p.pid for p in head.processes()}
                raise RuntimeError("the test failed")
        assert not [p for p in (worker, group, alone, *head.stopped) if alive(p)]
        assert not head.processes() and not head.temp.exists()
        assert decoy.poll() is None
        assert not before & {p.pid for p in [*failed.stopped, *head.stopped]}
    finally:
        for proc in (driver, decoy):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.mark.both_cores
def test_repro_on_ray_is_refused_in_one_line_for_a_stale_home_token_and_let_in_with_the_clusters_token(
        ray_cluster, tmp_path):
    """`modern-gpt repro --ray ADDRESS` against the fixture's cluster (token authentication on), from a driver whose
    home holds a stale ~/.ray/auth_token, RAY_AUTH_TOKEN and RAY_AUTH_TOKEN_PATH unset: the driver sends that token
    (ray_runs.driver_auth), and the cluster's refusal is one line, before anything runs. Given the cluster's token
    in RAY_AUTH_TOKEN_PATH too, the driver sends that one instead (Ray's order) and is let in: with train.device
    cuda committed, its refusal is then the next one, that the cluster has no GPU. The project: a copy with nothing
    built (both refusals come before DVC runs anything)."""
    repo = project_copy(tmp_path)
    set_params(repo, {"train": {"device": "cuda"}})
    commit(repo, "on CUDA")
    cmd = [*REPRO, "--ray", ray_cluster.address, "--workdir", str(tmp_path / "nodes")]
    home = stale_home(tmp_path / "home")
    stale = {**{k: v for k, v in ray_cluster.env.items() if k != "RAY_AUTH_TOKEN_PATH"}, "HOME": str(home)}
    out = drive(cmd, repo, stale)
    assert out.returncode == 2 and out.stderr.strip() == (
        f"modern-gpt: error: --ray: the Ray cluster at {ray_cluster.address} refused this driver's token (from "
        "~/.ray/auth_token, which a local `modern-gpt repro --ray` may have written): its token "
        "authentication is on; give the driver the cluster's token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
        "~/.ray/auth_token (docs/machines.md)"), out.stderr
    out = drive(cmd, repo, {**ray_cluster.env, "HOME": str(home)})
    assert out.returncode == 2 and out.stderr.strip() == (
        "modern-gpt: error: train.device='cuda': the Ray cluster has no GPU; allowed: cpu, cuda, auto"), out.stderr
    assert not (tmp_path / "nodes").exists() and not (repo / "data").exists()


@pytest.mark.both_cores
def test_repro_on_ray_reaches_a_cluster_without_token_authentication_with_no_token_or_a_stale_one(
        options_and_remote, ray_cluster_without_auth, tmp_path):
    """`modern-gpt repro --ray ADDRESS` against a cluster with token authentication off. A driver with no token
    anywhere connects: in a clone with train.device cuda committed, the refusal it gives next, in one line before
    any task, is that the cluster has no GPU. A driver whose home holds a stale ~/.ray/auth_token (another
    cluster's; RAY_AUTH_MODE unset) sends it (ray_runs.driver_auth), and the cluster ignores it: the one run missing
    from the driver's dvc.lock and from the remote is trained as a Ray task and pushed, and `dvc repro --pull`
    writes the report, training nothing."""
    repo, remote = options_and_remote, tmp_path / "modern-gpt-remote"
    address, env = ray_cluster_without_auth.address, ray_cluster_without_auth.env
    cmd = [*REPRO, "--ray", address, "--workdir", str(tmp_path / "nodes")]
    probe = driver_clone(repo, tmp_path, "probe")
    set_params(probe, {"train": {"device": "cuda"}})
    commit(probe, "on CUDA")
    out = drive(cmd, probe, env)
    assert out.returncode == 2 and out.stderr.strip() == (
        "modern-gpt: error: train.device='cuda': the Ray cluster has no GPU; allowed: cpu, cuda, auto"), out.stderr

    run = sorted(OPTION_RUNS)[0]
    unrecorded(repo, remote, [run])
    out = drive(cmd, repo, {**env, "HOME": str(stale_home(tmp_path / "home"))})
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^1 training runs as Ray tasks, 1 CPU each; ", out.stdout, re.M), out.stdout
    assert re.findall(r"\] (\S+): (\w+) \(", out.stdout) == [(run, "trained")]
    assert sorted(trained_per_run(remote).values()) == [1] * len(OPTION_RUNS)
    assert "Running stage 'report'" in out.stdout and not ran(out.stdout) & OPTION_RUNS


@pytest.mark.both_cores
def test_repro_on_a_local_ray_started_by_the_driver_trains_and_leaves_nothing_running(options_and_remote, tmp_path):
    """`modern-gpt repro --ray` with no address: the driver starts a local Ray cluster of this machine's cores (its
    temp dir where RAY_TMPDIR says; a home whose ~/.ray/auth_token is stale, another cluster's), runs the one run
    missing from its dvc.lock and from the remote as a task, which trains it and pushes it, stops the cluster, and
    `dvc repro --pull` writes the report. Ray 2.60 turns token authentication on for a local cluster and takes the
    token it finds in ~/.ray/auth_token as the cluster's own, so the stale one changes nothing and stays as it was.
    Once the driver has exited, no process it started is left running (its session, and whatever carries its
    MARK)."""
    repo, remote = options_and_remote, tmp_path / "modern-gpt-remote"
    run = sorted(OPTION_RUNS)[-1]
    unrecorded(repo, remote, [run])
    home = stale_home(tmp_path / "home")
    token = (home / ".ray" / "auth_token").read_text()
    temp = Path(tempfile.mkdtemp(prefix="mgpt-ray-"))
    env = {**{k: v for k, v in ENV.items() if not k.startswith("RAY_")}, "HOME": str(home),
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_TMPDIR": str(temp), MARK: str(temp)}
    log = tmp_path / "driver.log"
    with log.open("w") as out:
        proc = subprocess.Popen([*REPRO, "--ray", "--workdir", str(tmp_path / "nodes")], cwd=repo, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    since = psutil.Process(proc.pid).create_time()
    try:
        assert proc.wait(timeout=900) == 0, log.read_text()
        deadline = time.time() + 10                  # Ray's processes take a moment to go once the driver is gone
        while (left := own_processes(proc.pid, str(temp), since)) and time.time() < deadline:
            time.sleep(0.1)
        assert not left, [(p.pid, p.info["name"]) for p in left]
        assert list((temp / "ray").glob("session_*"))           # the local cluster's temp dir: where RAY_TMPDIR says
    finally:
        stop_own(proc, str(temp), since)
        shutil.rmtree(temp, ignore_errors=True)
    out = log.read_text()
    assert re.search(r"^1 training runs as Ray tasks, 1 CPU each; ", out, re.M), out
    assert re.findall(r"\] (\S+): (\w+) \(", out) == [(run, "trained")]
    assert sorted(trained_per_run(remote).values()) == [1] * len(OPTION_RUNS)
    assert "Running stage 'report'" in out and not ran(out) & OPTION_RUNS
    assert (home / ".ray" / "auth_token").read_text() == token
