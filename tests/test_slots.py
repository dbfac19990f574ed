"""Core slots (core/slots.py) and the runner's share of the cores (cli/repro.py): the project's processes side
by side never run more threads than the machine has cores."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from modern_gpt.cli.repro import Devices, at_once, devices, parse_jobs
from modern_gpt.core.slots import RUNS_PER_GPU, WAITING, hold_cores, hold_gpus, run_gpus, usable_cores, visible_gpus
from modern_gpt.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def stand_in_params(train: dict, launch: str) -> str:
    """The project's params.yaml with `train` merged in and `launch` set: modern-gpt repro checks every value first."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    return yaml.safe_dump({**params, "train": {**params["train"], **train}, "launch": launch}, sort_keys=False)

HOLDER = """
import sys, time
from pathlib import Path
from modern_gpt.core.slots import hold_cores
with hold_cores(int(sys.argv[1]), cores=2, folder=Path(sys.argv[2])):
    print("held", flush=True)
    time.sleep(600)
"""


def holder(n: int, folder) -> subprocess.Popen:
    """Another process holding n of 2 slots until it is killed."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(n), str(folder)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def acquire_in_background(n: int, folder) -> threading.Event:
    got = threading.Event()

    def take():
        with hold_cores(n, cores=2, folder=folder):
            got.set()
    threading.Thread(target=take, daemon=True).start()
    return got


def test_a_run_waits_while_others_hold_every_core_and_goes_on_when_the_holder_is_killed(tmp_path, capsys):
    proc = holder(2, tmp_path)
    try:
        got = acquire_in_background(1, tmp_path)
        assert not got.wait(1.5)                          # both cores are taken: it waits, it does not oversubscribe
        told = capsys.readouterr().err
        assert "waiting for 1 of 2 cores" in told and WAITING in told     # the runner reads that it waited
        os.kill(proc.pid, signal.SIGKILL)                 # kill -9: the kernel drops the flock, no stale slot
        proc.wait()
        assert got.wait(5)
    finally:
        proc.kill()


def test_slots_are_taken_all_or_nothing_so_one_free_core_serves_a_one_thread_run_only(tmp_path):
    proc = holder(1, tmp_path)
    try:
        two = acquire_in_background(2, tmp_path)
        assert not two.wait(1.5)                          # two threads need two free cores
        one = acquire_in_background(1, tmp_path)
        assert one.wait(3)                                # the other core is free, and nothing holds it half
    finally:
        proc.kill()
        proc.wait()
    assert two.wait(5)


def test_never_more_threads_than_cores(tmp_path):
    with hold_cores(16, cores=2, folder=tmp_path) as n:
        assert n == 2
    with hold_cores(0, cores=2, folder=tmp_path) as n:
        assert n == 1


@pytest.mark.parametrize("jobs, cores, expected", [
    ("auto", 2, (2, 1)), ("auto", 16, (16, 1)), ("1", 2, (1, 2)), ("2", 2, (2, 1)), ("3", 2, (3, 1)),
    ("2", 16, (2, 8)),
])
def test_each_job_gets_its_share_of_the_cores(jobs, cores, expected):
    assert parse_jobs(jobs, cores) == expected
    n, threads = expected
    assert min(n, cores) * threads <= cores


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5", ""])
def test_a_bad_jobs_value_is_one_line_naming_it(bad):
    with pytest.raises(ConfigError, match=r"^--jobs '.*': give a whole number of training runs at once"):
        parse_jobs(bad, 2)


def test_the_cli_refuses_a_bad_jobs_value_in_one_line():
    out = subprocess.run([sys.executable, "-m", "modern_gpt", "repro", "--jobs", "0"], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == ("modern-gpt: error: --jobs '0': give a whole number of training runs at once "
                                  "(1 or more), or auto")


def test_usable_cores_is_this_process_affinity():
    assert usable_cores() == len(os.sched_getaffinity(0)) >= 1


@pytest.mark.parametrize("jobs, threads, cores, started", [
    (2, 1, 2, 3),        # auto on 2 cores: a third waits for a core while its DVC and Python start
    (1, 2, 2, 2),
    (16, 1, 16, 17),
    (3, 1, 5, 3),        # 5 cores would let a fourth train beside three: none is started ahead
])
def test_one_run_starts_ahead_only_where_it_must_wait_for_a_core(jobs, threads, cores, started):
    assert at_once(jobs, threads, cores) == started


@pytest.mark.parametrize("jobs, threads, cores, gpu_slots, per_run, started", [
    (8, 8, 64, 8, 1, 9),     # one run per GPU: a ninth waits for a GPU while its DVC and Python start
    (2, 8, 64, 8, 1, 2),     # two runs of eight GPUs: a third would train on a free GPU, so none starts ahead
    (4, 4, 16, 8, 2, 5),     # torchrun over 2 GPUs each: a fifth run waits for two
])
def test_on_gpus_one_run_starts_ahead_only_where_it_must_wait_for_a_gpu(jobs, threads, cores, gpu_slots, per_run,
                                                                        started):
    assert at_once(jobs, threads, cores, gpu_slots, per_run) == started
    assert (started - jobs) * threads == 0 or (jobs + 1) * threads > cores


# GPU slots: the device list is faked through CUDA_VISIBLE_DEVICES (what CUDA itself reads); no GPU is needed, since
# a slot is taken before CUDA starts and CUDA is never started here.

GPU_HOLDER = """
import os, sys, time
from pathlib import Path
from modern_gpt.core.slots import run_gpus
with run_gpus("cuda", folder=Path(sys.argv[1])) as held:
    print(",".join(held), os.environ["CUDA_VISIBLE_DEVICES"], flush=True)
    time.sleep(600)
