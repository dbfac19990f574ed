"""Stage report: reports/ablation.md from exactly ladder × seeds, with its plot, metrics and CSVs.

Reads each row's config (configs/), each run's metrics (data/results/<row>/<seed>.json) for the
seeds in params.yaml (never a glob: a shrunk grid leaves stale files behind), and the corpus meta.
"""

import sys
from pathlib import Path

# Run the code dvc.yaml hashes (src/ of this checkout), and keep stages/ off the path, where
# tokenize.py would shadow the standard library module of that name.
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse
import hashlib
import platform
from importlib.metadata import version

import pandas as pd
import yaml

from modern_gpt import params
from modern_gpt.files import read_json, stage_main, write_bytes, write_json
from modern_gpt.report import RowRuns, Settings, build, plot

GENERATED = "data/generated/sanskrit.txt"


def training_code() -> list[str]:
    """The code every train@* stage depends on, as dvc.yaml lists it (this stage depends on it too)."""
    deps = yaml.safe_load(Path("dvc.yaml").read_text())["stages"]["train"]["deps"]
    return [d for d in deps if d.startswith(("stages/", "src/"))]


def code_hash(paths: list[str]) -> str:
    """One short md5 over the files' md5s, which are the ones dvc.lock records."""
    h = hashlib.md5()
    for p in paths:
        h.update(f"{p} {hashlib.md5(Path(p).read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()[:12]


def provenance(p: params.Params, meta: dict, rows: list[RowRuns], floor: dict | None) -> dict:
    m, t = p.model, p.train
    code = training_code()
    tokens = t.iters * t.batch_size * m["block_size"]
    c = meta["corpus"]
    info = {
        "corpus": f"`{c['path']}`: {c['chars']:,} characters, {c['bytes']:,} bytes, md5 `{c['md5']}`",
        "split": f"contiguous; the last {p.val_fraction:.0%} validates ({meta['val']['chars']:,} characters, "
                 f"{meta['val']['tokens']:,} tokens; train {meta['train']['tokens']:,} tokens)",
        "tokenizer": f"{meta['tokenizer']}, vocabulary {meta['vocab_size']:,}",
        "model shape": f"{m['n_layer']} layers, {m['n_head']} heads, {m['n_embd']} wide, context {m['block_size']}, "
                       f"dropout {m['dropout']}",
        "seeds": ", ".join(map(str, p.seeds)),
        "training": f"{t.iters:,} steps × {t.batch_size} sequences × {m['block_size']} tokens = {tokens:,} tokens per "
                    f"run ({tokens / meta['train']['tokens']:.2f} passes over the train split); AdamW, lr {t.lr:g} → "
                    f"{t.min_lr:g} (warm-up {t.warmup_iters}, cosine), weight decay {t.weight_decay:g}, clip {t.grad_clip:g}",
        "evaluation": f"{t.eval_iters * t.batch_size} fixed windows of {m['block_size']} tokens per split, "
                      f"every {t.eval_interval} steps and at the end",
        "training code": f"md5 `{code_hash(code)}` over the md5s (as in dvc.lock) of `{code[0]}` and "
                         f"`src/modern_gpt/{{{','.join(Path(x).stem for x in code[1:])}}}.py`",
        "software": f"torch {', '.join(sorted({r['torch'] for rr in rows for r in rr.runs}))}, DVC {version('dvc')}, "
                    f"Python {platform.python_version()}",
        "device": ", ".join(sorted({r["device"] for rr in rows for r in rr.runs})),
    }
    if p.ablation["match_params"]:
        info["parameter matching"] = "on: MLP hidden sizes " + ", ".join(
            f"{r.label} {r.spec['model']['mlp_hidden'] or 'default'}" for r in rows)
    if floor is not None:
        info["floor"] = (f"{floor['nats_per_char']:.4f} ± {floor['se']:.4f} nats per character "
                         f"({floor['nats_per_char'] / 0.6931471805599453:.3f} bpc): the entropy of the process that "
                         "generated the corpus, the lowest loss any model can reach")
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="reports")
    args = ap.parse_args()
    p = params.load()
    meta = read_json("data/tokenized/meta.json")

    def row(slug: str, seeds: list[int], results: str | None = None) -> RowRuns:
        return RowRuns(read_json(f"configs/{slug}.json"),
                       [read_json(f"data/results/{results or slug}/{seed}.json") for seed in seeds])

    rows = [row(s, p.seeds) for s in ["baseline", *p.ladder]]
    aa = row("baseline", p.ablation["aa_seeds"], "aa") if p.ablation["aa_seeds"] else None
    loo = [row(f"loo_{flag}", p.seeds) for flag in p.ablation["leave_one_out"]]
    floor = read_json("data/generated/floor.json") if Path(p.corpus) == Path(GENERATED) else None
    settings = Settings(
        confidence=p.report["confidence"], memorised_below=p.report["memorised_below"],
        overfit_rise=p.report["overfit_rise"], param_tolerance=p.report["param_tolerance"],
        train_chars_per_token=meta["train"]["chars"] / meta["train"]["tokens"],
        val_chars_per_token=meta["val"]["chars"] / meta["val"]["tokens"],
        floor=floor["nats_per_char"] if floor else None,
    )
    report = build(rows, provenance(p, meta, rows, floor), settings, "val_curves.png", aa=aa, loo=loo)
    out = Path(args.out)
    floor_per_token = settings.floor * settings.val_chars_per_token if floor else None
    plot(report.curves, out / "val_curves.png", floor_per_token)
    write_bytes(out / "ablation.md", report.markdown.encode())
    write_json(out / "metrics.json", report.metrics)
    table = pd.DataFrame(report.table + report.extra)
    write_bytes(out / "ablation.csv", table.to_csv(index=False, float_format="%.6g").encode())
    write_bytes(out / "val_curves.csv", pd.DataFrame(report.curves).to_csv(index=False, float_format="%.6g").encode())


if __name__ == "__main__":
    stage_main(main)
