"""Core slots (core/cores.py) and the runner's share of the cores (cli/repro.py): the project's processes side
by side never run more threads than the machine has cores."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from modern_gpt.cli.repro import WAITING, at_once, parse_jobs
from modern_gpt.core.cores import hold_cores, usable_cores
from modern_gpt.core.errors import ConfigError

HOLDER = """
import sys, time
from pathlib import Path
from modern_gpt.core.cores import hold_cores
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
    assert (started - jobs) * threads == 0 or (jobs + 1) * threads > cores
