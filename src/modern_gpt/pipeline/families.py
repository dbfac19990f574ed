"""The families of stages, each defined once: its dvc.yaml stage name, how its runs' slugs are spelled and read
back, and which params lists its matrix walks.

A training run's slug names its config (configs/<slug>.json) and its folder (data/runs/<slug>/<seed>/); dvc.yaml
spells each family's stanza from the same pieces, and tests/test_families.py holds the two equal. Adding a
family is one entry here and its stanza in dvc.yaml.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any, Mapping

from ..config.sections import PARSERS


@dataclass(frozen=True)
class Family:
    stage: str                              # dvc.yaml's stage: 'loo' gives loo@<flag>-<seed>
    slug_format: str                        # the slug, its matrix items in braces: 'loo_{flag}'
    matrix: tuple[tuple[str, str | tuple[str, ...]], ...]   # item → the params list it walks ('ablation.rerun'),
                                            # or a literal list; as dvc.yaml's matrix has them, in its order

    @property
    def items(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.matrix)

    def slug(self, **items: Any) -> str:
        """'loo_norm', 'sweep_qk_norm_x4': a number as DVC writes ${item.lr} (str of the YAML value)."""
        return self.slug_format.format(**{k: str(v) for k, v in items.items()})

    def parse(self, slug: str) -> dict[str, str] | None:
        """The items a slug of this family holds ({'row': 'qk_norm', 'lr': '4'}), or None: not this family's."""
        pattern = "".join(re.escape(text) + (f"(?P<{name}>[A-Za-z0-9_.]+?)" if name else "")
                          for text, name, _, _ in string.Formatter().parse(self.slug_format))
        found = re.fullmatch(pattern, slug)
        return found.groupdict() if found else None

    def stage_name(self, **items: Any) -> str:
        """DVC's name of one stage of the family: 'sweep@qk_norm-4-0'."""
        return f"{self.stage}@" + "-".join(str(items[name]) for name in self.items)

    def walk(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every item combination the matrix gives for these params (raw params.yaml values), in DVC's order."""
        combos: list[dict[str, Any]] = [{}]
        for name, source in self.matrix:
            values = list(source) if isinstance(source, tuple) else lookup(params, source)
            combos = [{**c, name: v} for c in combos for v in values]
        return combos


def lookup(params: Mapping[str, Any], path: str) -> list:
    """params['ablation']['rerun'] for 'ablation.rerun'; a section left out is an empty list; a mapping gives its
    keys, as DVC's matrix does (scale.sizes)."""
    value: Any = params
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return list(value or [])


SEEDS = ("seed", "seeds")

# The training runs: each a stage of stages/run.py, one (row, seed) run, its config configs/<slug>.json.
MAIN = Family("run", "{row}", (("row", "ladder"), SEEDS))
AA = Family("aa", "{row}", (("row", ("baseline",)), ("seed", "ablation.aa_seeds")))
LOO = Family("loo", "loo_{flag}", (("flag", "ablation.leave_one_out"), SEEDS))
RERUN = Family("rerun", "rerun_{row}", (("row", "ablation.rerun"), SEEDS))
SWEEP = Family("sweep", "sweep_{row}_x{lr}", (("row", "sweep.rows"), ("lr", "sweep.lr"), ("seed", "sweep.seeds")))
BEYOND = Family("beyond", "beyond_{flag}", (("flag", "beyond.ladder"), SEEDS))
SCALE = Family("scale", "scale_{size}_{row}", (("size", "scale.sizes"), ("row", "ladder"), SEEDS))   # size: no '_'
CATALOGUE = Family("catalogue", "catalogue_{flag}", (("flag", "catalogue.ladder"), SEEDS))
TRAINING: tuple[Family, ...] = (MAIN, AA, LOO, RERUN, SWEEP, BEYOND, SCALE, CATALOGUE)

# The runs `modern-gpt settle` added where a verdict was open: one `foreach` stage over params.yaml's settle.runs
# (<slug>-<seed>: {slug, seed}), since a matrix is a product of lists and these are per row. Its runs are a ladder
# row's, in the row's own folder, past the base seeds: settle@<slug>-<seed>.
SETTLE = "settle"


def settle_stage(slug: str, seed: int) -> str:
    return f"{SETTLE}@{slug}-{seed}"


def settle_runs(params: Mapping[str, Any]) -> dict[str, Any]:
    """params.yaml's settle.runs, read by settle:'s one parser (config.sections' SettleConfig, as the plan, review
    and `modern-gpt settle` read it): {} without the section, a one-line ConfigError for a bad entry."""
    return dict(PARSERS["settle"](params.get("settle"), "settle").runs)


# The serve stages: one per ladder row, the run of seed serve.run_seed generating.
SERVE = Family("serve", "{row}", (("row", "ladder"),))
SERVE_BEYOND = Family("serve_beyond", "beyond_{flag}", (("flag", "beyond.ladder"),))
SERVING: tuple[Family, ...] = (SERVE, SERVE_BEYOND)


def training_stage(slug: str, seed: int, params: Mapping[str, Any] | None = None) -> str:
    """The stage that trains data/runs/<slug>/<seed>: 'loo@pos-3'. Of the families that spell the slug (the
    baseline's: run@ and aa@), the one whose matrix over `params` (raw params.yaml) holds this run; a run settle
    added, settle@<slug>-<seed>; without one, a prefixed family before the main one, which reads any slug."""
    if f"{slug}-{seed}" in settle_runs(params or {}):
        return settle_stage(slug, seed)
    found = [(f, items) for f in TRAINING if (items := f.parse(slug)) is not None]
    listed = [(f, items) for f, items in found
              if any({k: str(v) for k, v in c.items()} == {**items, "seed": str(seed)} for c in f.walk(params or {}))]
    family, items = (listed or sorted(found, key=lambda m: m[0].slug_format == "{row}"))[0]
    return family.stage_name(**items, seed=seed)
