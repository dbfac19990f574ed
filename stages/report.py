"""Stage report: reports/ablation.md from exactly the runs the plan lists, with its plot, metrics and CSVs.

Reads configs/plan.json (rows, labels, seeds, optional runs: A/A, leave one out, reruns, the learning-rate
grid), each listed run's record (data/runs/<row>/<seed>/run.json: never a glob, so runs left from a larger
grid are never read), the corpus meta and its floor. Every figure comes from those files, provenance and the machine too: this stage
measures nothing, so the same runs give the same report on any machine.
"""

import sys
from pathlib import Path

# This checkout's src/, not the installed copy: DVC experiments and the tests run copies (test_stage_deps.py).
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse
import math

import pandas as pd

from modern_gpt.core import params
from modern_gpt.core.files import read_json, write_bytes, write_json
from modern_gpt.core.records import RunRecord
from modern_gpt.core.stage import stage_main
from modern_gpt.reporting.plots import LR_COLUMNS, curves, lr_plot, lr_rows, plot
from modern_gpt.reporting.provenance import provenance
from modern_gpt.reporting.report import Rerun, build
from modern_gpt.reporting.results import ladder_results, row_result
from modern_gpt.reporting.settings import report_settings
from modern_gpt.reporting.sweep import SweepRow, at_best, cell

PARAMS = ("report",)               # the params sections this stage reads: dvc.yaml lists the same
GENERATED = "data/generated"       # the generate stage's folder: its floor applies to its corpus only


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="reports")
    ap.add_argument("--runs", default="data/runs")
    ap.add_argument("--serve", default="data/serve", help="the serve stage's <row>.json files")
    args = ap.parse_args()
    section = params.load(PARAMS, optional=PARAMS)["report"]
    listing = read_json("configs/plan.json")
    meta = read_json("data/tokenized/meta.json")

    def records(slug: str, seeds: list[int]) -> list[RunRecord]:
        return [RunRecord.from_dict(read_json(f), str(f))
                for f in (Path(args.runs) / slug / f"{seed}" / "run.json" for seed in seeds)]

    generated = Path(meta["corpus"]["path"]) == Path(GENERATED) / "sanskrit.txt"
    floor = read_json(Path(GENERATED) / "floor.json") if generated else None
    s = report_settings(section, train_chars_per_token=meta["train"]["chars"] / meta["train"]["tokens"],
                        val_chars_per_token=meta["val"]["chars"] / meta["val"]["tokens"],
                        floor=floor["nats_per_char"] if floor else None)
    seeds = listing["seeds"]
    rule = dict(confidence=s.confidence, param_tolerance=s.param_tolerance, band=s.borderline)
    rows = ladder_results([(r["slug"], r["label"], records(r["slug"], seeds)) for r in listing["rows"]], **rule)
    aa = None
    if listing["aa_seeds"]:
        aa = row_result("baseline", rows[0].label, records("baseline", listing["aa_seeds"]), rows[0], **rule)
    loo = [row_result(r["slug"], r["label"], records(r["slug"], seeds), rows[-1], **rule)
           for r in listing["leave_one_out"]]
    reruns: list[Rerun] = []
    by_slug = {r.slug: r for r in rows}
    for r in listing["rerun"]:                       # in ladder order: the row above, rerun too, comes first
        original = by_slug[r["of"]]
        above = rows[rows.index(original) - 1] if original is not rows[0] else None
        ref = next((x.again for x in reruns if above is not None and x.original is above), above)
        reruns.append(Rerun(original, row_result(r["slug"], r["label"], records(r["slug"], seeds), ref, **rule)))
    grid = listing["sweep"]                          # on its own seeds; its runs at train.lr are the main table's
    sweep = [SweepRow(by_slug[r["slug"]], tuple(sorted(
        [cell(1.0, grid["lr"], [x for x in by_slug[r["slug"]].runs if x.seed in grid["seeds"]], s.spike_threshold)]
        + [cell(c["multiple"], grid["lr"] * c["multiple"], records(c["slug"], grid["seeds"]), s.spike_threshold)
           for c in r["runs"]], key=lambda c: c.multiple))) for r in grid["rows"]]
    pairs = at_best(sweep, rows, confidence=s.confidence, band_sds=s.borderline)
    info = provenance(meta, rows, floor, match_params=listing["match_params"],
                      hf_classes=[(r["label"], r["hf_class"]) for r in listing["rows"]],
                      others=[*([aa] if aa else []), *loo, *(x.again for x in reruns),
                              *(row_result(c.runs[0].row, f"{r.row.label} at lr {c.lr:g}", c.runs)
                                for r in sweep for c in r.cells if not c.main)])
    report = build(rows, info, s, "val_curves.png", aa=aa, loo=loo, reruns=reruns,
                   perturbation=listing["rerun_perturbation"], sweep=sweep, pairs=pairs, sweep_plot="lr_sweep.png",
                   uniform=math.log(meta["vocab_size"]), serve=[read_json(Path(args.serve) / f"{r['slug']}.json") for r in listing["rows"]])
    out = Path(args.out)
    lr_table = lr_rows(sweep)
    lr_plot(lr_table, out / "lr_sweep.png")
    write_bytes(out / "lr_sweep.csv", pd.DataFrame(lr_table, columns=LR_COLUMNS).to_csv(
        index=False, float_format="%.6g").encode())
    curve_rows = curves(rows)
    plot(curve_rows, out / "val_curves.png", s.floor * s.val_chars_per_token if floor else None)
    write_bytes(out / "ablation.md", report.markdown.encode())
    write_json(out / "metrics.json", report.metrics)
    write_bytes(out / "ablation.csv", pd.DataFrame(report.table).to_csv(index=False, float_format="%.6g").encode())
    write_bytes(out / "val_curves.csv", pd.DataFrame(curve_rows).to_csv(index=False, float_format="%.6g").encode())


if __name__ == "__main__":
    stage_main(main)
