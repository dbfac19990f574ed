"""`modern-gpt reproduce [REPORT ...] [--settle] [--remote NAME] [--jobs N|auto]`: an off-by-default report
(reports/beyond.md, scale.md, catalogue.md) made again from what is committed.

Each report's settings are reports/overlays/<report>.yaml (review/overlays.py): the command applies the named
ones to params.yaml, runs the pipeline as `modern-gpt repro` does (or `modern-gpt settle`, with --settle), and puts
the committed params.yaml, dvc.lock, configs/ and every other report back, keeping only the named reports' files as
the pipeline wrote them: `git status` then says whether each is what its runs give. Stopped or failed, it leaves
params.yaml, dvc.lock and configs/ as the pipeline had them, so the same command goes on there at once (DVC finds
every finished run recorded). With --settle (one report), the runs settle adds go into that report's overlay. With
--remote, DVC's run-cache is pulled from that remote first, and pushed to it every few minutes while runs train
and at the end; that remote is DVC's default while the pipeline runs (.dvc/config.local) and every stage runs with
--pull, so on a fresh clone with the same remote the same command restores the finished runs from it, outputs and
all, and trains none of them again.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import threading
from pathlib import Path
from typing import Iterator

from ..review import overlays
from ..config.params import parse_yaml
from ..core.errors import ConfigError, DataError
from .support.dvc_calls import check_params, dvc

PUSH_EVERY = 600                    # seconds between pushes of the run-cache to --remote while runs train
COMMITTED = ("params.yaml", "dvc.lock", "configs")     # put back as committed after the pipeline ran


def add_parsers(sub) -> None:
    s = sub.add_parser("reproduce", help="make an off-by-default report again from what is committed: its overlay "
                                         "(reports/overlays/) on params.yaml, the pipeline, the rest put back")
    s.add_argument("reports", nargs="*", metavar="REPORT",
                   help="beyond, scale, catalogue (reports/overlays/<REPORT>.yaml); default: every one, together")
    s.add_argument("--jobs", default="auto", metavar="N|auto", help="training runs at once, as modern-gpt repro's")
    s.add_argument("--settle", action="store_true",
                   help="modern-gpt settle instead of repro: the runs it adds go into the report's overlay")
    s.add_argument("--remote", metavar="NAME", default=None,
                   help="a DVC remote (dvc remote add) to pull the run-cache from first and push it to as runs end")
    s.set_defaults(func=cmd_reproduce)


def files_of(name: str) -> set[str]:
    """The report files an overlay makes, under reports/."""
    return {f"reports/{f}" for f in overlays.FILES[name]}


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    if done.returncode:
        raise DataError(f"git {' '.join(args)}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return done.stdout


def restore(keep: set[str]) -> None:
    """params.yaml, dvc.lock, configs/ and the reports but `keep`, as HEAD has them (configs only a report's
    params planned go)."""
    git("checkout", "HEAD", "--", *COMMITTED)
    git("clean", "-q", "-f", "--", "configs")
    others = [p for p in git("ls-files", "reports").split() if p not in keep and not p.startswith("reports/overlays/")]
    git("checkout", "HEAD", "--", *others)


class Pusher:
    """`dvc push --run-cache -r NAME` every PUSH_EVERY seconds in the background, and once at the end."""

    def __init__(self, remote: str | None) -> None:
        self.remote, self.stop = remote, threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True) if remote else None

    def push(self) -> None:
        done = dvc("--wait-for-lock", "push", "--run-cache", "-r", self.remote, check=False)
        print(f"reproduce: run-cache pushed to {self.remote}" if not done.returncode else
              f"reproduce: push to {self.remote} failed ({done.stderr.strip().splitlines()[-1:]}); going on",
              flush=True)

    def loop(self) -> None:
        while not self.stop.wait(PUSH_EVERY):
            self.push()

    def __enter__(self) -> "Pusher":
        if self.thread:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread:
            self.stop.set()
            self.thread.join()
            self.push()


@contextlib.contextmanager
def as_default_remote(name: str | None) -> Iterator[None]:
    """`name` is DVC's default remote while the pipeline runs (in .dvc/config.local, which git ignores; put back
    after): a run-cache entry pulled from it names outputs that `dvc repro --pull` fetches from the default remote
    only, so a finished run is restored from it, not trained again. None: nothing changes."""
    local = Path(".dvc", "config.local")
    before = local.read_bytes() if local.is_file() else None
    if name:
        dvc("remote", "default", "--local", name)
    try:
        yield
    finally:
        if name and before is None:
            local.unlink(missing_ok=True)
        elif name:
            local.write_bytes(before)


def cmd_reproduce(args: argparse.Namespace) -> None:
    from .repro import cmd_repro
    from .settle import cmd_settle

    if not Path("dvc.yaml").is_file():
        raise DataError("dvc.yaml: not found here; run modern-gpt reproduce at the root of a clone of the project")
    known = overlays.names()
    chosen = args.reports or known
    layers = [overlays.read(name) for name in chosen]     # an unknown report: one line naming those there are
    if args.settle and len(chosen) != 1:
        raise ConfigError(f"--settle: name one report, whose overlay gains the runs settle adds (got "
                          f"{', '.join(chosen)}); allowed: {', '.join(known)}")
    before = apply_overlays(chosen, layers, args.settle)
    mine = set().union(*(files_of(n) for n in chosen))
    try:
        if args.remote:
            dvc("pull", "--run-cache", "-r", args.remote, check=False)
        with Pusher(args.remote), as_default_remote(args.remote):
            run = argparse.Namespace(jobs=args.jobs, ray=None, clone_from=None, workdir=None, rounds=0,
                                     pull=bool(args.remote))
            (cmd_settle if args.settle else cmd_repro)(run)
        if args.settle:                           # what settle wrote into params.yaml goes to the overlay
            after = parse_yaml(Path("params.yaml").read_text(encoding="utf-8"), "params.yaml")
            if new := overlays.added_runs(before, after):
                overlays.with_runs(chosen[0], new)
                print(f"reproduce: {overlays.FOLDER}/{chosen[0]}.yaml gains {len(new)} settled runs", flush=True)
    except BaseException:                         # interrupted or failed: the overlays and the finished runs stay
        print("reproduce: stopped; params.yaml, dvc.lock and configs/ keep the overlays and every finished run, so "
              "the same command goes on from here, training none of them again (`git checkout params.yaml "
              "dvc.lock configs && git clean -f configs` puts them back)", flush=True)
        raise
    restore(mine)
    say_how_each_came_out(chosen, mine)


def apply_overlays(chosen: list[str], layers: list[dict], settle: bool) -> dict:
    """params.yaml becomes HEAD's with the chosen overlays on top (already so: an interrupted run goes on), after
    checking that nothing reproduce puts back has changed since HEAD; HEAD's params, parsed."""
    committed = git("show", "HEAD:params.yaml")
    applied = overlays.apply(committed, layers)
    again = Path("params.yaml").read_text(encoding="utf-8") == applied and not settle   # an interrupted run
    changed = [line[3:] for line in git("status", "--porcelain", "--", *COMMITTED, "reports").splitlines()
               if not line[3:].startswith(f"{overlays.FOLDER}/")
               and not (again and line[3:].split("/")[0] in (*COMMITTED, "reports"))]
    if changed:
        raise DataError(f"{changed[0]}: changed since HEAD; reproduce applies its overlays to the committed params "
                        "and puts them, and the other reports, back after: commit or stash first")
    check_params(parse_yaml(applied, "params.yaml"))             # refused before params.yaml is touched
    Path("params.yaml").write_text(applied, encoding="utf-8")
    print(f"reproduce: params.yaml with {', '.join(f'{overlays.FOLDER}/{n}.yaml' for n in chosen)} on top"
          + (" (already: going on from an interrupted run)" if again else ""), flush=True)
    return parse_yaml(committed, "params.yaml")


def say_how_each_came_out(chosen: list[str], mine: set[str]) -> None:
    """One line per report: the same bytes as committed, differs (git diff shows how), or new."""
    status = git("status", "--porcelain", "--untracked-files=all", "--", *sorted(mine)).splitlines()
    for name in chosen:
        new = [line[3:] for line in status if line[3:] in files_of(name) and line.startswith("??")]
        differ = [line[3:] for line in status if line[3:] in files_of(name) and not line.startswith("??")]
        print(f"reproduce: {name}: " + (
            f"differs from the committed one ({', '.join(differ)}): git diff shows how" if differ else
            f"new, nothing committed to compare with ({', '.join(new)})" if new else "the same bytes as committed"),
            flush=True)