"""


def gpu_holder(folder, visible: str, **env) -> tuple[subprocess.Popen, str]:
    """Another process, a run on CUDA, holding its GPU until it is killed; and what it says it holds."""
    proc = subprocess.Popen([sys.executable, "-c", GPU_HOLDER, str(folder)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": visible, **env})
    held, seen = proc.stdout.readline().split()
    assert held == seen                               # CUDA will show the run its GPU only
    return proc, held


def test_runs_on_cuda_each_take_a_gpu_of_their_own_and_a_killed_holder_frees_its_gpu(tmp_path, monkeypatch):
    procs = []
    try:
        first, a = gpu_holder(tmp_path, "0,1")
        second, b = gpu_holder(tmp_path, "0,1")
        procs += [first, second]
        assert {a, b} == {"0", "1"}                   # never the same GPU twice
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
        got = threading.Event()

        def third():
            with run_gpus("cuda", folder=tmp_path) as held:
                got.held = held
                got.set()
        threading.Thread(target=third, daemon=True).start()
        assert not got.wait(1.5)                      # both GPUs are held: the third run waits
        os.kill(second.pid, signal.SIGKILL)           # kill -9 of a holder: the kernel drops its flock
        second.wait()
        assert got.wait(5) and got.held == [b]        # the third takes the freed GPU, not the held one
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_with_more_runs_than_gpus_every_gpu_gets_one_before_any_gets_two(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    held = []
    with contextlib.ExitStack() as stack:
        for _ in range(4):
            held += stack.enter_context(hold_gpus(1, ["0", "1"], per_gpu=2, folder=tmp_path))
            assert os.environ["CUDA_VISIBLE_DEVICES"] == held[-1]
        assert held == ["0", "1", "0", "1"]
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"             # this process's own list again


def test_a_run_on_two_gpus_takes_both_together_or_waits(tmp_path):
    proc, one = gpu_holder(tmp_path, "0,1,2")
    try:
        with hold_gpus(2, ["0", "1", "2"], folder=tmp_path) as held:
            assert sorted(held) == sorted({"0", "1", "2"} - {one})
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("visible", ["", "-1", "0", "GPU-8e1c,GPU-77aa"])
def test_where_a_run_trains_follows_train_device_and_the_visible_gpus(visible, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    gpus = [] if visible in ("", "-1") else visible.split(",")
    assert visible_gpus() == gpus
    with run_gpus("cpu", folder=tmp_path) as held:
        assert held == [] and os.environ["CUDA_VISIBLE_DEVICES"] == visible
    with run_gpus("auto", folder=tmp_path) as held:
        assert held == gpus[:1]
    if not gpus:
        with pytest.raises(ConfigError, match=r"^train.device='cuda': no CUDA device is visible here .*allowed: cpu, "
                                              r"cuda, auto$"):
            with run_gpus("cuda", folder=tmp_path):
                pass


def test_a_run_on_more_gpus_than_are_visible_is_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"^a run on 3 GPUs together: 2 visible here \(0, 1\); allowed: at most 2"):
        with hold_gpus(3, ["0", "1"], folder=tmp_path):
            pass


TORCHRUN_RANK = """
import json, os, sys, time
from pathlib import Path
from modern_gpt.core.slots import run_gpus
with run_gpus("cuda", folder=Path(sys.argv[1])) as held:
    print(json.dumps({"rank": int(os.environ["LOCAL_RANK"]), "held": held,
                      "visible": os.environ["CUDA_VISIBLE_DEVICES"]}), flush=True)
    time.sleep(1)
