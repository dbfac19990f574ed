"""Stage report: reports/ablation.md from exactly the runs the plan lists, with its plot, metrics and CSVs.

Reads configs/plan.json (records.stages.Plan: the ladders' rows, labels, seeds, optional runs: A/A, leave one
out, reruns, the learning-rate grid), each listed run's record (data/runs/<slug>/<seed>/run.json: never a glob, so
runs left from a larger grid are never read), each row's serve record (data/serve/<row>.json, a ServeRecord), the
corpus meta and its floor; each listed run's config file (configs/<slug>.json) for its md5 in reports/runs.csv. This
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
from modern_gpt.reporting.write import write_report
from modern_gpt.reporting.runs_csv import file_md5, run_lines

PARAMS = ("report",)               # the params sections this stage reads: dvc.yaml lists the same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--configs", required=True, help="the plan stage's folder: plan.json and each run's <row>.json")
    ap.add_argument("--meta", required=True, help="the tokenize stage's meta.json")
    ap.add_argument("--generated", required=True,
                    help="the generate stage's folder: its floor.json applies to its sanskrit.txt only")
    ap.add_argument("--runs", required=True, help="the runs' folder: <row>/<seed>/run.json")
    ap.add_argument("--serve", required=True, help="the serve stage's <row>.json files")
    ap.add_argument("--out", required=True, help="the reports folder")
    args = ap.parse_args()
    section = params.load(PARAMS, optional=PARAMS)["report"]
    configs = Path(args.configs)
    _, _, results = from_files(Path(args.runs), Path(args.serve), configs / "plan.json", Path(args.meta),
                                        Path(args.generated), section)
    lines = run_lines(results, lambda slug: file_md5(configs / f"{slug}.json"))
    write_report(results, Path(args.out), lines)


if __name__ == "__main__":
    stage_main(main)
