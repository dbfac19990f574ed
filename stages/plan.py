"""Stage plan: each run slug's resolved config in its own file, configs/<slug>.json, and configs/plan.json.

A slug's config holds only what training reads (model, train), so a flag change retrains only the
runs whose resolved config changed (a rewritten but identical file changes nothing), and rewording
a label retrains nothing. plan.json lists the rows (labels, order), seeds and optional runs for the
report. With ablation.match_params each row's MLP hidden size is set so that its non-embedding
parameter count matches the baseline's. This stage writes only configs/, which it owns.
"""

import sys
from pathlib import Path

# This checkout's src/, not the installed copy: DVC experiments and the tests run copies (test_stage_deps.py).
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse

from modern_gpt.config import params
from modern_gpt.config.sections import OPTIONAL, SECTIONS
from modern_gpt.core.files import read_json, write_json
from modern_gpt.core.stage import stage_main
from modern_gpt.pipeline.ladder_params import check_all
from modern_gpt.pipeline.plan import plan
from modern_gpt.records.inputs import CorpusMeta

PARAMS = SECTIONS                  # every section (dvc.yaml: all of params.yaml), each checked before any run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--meta", required=True, help="the tokenize stage's meta.json")
    ap.add_argument("--out", required=True, help="the configs folder: <row>.json and plan.json")
    args = ap.parse_args()
    p = check_all(params.load(PARAMS, optional=OPTIONAL))     # an unknown section is refused there, by name
    configs, planned = plan(p, CorpusMeta.from_dict(read_json(args.meta), args.meta))
    out = Path(args.out)
    for stale in out.glob("*.json"):             # configs of rows the params no longer have
        if stale.stem not in configs and stale.name != "plan.json":
            stale.unlink()
    for slug, config in configs.items():
        write_json(out / f"{slug}.json", config.to_dict())
    write_json(out / "plan.json", planned.to_dict())


if __name__ == "__main__":
    stage_main(main)