"""


def test_a_torchrun_run_takes_nproc_gpus_together_and_every_rank_sees_the_same(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(TORCHRUN_RANK)
    proc, one = gpu_holder(tmp_path, "0,1,2")          # another run holds one of the three
    try:
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                               str(script), str(tmp_path)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": "0,1,2", "OMP_NUM_THREADS": "1"})
    finally:
        proc.kill()
        proc.wait()
    assert done.returncode == 0, done.stderr
    ranks = sorted((json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")),
                   key=lambda r: r["rank"])
    free = ",".join(sorted({"0", "1", "2"} - {one}))
    assert [r["rank"] for r in ranks] == [0, 1] and {r["visible"] for r in ranks} == {free}
    assert not list(tmp_path.glob("torchrun-*"))       # the hand-off is gone with the run


@pytest.mark.parametrize("jobs, cores, gpus, per_run, expected", [
    ("auto", 16, 8, 1, (8, 2)), ("auto", 64, 8, 1, (8, 8)), ("auto", 16, 8, 2, (4, 4)), ("auto", 2, 3, 1, (3, 1)),
    ("16", 64, 8, 1, (16, 4)), ("2", 16, 8, 1, (2, 8)),
])
def test_on_gpus_auto_is_one_run_per_gpu_with_cores_over_jobs_threads(jobs, cores, gpus, per_run, expected):
    assert parse_jobs(jobs, cores, gpus, per_run) == expected
    n = expected[0]
    assert Devices(tuple(map(str, range(gpus))), per_run).env(n)[RUNS_PER_GPU] == str(-(-n * per_run // gpus))


@pytest.mark.parametrize("train, launch, visible, error", [
    ({"device": "cuda"}, "python", "", "train.device='cuda': no CUDA device is visible here"),
    ({"device": "cuda"}, "torchrun --standalone --nproc_per_node=4", "0,1,2",
     "launch='torchrun --standalone --nproc_per_node=4': each run trains on 4 GPUs together, 3 are visible here "
     "(0, 1, 2); allowed: --nproc_per_node=3 or fewer"),
])
def test_the_runner_refuses_runs_it_cannot_give_their_gpus_before_anything_starts(train, launch, visible, error,
                                                                                tmp_path):
    (tmp_path / "params.yaml").write_text(stand_in_params(train, launch))
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    out = subprocess.run([sys.executable, "-m", "modern_gpt", "repro"], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": visible})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith(f"modern-gpt: error: {error}"), out.stderr


def test_on_the_cpu_the_runner_looks_for_no_gpu(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"train": {"device": "cpu"}}))
    monkeypatch.setattr("modern_gpt.core.slots.visible_gpus", lambda: pytest.fail("looked for GPUs"))
    assert devices() == Devices()
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"train": {"device": "auto"}}))
    monkeypatch.setattr("modern_gpt.core.slots.visible_gpus", lambda: [])
    assert devices() == Devices()                                     # auto without a GPU: the CPU
    monkeypatch.setattr("modern_gpt.core.slots.visible_gpus", lambda: ["0", "1"])
    assert devices() == Devices(("0", "1"), 1)


FAKE_RUN = """
import json, os, sys, time
from pathlib import Path
from modern_gpt.core.slots import run_gpus
with run_gpus("cuda") as held:                 # what stages/run.py does before CUDA starts
    def say(event):
        with open(os.environ["FAKE_RUN_LOG"], "a") as log:
            log.write(json.dumps({"run": sys.argv[1], "event": event, "pid": os.getpid(), "t": time.time(),
                                  "held": held, "visible": os.environ["CUDA_VISIBLE_DEVICES"],
                                  "threads": os.environ["OMP_NUM_THREADS"]}) + "\\n")
    say("start")
    time.sleep(2)
    say("end")
