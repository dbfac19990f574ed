"""Stage plan: each row's fully resolved config in its own file, configs/<row>.json.

The ladder's rows, and with ablation.leave_one_out the full model with one change reverted
(configs/loo_<flag>.json). With ablation.match_params each row's MLP hidden size is set so that
its non-embedding parameter count matches the baseline's. A training run depends on its row's
file alone (plus data and code), so a flag change retrains only the rows whose resolved config
changed: a rewritten but identical file changes nothing.

It also clears data/runs/ and data/results/ of runs that the params no longer ask for (a shrunk
seed list, a switched-off option): the report depends on the results folder as a whole, and a
stale file there would change its hash. Cleared runs stay in DVC's cache, and the run-cache
restores them when the params ask for them again.
"""

import sys
from pathlib import Path

# Run the code dvc.yaml hashes (src/ of this checkout), and keep stages/ off the path, where
# tokenize.py would shadow the standard library module of that name.
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse
import dataclasses
import shutil

from modern_gpt import params
from modern_gpt.data import check_split_sizes
from modern_gpt.files import read_json, stage_main, write_json
from modern_gpt.model import GPT, match_mlp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--meta", default="data/tokenized/meta.json")
    ap.add_argument("--out", default="configs")
    ap.add_argument("--runs", default="data/runs")
    ap.add_argument("--results", default="data/results")
    args = ap.parse_args()
    p = params.load()
    meta = read_json(args.meta)
    rows = p.rows(meta["vocab_size"])
    rows += p.leave_one_out(meta["vocab_size"])
    check_split_sizes(meta["train"]["tokens"], meta["val"]["tokens"], block_size=rows[0].config.block_size)
    if p.ablation["match_params"]:
        target = GPT(rows[0].config).num_params(non_embedding=True)
        rows = [rows[0]] + [dataclasses.replace(r, config=match_mlp(r.config, target)) for r in rows[1:]]
    out = Path(args.out)
    for stale in out.glob("*.json"):
        stale.unlink()
    for index, row in enumerate(rows):
        write_json(out / f"{row.slug}.json", {
            "index": index, "row": row.slug, "label": row.label, "changed": row.changed,
            "model": row.config.to_dict(), "train": p.train.to_dict(),
        })
    wanted = {(row.slug, str(seed)) for row in rows for seed in p.seeds}
    wanted |= {("aa", str(seed)) for seed in p.ablation["aa_seeds"]}
    for run in Path(args.runs).glob("*/*"):
        if (run.parent.name, run.name) not in wanted:
            shutil.rmtree(run)
    for result in Path(args.results).glob("*/*.json"):
        if (result.parent.name, result.stem) not in wanted:
            result.unlink()
    for folder in [*Path(args.runs).glob("*"), *Path(args.results).glob("*")]:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


if __name__ == "__main__":
    stage_main(main)
