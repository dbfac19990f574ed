"""What a change did to each slug's runs: the same slug on two commits, paired by seed, judged once.

Words as in reporting/runs_csv.py: a row is a ladder row, a run one (slug, seed) training run, a slug names a run's
config and folder. Seed s gives every slug the same batches on any commit with the same tokenized corpus (corpus,
split and tokenizer: one md5 in dvc.lock). So a slug's run of seed s on BASE and here is a pair, and `compare()`
judges here against BASE with the spread and interval the table uses, once, on every seed both sides ran, at
report.confidence: one look. That is not the table's rule, which judges each comparison at its looks (settle.looks)
at a stricter level per look (the level that keeps the whole sequence of looks as honest as one look at
report.confidence): a review is a single comparison on seeds fixed before it is made, so the one-look level is its
honest level. The table's own verdicts, on each side, are shown beside it (verdict_changes). Where the tokens
differ, a seed no longer means the same batches: each slug's runs are then set side by side unpaired, without a
verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..config.sections import PARSERS
from ..stats.calibration import RERUN_SD, RERUN_SD_BY_FAMILY
from ..reporting.runs_csv import RunLine
from ..stats.paired import Comparison, Summary, compare, pooled_sd, summarize
from .sides import Side

# A slug whose inputs did not change may still move on another CPU: each run by about its family's RERUN_SD of the
# seed sd of the slug's runs, rms (measured between two CPUs: stats/calibration.py). The largest of a slug's
# moves past this many of those is more than rounding explains: on the measured pair of CPUs, one slug of 11
# (tests/test_review.py).
RERUN_BAND_RUNS = 4.0


@dataclass(frozen=True)
class SlugDiff:
    """One slug present on both sides: its runs (one per seed) on each, and here against BASE."""
    family: str
    slug: str                      # its runs' config and folder (data/runs/<slug>/): its identity across commits,
                                   # with the family (runs.csv's run column)
    row: str                       # the ladder row it trains (runs.csv's row column)
    size: str | None               # scale.sizes' name; None: model:'s shape
    lr: float
    inputs_changed: bool           # its config file's, its training code's or the tokens' md5 differs
    seeds: tuple[int, ...]         # on both sides: the pairs
    base: Summary                  # val loss over those seeds
    here: Summary
    vs: Comparison | None          # here against BASE, paired by seed (None: not paired)
    delta: float | None            # here - BASE: the mean paired Δ, or the difference of the means unpaired
    moved: float                   # the largest |Δ| of one seed
    rerun_band: float | None       # how far another CPU's rounding moves one run of this slug


@dataclass(frozen=True)
class Review:
    base: str
    here: str
    paired: bool                               # the same tokens on both sides: seeds pair
    tokens: tuple[str | None, str | None]      # the tokenized corpus's md5 on each side
    params: tuple[tuple[str, Any, Any], ...]   # (key, BASE's value, here's) for each params key that differs
    configs: tuple[str, ...]                   # slugs whose config file differs, was added or removed (of those
                                               # runs.csv lists on either side)
    code: tuple[tuple[str, ...], tuple[str, ...]]       # the training code's md5s on each side
    machines: tuple[tuple[str, ...], tuple[str, ...]]   # the machines that trained each side's runs
    slugs: tuple[SlugDiff, ...]                # in here's order (BASE's for the rest)
    verdicts: tuple[tuple[str, str, str, str], ...]     # (row, label here, BASE's verdict, here's) that differ
    one_side: tuple[tuple[str, str, tuple[int, ...]], ...]   # (side, slug, seeds) present on one side only
    confidence: float

    @property
    def changed(self) -> list[SlugDiff]:
        return [r for r in self.slugs if r.inputs_changed]

    @property
    def moved(self) -> list[SlugDiff]:
        """Slugs whose inputs did not change, moved further than the rerun band."""
        return [r for r in self.slugs if not r.inputs_changed and r.rerun_band is not None and r.moved > r.rerun_band]

    @property
    def drifted(self) -> list[SlugDiff]:
        """Slugs whose inputs did not change, moved within the rerun band (another CPU's rounding)."""
        return [r for r in self.slugs if not r.inputs_changed and r.moved > 0
                and (r.rerun_band is None or r.moved <= r.rerun_band)]


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(flatten(v, f"{prefix}{k}.") if isinstance(v, dict) and v else {f"{prefix}{k}": v})
    return out


def params_diff(base: dict, here: dict) -> tuple[tuple[str, Any, Any], ...]:
    a, b = flatten(base), flatten(here)
    return tuple((k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))


def by_slug(runs: tuple[RunLine, ...]) -> dict[tuple[str, str], dict[int, RunLine]]:
    """{(family, slug): {seed: its run}}."""
    out: dict[tuple[str, str], dict[int, RunLine]] = {}
    for line in runs:
        out.setdefault(line.key, {})[line.seed] = line
    return out


def slug_diff(key: tuple[str, str], base: dict[int, RunLine], here: dict[int, RunLine], paired: bool,
              confidence: float, band_sds: float) -> SlugDiff:
    seeds = tuple(sorted(set(base) & set(here)))
    a, b = [base[s].val_loss for s in seeds], [here[s].val_loss for s in seeds]
    first_b = here[seeds[0]]
    changed = ({(x.config_md5, x.code_md5) for x in base.values()}
               != {(x.config_md5, x.code_md5) for x in here.values()})
    vs = compare(b, a, confidence=confidence, band_sds=band_sds) if paired else None
    sa, sb = summarize(a), summarize(b)
    delta = vs.effect if vs is not None else (sb.mean - sa.mean if None not in (sa.mean, sb.mean) else None)
    steps = [abs(y - x) for x, y in zip(a, b) if x is not None and y is not None and math.isfinite(y - x)]
    sd = pooled_sd(sa, sb)
    return SlugDiff(key[0], key[1], first_b.row, first_b.size, first_b.lr, changed or not paired,
                    seeds, sa, sb, vs, delta, max(steps, default=0.0),
                    RERUN_BAND_RUNS * RERUN_SD_BY_FAMILY.get(key[0], RERUN_SD) * sd if sd is not None else None)


def verdict_changes(base: Side, here: Side) -> tuple[tuple[str, str, str, str], ...]:
    def verdicts(side: Side) -> dict[str, tuple[str, str]]:
        return {r["row"]: (r.get("variant", ""), " ".join(filter(None, [r.get("verdict", ""),
                                                                         f"({r['noise_kind']})" if r.get("noise_kind")
                                                                         else ""])))
                for r in side.table}
    a, b = verdicts(base), verdicts(here)
    return tuple((row, b[row][0], a[row][1], b[row][1]) for row in b if row in a and a[row][1] != b[row][1])


def review(base: Side, here: Side) -> Review:
    """BASE against here, slug by slug and seed by seed."""
    report = PARSERS["report"](here.params.get("report"), "report")     # here's rule, by the one parser of report:
    tokens = (base.tokens(), here.tokens())
    paired = tokens[0] is not None and tokens[0] == tokens[1]
    a, b = by_slug(base.runs), by_slug(here.runs)
    both = [k for k in b if k in a and set(a[k]) & set(b[k])]
    one_side = [("BASE", k[1], tuple(sorted(set(a[k]) - set(b.get(k, {}))))) for k in a]
    one_side += [("here", k[1], tuple(sorted(set(b[k]) - set(a.get(k, {}))))) for k in b]
    slugs = {x.run for x in base.runs + here.runs}                    # configs/plan.json is not a run's
    configs = sorted(s for s in (set(base.configs) | set(here.configs)) & slugs
                     if base.configs.get(s) != here.configs.get(s))
    return Review(
        base=base.name, here=here.name, paired=paired, tokens=tokens,
        params=params_diff(base.params, here.params), configs=tuple(configs),
        code=(codes(base), codes(here)), machines=(machines(base), machines(here)),
        slugs=tuple(slug_diff(k, a[k], b[k], paired, report.confidence, report.borderline) for k in both),
        verdicts=verdict_changes(base, here), one_side=tuple(x for x in one_side if x[2]), confidence=report.confidence)


def codes(side: Side) -> tuple[str, ...]:
    return tuple(sorted({x.code_md5 for x in side.runs}))


def machines(side: Side) -> tuple[str, ...]:
    return tuple(sorted({x.machine for x in side.runs}))
