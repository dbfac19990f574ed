"""The plan: every row's resolved config, and the list of runs the report reads.

A run's config file holds only what training reads (model and train); labels and the row order go
into the plan file, which no run depends on, so rewording a label retrains nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core.errors import ConfigError
from ..hf.convert import hf_class
from ..nn import GPT
from ..nn.model import match_mlp
from ..config.validate import check_split_sizes
from .ladder import Row
from .params import Params


def plan(p: Params, meta: dict) -> tuple[dict[str, dict], dict[str, Any]]:
    """({slug: the run config}, the plan file) for a tokenized corpus described by `meta`."""
    rows = p.rows(meta["vocab_size"])
    loo = p.leave_one_out(meta["vocab_size"])
    beyond = p.beyond_rows(meta["vocab_size"])
    check_split_sizes(meta["train"]["tokens"], meta["val"]["tokens"], block_size=rows[0].config.block_size)
    if p.ablation.match_params:
        target = GPT(rows[0].config).num_params(non_embedding=True)
        rows, loo, beyond = ([rows[0]] + [dataclasses.replace(r, config=match_mlp(r.config, target)) for r in rows[1:]],
                             [dataclasses.replace(r, config=match_mlp(r.config, target)) for r in loo],
                             [dataclasses.replace(r, config=match_mlp(r.config, target)) for r in beyond])
    # the second ladder's row 0 is the main ladder's last row, whose runs it reads: its config is that row's
    configs = {r.slug: {"model": r.config.to_dict(), "train": (r.train or p.train).to_dict()}
               for r in rows + loo + beyond[1:]}
    perturbed = dataclasses.replace(p.train, init_perturbation=p.ablation.rerun_perturbation)
    rerun = [r for r in rows if r.slug in p.ablation.rerun]
    configs |= {f"rerun_{r.slug}": {"model": r.config.to_dict(), "train": perturbed.to_dict()} for r in rerun}

    # the learning-rate grid: each covered row at each multiple; slugs as dvc.yaml spells them (str of the number)
    sweep = []
    if p.sweep.lr:
        for r in (r for r in rows + beyond[1:] if r.slug in p.sweep.rows):
            runs = []
            for m in p.sweep.lr:
                base = r.train or p.train                 # a second-ladder row's own optimiser, at the same multiples
                scaled = dataclasses.replace(base, lr=base.lr * m, min_lr=base.min_lr * m)
                configs[sweep_slug(r.slug, m)] = {"model": configs[r.slug]["model"], "train": scaled.to_dict()}
                runs.append({"multiple": float(m), "slug": sweep_slug(r.slug, m)})
            sweep.append({"slug": r.slug, "runs": runs})

    def entry(r: Row) -> dict:
        return {"slug": r.slug, "label": r.label, "changed": r.changed, "hf_class": hf_name(r.config)}

    return configs, {
        "rows": [entry(r) for r in rows],
        "seeds": p.seeds,
        "aa_seeds": p.ablation.aa_seeds,
        "leave_one_out": [entry(r) for r in loo],
        "rerun": [{**entry(r), "slug": f"rerun_{r.slug}", "of": r.slug} for r in rerun],
        "rerun_perturbation": perturbed.init_perturbation,
        "match_params": p.ablation.match_params,
        "sweep": {"lr": p.train.lr, "rows": sweep, "seeds": p.sweep.seeds},
        "beyond": [entry(r) for r in beyond],
    }


def sweep_slug(row: str, multiple: float) -> str:
    """A grid run's config and run folder: sweep_<row>_x<multiple>, the multiple as dvc.yaml's ${item.lr}."""
    return f"sweep_{row}_x{multiple}"


def hf_name(cfg) -> str | None:
    """The Hugging Face class that computes what this row computes (`modern-gpt export`), or None."""
    try:
        return hf_class(cfg)
    except ConfigError:
        return None
