"""The records that cross a stage boundary that no run reads (a run's own: records/run_record.py and records/inputs.py):
the plan, a served row and the generated corpus's floor.

`Plan` is configs/plan.json (the plan stage writes it, the report reads it); `ServeRecord` is data/serve/<row>.json
(the serve stage writes it, the report reads it); `Floor` is data/generated/floor.json (the generate stage writes
it, the report reads it). Each has one way out (`to_dict`, what the file holds) and one way in (`from_dict`,
records.typed.build: a one-line DataError for a file of another version). No run imports this file, so changing it
retrains nothing.

Names: in code the learning-rate grid is the sweep, as params.yaml (sweep:), its DVC stages (sweep@...) and
reports/lr_sweep.csv name it; "learning-rate grid" is prose only. The plan's record of it is SweepPlan (Plan.sweep),
its rows SweepPlanRow and their runs SweepPlanRun; its looks settling/order.py's sweep_looks and sweep_seed_order
(settling/looks.py's sweep_design); the report's results of it are reporting/results.py's SweepCell, SweepRow and
SweepPair (reporting/sweep.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..changes import Claim
from ..config.sections import ServeConfig
from ..core.errors import DataError
from .typed import build

# ----------------------------------------------------------------------------------------------- the plan

@dataclass(frozen=True)
class PlannedRow:
    """One row the report reads: its runs are data/runs/<slug>/<seed>/."""
    slug: str
    label: str                    # what a reader sees: '+ RMSNorm', '− RoPE', ...
    changed: bool                 # False where the flag's two values agree ("no change")
    hf_class: str | None          # the Hugging Face class computing what the row computes (None: no class)
    of: str | None = None         # a rerun: the ladder row it trains again
    claim: Claim | None = None    # a catalogue row: its change's paper's claim (changes/<name>.py declares it)


class LadderName(StrEnum):
    """The ladders a plan holds, each named once here: the book's (reports/ablation.md), the second ladder past it
    (reports/beyond.md, params.yaml beyond:), the book's ladder at one more size (one a listed size: scale.md), and
    the catalogue (reports/catalogue.md, params.yaml catalogue:), a star: each change alone against row 0."""
    MAIN = "main"
    BEYOND = "beyond"
    SCALE = "scale"
    CATALOGUE = "catalogue"


@dataclass(frozen=True)
class LadderPlan:
    """A ladder: row 0, then each row against the row above it (a chain), or against row 0 (a star: the catalogue)."""
    name: LadderName
    rows: tuple[PlannedRow, ...]
    size: str | None = None       # a scale ladder: the size (scale.sizes' name) its rows train at

    @property
    def star(self) -> bool:
        return self.name == LadderName.CATALOGUE


@dataclass(frozen=True)
class Size:
    """One size of the scale ladders (scale.sizes), or the default one (model:'s shape, the main table's runs)."""
    name: str | None              # scale.sizes' name; None: model:'s shape
    n_layer: int                  # the full model's shape, resolved
    n_embd: int
    n_head: int
    n_kv_head: int
    head_dim: int
    non_embedding: int            # the full model's non-embedding parameters: N of a scaling law
    iters: int                    # the recipe's steps at this size (scale.budget)
    tokens: int                   # training tokens per run: iters x batch_size x block_size


@dataclass(frozen=True)
class SweepPlanRun:
    """One covered row at one other rate."""
    multiple: float               # of train.lr
    slug: str                     # its runs: data/runs/<slug>/<seed>/


@dataclass(frozen=True)
class SweepPlanRow:
    """One covered row across the sweep."""
    slug: str                     # the ladder row it covers (whose runs are its cell at train.lr)
    runs: tuple[SweepPlanRun, ...]  # its other rates


@dataclass(frozen=True)
class SweepPlan:
    """The sweep (params: sweep; the learning-rate grid to a reader): the runs it adds, Plan.sweep."""
    lr: float                     # train.lr: the multiples' base
    rows: tuple[SweepPlanRow, ...]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class AddedSeeds:
    """The seeds `modern-gpt settle` added to one run slug (params.yaml settle.runs), past its base seeds: a ladder
    row's, or a learning-rate grid run's (its base: sweep.seeds)."""
    slug: str
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """configs/plan.json: every run the report reads, and how it reads them (labels, order, references)."""
    ladders: tuple[LadderPlan, ...]          # the main ladder first; then the second ladder where it is on
    seeds: tuple[int, ...]
    aa_seeds: tuple[int, ...]                # the baseline again on these seeds
    leave_one_out: tuple[PlannedRow, ...]    # the full model with one change reverted
    rerun: tuple[PlannedRow, ...]            # ladder rows trained again, initial weights perturbed (`of`)
    rerun_perturbation: float
    match_params: bool
    sweep: SweepPlan
    sizes: tuple[Size, ...]                  # the sizes, smallest N first, the default's among them; () when off
    looks: tuple[int, ...] = ()              # settle.looks: the seed counts each comparison is judged at; () off
    scale_cap: int | None = None             # the scale ladders' last look (None: the last of looks)
    added: tuple[AddedSeeds, ...] = ()       # rows with seeds past the base ones, settle.runs

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Any, where: str = "configs/plan.json") -> "Plan":
        plan = build(cls, d, where)
        if not plan.ladders or plan.ladders[0].name != LadderName.MAIN:
            raise DataError(f"{where}: its first ladder must be the main one; rerun it: dvc repro plan")
        return plan

    def ladder(self, name: LadderName) -> LadderPlan | None:
        return next((x for x in self.ladders if x.name == name), None)

    def seeds_of(self, slug: str) -> tuple[int, ...]:
        """The seeds a run slug ran: the base seeds (a grid run's: sweep.seeds), then those settle added to it."""
        swept = {x.slug for g in self.sweep.rows for x in g.runs}
        base = self.sweep.seeds if slug in swept else self.seeds
        return base + next((a.seeds for a in self.added if a.slug == slug), ())


# ----------------------------------------------------------------------------------------------- the floor

@dataclass(frozen=True)
class Floor:
    """The entropy of the process that generated the bundled corpus: the lowest loss any model can reach on it."""
    nats_per_char: float          # estimated on `sentences` sentences drawn apart from the corpus's
    se: float                     # its standard error
    sentences: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Any, where: str = "floor.json") -> "Floor":
        return build(cls, d, where)


# ----------------------------------------------------------------------------------------------- a served row

@dataclass(frozen=True)
class ServeRecord:
    """What one row's run of seed serve.run_seed costs to serve, and what it wrote (serving.generate)."""
    slug: str
    seed: int
    settings: ServeConfig             # params.yaml's serve: section, as the stage read it
    prompt: tuple[int, ...]           # the start of the validation text
    prompt_text: str
    sample: tuple[int, ...]           # the tokens it generated after the prompt
    n_kv_head: int
    context: int                      # block_size
    windows: tuple[int | None, ...]   # each layer's sliding window (None: full attention)
    kv_bytes_per_token: int           # computed, float32
    kv_bytes_per_sequence: int        # at the full context
    kv_bytes_tensor: int              # the cache tensor's real size (equal to the computed one)
    weights_bytes: int
    prefill_tokens_per_sec: float     # median of settings.repeats
    decode_tokens_per_sec: float
    new_tokens: int
    sample_text: str
    machine: str                      # what timed it (training.single.machine)
    device: str
    threads: int
    torch: str
    python: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Any, where: str = "serve record") -> "ServeRecord":
        return build(cls, d, where)
