"""Stage report: reports/ablation.md from exactly the runs the plan lists, with its plot, metrics and CSVs.

Reads configs/plan.json (records.stages.Plan: the ladders' rows, labels, seeds, optional runs: A/A, leave one
out, reruns, the learning-rate grid), each listed run's record (data/runs/<row>/<seed>/run.json: never a glob, so
runs left from a larger grid are never read), each row's serve record (data/serve/<row>.json, a ServeRecord), the
corpus meta and its floor; each listed run's config file (configs/<row>.json) for its md5 in reports/runs.csv. This
stage measures nothing,
so the same runs give the same report on any machine (reporting.collect).
"""

import sys
from pathlib import Path

# This checkout's src/, not the installed copy: DVC experiments and the tests run copies (test_stage_deps.py).
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse

from modern_gpt.config import params
from modern_gpt.core.stage import stage_main
from modern_gpt.reporting.collect import from_files
from modern_gpt.reporting.files import write_report
from modern_gpt.reporting.runs_csv import file_md5, run_lines

PARAMS = ("report",)               # the params sections this stage reads: dvc.yaml lists the same
GENERATED = "data/generated"       # the generate stage's folder: its floor applies to its corpus only


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="reports")
    ap.add_argument("--runs", default="data/runs")
    ap.add_argument("--serve", default="data/serve", help="the serve stage's <row>.json files")
    args = ap.parse_args()
    section = params.load(PARAMS, optional=PARAMS)["report"]
    plan, records, results = from_files(Path(args.runs), Path(args.serve), Path("configs/plan.json"),
                                        Path("data/tokenized/meta.json"), Path(GENERATED), section)
    lines = run_lines(plan, records, lambda slug: file_md5(Path("configs") / f"{slug}.json"))
    write_report(results, Path(args.out), lines)


if __name__ == "__main__":
    stage_main(main)