Path("out", sys.argv[1]).write_text("trained")
"""


@pytest.mark.slow
@pytest.mark.light        # three DVC processes at once, but their runs sleep: about half a core in all
def test_the_runner_trains_one_run_per_fake_gpu_and_a_kill_9_frees_a_gpu_for_the_next(tmp_path):
    """`modern-gpt repro` with the real dvc over six fake runs that take their GPU slot as stages/run.py does, on
    three fake GPUs (CUDA_VISIBLE_DEVICES=0,1,2, train.device cuda). --jobs auto is one run per GPU; each started
    run sees one GPU and cores / jobs threads; no GPU is ever held by two runs, across a kill -9 of a holder (the
    runner stops in one line, and the same command trains the rest) included."""
    (tmp_path / "params.yaml").write_text(stand_in_params({"device": "cuda"}, "python"))
    (tmp_path / "fake_run.py").write_text(FAKE_RUN)
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"run": {
        "matrix": {"seed": list(range(6))}, "cmd": "python fake_run.py ${item.seed}", "deps": ["fake_run.py"],
        "outs": ["out/${item.seed}"]}}}))
    (tmp_path / "out").mkdir()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0,1,2", "FAKE_RUN_LOG": str(tmp_path / "runs.jsonl"),
           "MODERN_GPT_CORES_DIR": str(tmp_path / "slots"), "DVC_NO_ANALYTICS": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for cmd in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=tmp_path, check=True, env=env)
    events = lambda: [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()] \
        if (tmp_path / "runs.jsonl").exists() else []
    runner = [sys.executable, "-m", "modern_gpt", "repro"]
    first = subprocess.Popen(runner, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        while len([e for e in events() if e["event"] == "start"]) < 3 and time.time() < deadline:
            time.sleep(0.1)
        victim = next(e for e in events() if e["event"] == "start")
        os.kill(victim["pid"], signal.SIGKILL)               # kill -9 of a run holding its GPU
        killed_at = time.time()
        out, err = first.communicate(timeout=300)
    finally:
        first.kill()                                         # a runner that hangs does not outlive the test
    assert first.returncode == 2 and f"run@{victim['run']}: failed" in out
    assert len(err.strip().splitlines()) == 1 and "run the same command again" in err
    again = subprocess.run(runner, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "at a time, 1 GPU and 1 thread each" in again.stdout and "GPUs 0,1,2" in again.stdout
    assert sorted(p.name for p in (tmp_path / "out").glob("[0-9]")) == [str(k) for k in range(6)]

    starts = [e for e in events() if e["event"] == "start"]
    threads = str(max(1, usable_cores() // 3))
    assert all(e["visible"] in ("0", "1", "2") and e["held"] == [e["visible"]] and e["threads"] == threads
               for e in starts)
    ends = {(e["run"], e["pid"]): e["t"] for e in events() if e["event"] == "end"}
    spans = sorted((e["visible"], e["t"], ends.get((e["run"], e["pid"]), killed_at)) for e in starts)
    for (gpu, _, end), (next_gpu, start, _) in zip(spans, spans[1:]):
        assert gpu != next_gpu or start >= end, spans        # one run at a time on each GPU
    assert any(e["visible"] == victim["visible"] and e["t"] > killed_at for e in starts)   # its GPU was freed
