"""`modern-gpt settle [--jobs N|auto]`: more seeds only where a verdict is open, at the looks params.yaml's settle:
fixed before any run (settling/, docs/statistics.md "Settling an open verdict"). `modern-gpt levels LOOKS...`: the
interval level of a design of looks, simulated once and committed (stats/levels.csv), which the plan requires of every
design it judges at.

It runs the pipeline as `modern-gpt repro` does, reads the report's results (the same files, the same rule), and
for every comparison still open at a look adds the next look's seeds to each row it reads, as runs of settle.runs
in params.yaml (its comments and order kept: round-trip YAML, as DVC's `-S` writes); then again, until every
comparison is settled or at its cap. Ordinary DVC underneath: the committed params.yaml then lists every run that
exists, so `dvc repro` on a fresh clone trains exactly those, and a run once trained is never retrained because
another row got seeds (each added run is a stage of its own, settle@<slug>-<seed>).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import params as params_file
from ..config.sections import BAND_SDS, CONFIDENCE, PARSERS, SettleConfig
from ..core.errors import ConfigError, DataError
from .support.dvc_calls import check_params, stage_paths


def add_parsers(sub) -> None:
    s = sub.add_parser("settle", help="more seeds only where a verdict is open, at settle.looks: repro, look, add "
                                      "the next look's seeds to the open rows in params.yaml, until settled or at "
                                      "the cap")
    s.add_argument("--jobs", default="auto", metavar="N|auto", help="training runs at once, as modern-gpt repro's")
    s.add_argument("--rounds", type=int, default=0, metavar="N",
                   help="add seeds at most N times, then train them and stop (default 0: until settled or at the "
                        "cap); the same command later goes on from there")
    s.set_defaults(func=cmd_settle)
    lv = sub.add_parser("levels", help="the interval level of a design of looks (settle.looks), simulated and "
                                       "committed to src/modern_gpt/stats/levels.csv: the plan refuses a design "
                                       "without one")
    lv.add_argument("looks", type=int, nargs="+", metavar="N", help="the seed counts of the looks, increasing")
    lv.add_argument("--confidence", type=float, default=CONFIDENCE, help="report.confidence (default %(default)s)")
    lv.add_argument("--band", type=float, default=BAND_SDS, help="report.borderline (default %(default)s)")
    lv.set_defaults(func=cmd_levels)


def cmd_levels(args: argparse.Namespace) -> None:
    from ..stats.sequential import LEVELS_FILE, add_level, committed_levels

    have = len(committed_levels())
    level = add_level(args.looks, args.confidence, args.band, "added by modern-gpt levels")
    where = "added to" if len(committed_levels()) > have else "already in"
    print(f"levels: looks {args.looks} at confidence {args.confidence:g}, band {args.band:g}: level {level:g} "
          f"({where} {LEVELS_FILE})")


def cmd_settle(args: argparse.Namespace) -> None:
    from ..reporting.collect import from_files
    from ..reporting.comparisons import comparisons
    from ..settling.asked import asked_seeds
    from ..settling.record import add_runs
    from .repro import cmd_repro

    if not Path("dvc.yaml").is_file():
        raise DataError("dvc.yaml: not found here; run modern-gpt settle at the root of a clone of the project")
    check_params()
    settle: SettleConfig = PARSERS["settle"](params_file.load(("settle",), optional=("settle",))["settle"], "settle")
    if not settle.on:
        raise ConfigError(f"settle.looks={settle.looks!r}: give at least two looks (seed counts, the first seeds:'s "
                          "count), e.g. [5, 8, 12, 20]; settle adds seeds only at them")
    added, round_ = 0, 0
    while True:                       # each round moves every open comparison to its next look: it ends at the cap
        round_ += 1
        cmd_repro(argparse.Namespace(jobs=args.jobs, ray=None, clone_from=None, workdir=None,
                                     pull=getattr(args, "pull", False)))
        report = params_file.load(("report",), optional=("report",))["report"]
        where = stage_paths("report")             # the report stage's own inputs, as dvc.yaml gives them
        plan, _, results = from_files(Path(where["runs"]), Path(where["serve"]), Path(where["configs"]) / "plan.json",
                                      Path(where["meta"]), Path(where["generated"]), report)
        found = comparisons(results)
        has = {slug: len(plan.seeds_of(slug)) for a in found for slug in a.slugs}
        add = asked_seeds(found, has)
        settled = [a for a in found if a.look.settled]
        capped = [a for a in found if a.look.at_cap]
        print(f"settle, look {round_}: {len(found)} comparisons, {len(settled)} settled, {len(capped)} open at "
              f"the cap, {len(found) - len(settled) - len(capped)} open", flush=True)
        for a in found:
            if not a.look.settled:
                where = "at the cap" if a.look.at_cap else f"next look {a.look.next}"
                print(f"  open: {a.what} ({a.look.comparison.verdict.value} at {a.look.n} seeds; {where})",
                      flush=True)
        if not add or (args.rounds and round_ > args.rounds):
            break
        n = add_runs(Path("params.yaml"), add)
        added += n
        print(f"settle: params.yaml settle.runs gains {n} runs: "
              + "; ".join(f"{slug} {', '.join(map(str, seeds))}" for slug, seeds in add.items()), flush=True)
    ladder_rows = {r.slug for ladder in results.ladders for r in ladder.rows}
    most = max(len(plan.seeds_of(s)) for s in ladder_rows)
    every = (most - len(plan.seeds)) * len(ladder_rows)
    print(f"settle: done; {added} runs added this time, {sum(len(a.seeds) for a in plan.added)} in settle.runs in "
          f"all; the same seeds for every row ({most}, seeds: for all {len(ladder_rows)} ladder rows) would be "
          f"{every} runs", flush=True)
