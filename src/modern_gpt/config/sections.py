"""The other sections of params.yaml, one frozen dataclass each, checked as ModelConfig and TrainConfig are.

The mechanism is one: a frozen dataclass whose `__post_init__` checks each field with validate.py's helpers,
and one parser per section, `PARSERS[name](raw, where)`, the only way a section is read (most build their class
through validate.from_dict: unknown keys refused, every error one line naming `section.key`).
No run imports this file: a run reads its own resolved config (configs/<slug>.json), so editing a setting's
check here retrains nothing.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, Callable, Mapping, TypeVar

from ..core.errors import ConfigError
from .model import ModelConfig, model_keys
from .model_section import Baseline, ModelSection
from .train import TrainConfig
from .validate import check_choice, check_keys, check_number, from_dict, seed_list

T = TypeVar("T")
TOKENIZER_KINDS = ("char", "akshara", "bpe")      # corpus/tokenizers.py registers one class per name


def _section(cls: type[T], raw: Any, where: str) -> T:
    """cls from a params.yaml section (None: the defaults); keys without a default must be given. PARSERS's
    entries use it; a caller reads a section through PARSERS."""
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be a mapping of settings, got {raw!r}")
    required = tuple(f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING)
    check_keys(raw, where, [f.name for f in fields(cls)], required)
    return from_dict(cls, dict(raw), where)


def _not_mapping(raw: Any, where: str):
    raise ConfigError(f"{where}: must be a mapping, got {raw!r}")


def _integer(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{name}={value!r}: must be an integer >= {low}")


@dataclass(frozen=True)
class GenerateConfig:
    chars: int                    # characters of the bundled corpus
    seed: int                     # its generator's seed

    def __post_init__(self) -> None:
        _integer("chars", self.chars, 1)
        _integer("seed", self.seed, 0)


@dataclass(frozen=True)
class DataConfig:
    corpus: str                   # a UTF-8 text file or a folder of .txt files
    val_fraction: float           # the last fraction of the text validates

    def __post_init__(self) -> None:
        if not isinstance(self.corpus, str) or not self.corpus:
            raise ConfigError(f"corpus={self.corpus!r}: must be a path to a text file or folder")
        vf = self.val_fraction
        if isinstance(vf, bool) or not isinstance(vf, (int, float)) or not 0 < vf < 1:
            raise ConfigError(f"val_fraction={vf!r}: must be a number between 0 and 1 (exclusive)")
        object.__setattr__(self, "val_fraction", float(vf))


@dataclass(frozen=True)
class TokenizerConfig:
    kind: str                     # char | akshara | bpe
    vocab_size: int | None = None  # bpe only

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, TOKENIZER_KINDS)
        if self.kind == "bpe":
            check_number("vocab_size", self.vocab_size, 257, 1 << 20, integer=True)


@dataclass(frozen=True)
class ServeConfig:
    """`serve`, every key given: params.yaml is the one definition of the sampling settings, which `modern-gpt
    sample` takes as its defaults."""
    prompt_tokens: int            # the prompt: the start of the validation text
    new_tokens: int               # then this many tokens, at most up to the context
    temperature: float            # the sample in the report: 0 is greedy
    top_k: int                    # 0: sample among all tokens
    seed: int                     # the sampler's
    batch: int                    # sequences at once while timing prefill and decode
    repeats: int                  # timed runs; the report shows the median
    run_seed: int                 # the seed whose run each row serves: one of seeds (plan checks)

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "new_tokens", "batch", "repeats"):
            check_number(name, getattr(self, name), 1, 1 << 20, integer=True)
        check_number("top_k", self.top_k, 0, 1 << 20, integer=True)
        check_number("seed", self.seed, 0, 1 << 63, integer=True)
        check_number("run_seed", self.run_seed, 0, 1 << 63, integer=True)
        check_number("temperature", self.temperature, 0.0, 100.0)


# field → [low, high): each a number
REPORT_RANGES = {"confidence": (0.5, 1.0), "borderline": (0.0, 10.0), "memorised_below": (0.0, math.inf),
                 "overfit_rise": (0.0, math.inf), "param_tolerance": (0.0, math.inf),
                 "spike_threshold": (0.0, math.inf), "serving_budget_gib": (1e-6, math.inf)}


# The one definition of each: the confidence of the paired t interval behind a verdict, and the borderline band in
# pooled seed sds (a verdict's smaller margin within ± this × the pooled seed sd of the two rows reads borderline),
# which reporting/calibration.py sizes for 5 seeds (docs/statistics.md). report: sets both; everything else imports
# these.
CONFIDENCE = 0.95
BAND_SDS = 0.4


@dataclass(frozen=True)
class ReportConfig:
    confidence: float = CONFIDENCE  # of the paired t interval behind each verdict
    borderline: float = BAND_SDS    # a verdict's margin within +- this x the pooled seed sd reads borderline
    memorised_below: float = 0.2    # nats per character: train and val both below this = memorised
    overfit_rise: float = 0.02      # val loss ending this fraction above its minimum = overfitting
    param_tolerance: float = 0.05   # rows whose non-embedding params differ by more than this are marked
    spike_threshold: float = 0.5    # nats above the running minimum of the training loss: a spike
    serving_budget_gib: float = 16.0  # memory for one copy of the weights and the KV caches

    def __post_init__(self) -> None:
        for name, (low, high) in REPORT_RANGES.items():
            check_number(name, getattr(self, name), low, high)
            object.__setattr__(self, name, float(getattr(self, name)))


@dataclass(frozen=True)
class AblationConfig:
    match_params: bool = False                          # size each row's MLP to the baseline's params
    aa_seeds: list = field(default_factory=list)        # the baseline again on these seeds (A/A check)
    leave_one_out: list = field(default_factory=list)   # flags reverted one at a time from the full model,
    rerun: list = field(default_factory=list)           # rows trained again with perturbed initial weights:
                                                        # both checked against the ladder (pipeline/ladder_params.py)
    rerun_perturbation: float = 1e-7                    # relative, per weight

    def __post_init__(self) -> None:
        if not isinstance(self.match_params, bool):
            raise ConfigError(f"match_params={self.match_params!r}: must be true or false")
        seed_list("aa_seeds", self.aa_seeds)
        check_number("rerun_perturbation", self.rerun_perturbation, 1e-12, 0.01)


@dataclass(frozen=True)
class SweepConfig:
    lr: list = field(default_factory=list)      # multiples of train.lr besides 1; [] switches the grid off
    rows: list = field(default_factory=list)    # the ladder rows it covers (checked against the ladder there)
    seeds: list = field(default_factory=list)   # the main table's seeds it trains on

    def __post_init__(self) -> None:
        lrs = self.lr
        if (not isinstance(lrs, list) or any(isinstance(m, bool) or not isinstance(m, (int, float)) or not m > 0
                                             or m == 1 or m != m or m == math.inf for m in lrs)
                or len(set(lrs)) != len(lrs)):
            raise ConfigError(f"lr={lrs!r}: must list multiples of train.lr, each a positive number other than 1 "
                              "(the main table's runs), each once; [] switches the grid off")
        seed_list("seeds", self.seeds)

    @property
    def on(self) -> bool:
        return bool(self.lr and self.rows)


@dataclass(frozen=True)
class LadderConfig:
    """`ladder`: row 0 is the baseline, then one ModelConfig flag per row, in the order the rows switch them."""
    flags: tuple[str, ...]

    def __post_init__(self) -> None:
        known = model_keys()
        for i, flag in enumerate(self.flags):
            if flag not in known:
                raise ConfigError(f"ladder: unknown flag {flag!r}; allowed flags are {', '.join(known)}")
            if flag in self.flags[:i]:
                raise ConfigError(f"ladder: flag {flag!r} is listed twice")

    @classmethod
    def parse(cls, raw: Any) -> "LadderConfig":
        if not isinstance(raw, list) or not raw or raw[0] != "baseline":
            raise ConfigError(f"ladder: must be a list that starts with baseline (row 0), then flags; got {raw!r}")
        return cls(tuple(raw[1:]))

    @property
    def rows(self) -> tuple[str, ...]:
        return ("baseline", *self.flags)


@dataclass(frozen=True)
class BeyondConfig:
    """`beyond`: a second ladder past the book, off by default (ladder: []). Its row 0 is the main ladder's last row
    (the book's design, its runs reused); each flag of `ladder` then switches one more setting, on top of the row
    before, to its value in `model` (ModelConfig fields) or `train` (TrainConfig fields). The values are checked
    as the rows resolve (pipeline/ladder_params.py), where the main model's are known."""
    ladder: list = field(default_factory=list)      # the flags in the order the rows switch them; [] is off
    model: dict = field(default_factory=dict)       # flag → value, for ModelConfig's flags
    train: dict = field(default_factory=dict)       # flag → value, for TrainConfig's (optimizer: muon)

    def __post_init__(self) -> None:
        for name, cls in (("model", ModelConfig), ("train", TrainConfig)):
            values = getattr(self, name)
            if not isinstance(values, Mapping):
                raise ConfigError(f"{name}: must be a mapping of flag: value, got {values!r}")
            known = model_keys() if cls is ModelConfig else [f.name for f in fields(cls)]
            check_keys(values, name, [k for k in known if k != "vocab_size"])
        given = [*self.model, *self.train]
        if not isinstance(self.ladder, list) or any(f not in given for f in self.ladder) \
                or len(set(self.ladder)) != len(self.ladder):
            raise ConfigError(f"ladder={self.ladder!r}: must list flags given a value under beyond.model or "
                              f"beyond.train ({', '.join(given) or 'none given'}), each once; [] switches it off")

    @property
    def values(self) -> dict[str, Any]:
        return {**self.model, **self.train}


@dataclass(frozen=True)
class CatalogueConfig(BeyondConfig):
    """`catalogue`: changes judged alone, off by default (ladder: []). A star, not a chain: row 0 is the main
    ladder's last row (the book's design, its runs reused), and each flag of `ladder` is one row, row 0 with that
    one setting switched to its value in `model` or `train`, compared with row 0 (pipeline/ladder.py's star)."""



SCALE_BUDGETS = ("steps", "tokens_per_param")


@dataclass(frozen=True)
class SizeShape:
    """One entry of scale.sizes: the shape every ladder row takes at that size (pipeline/sizes.py)."""
    n_layer: int
    n_embd: int
    n_head: int
    n_kv_head: int | None = None  # the GQA row's K/V heads; None: model:'s n_kv_head
    head_dim: int | None = None   # None: n_embd / n_head

    def given(self) -> dict[str, int]:
        """The fields the size gives, as model: keys (a None one is model:'s, or follows the shape)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


SIZE_SHAPE = tuple(f.name for f in fields(SizeShape))     # a size's keys: the first three required


@dataclass(frozen=True)
class ScaleConfig:
    """`scale`: the main ladder at other model sizes, off by default (sizes: {}). Each size names a shape (n_layer,
    n_embd, n_head; optionally n_kv_head, the GQA row's K/V heads, and head_dim) that every ladder row takes in
    place of model:'s; the rest of each row, the seeds and the recipe stay. `budget` says how many steps each
    size trains: `steps`, the same at every size; `tokens_per_param`, the default size's training tokens per
    non-embedding parameter at every size (steps, warm-up and evaluation interval scaled alike), a size that
    would train fewer than `min_iters` steps refused. Checked against the ladder's rows in pipeline/sizes.py."""
    sizes: dict[str, SizeShape] = field(default_factory=dict)     # name → shape, in params.yaml's order; {} off
    budget: str = "steps"
    min_iters: int = 100

    def __post_init__(self) -> None:
        if not isinstance(self.sizes, Mapping):
            raise ConfigError(f"sizes: must be a mapping of name: shape, got {self.sizes!r}; {{}} is off")
        for name, shape in self.sizes.items():
            if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9]+", name):
                raise ConfigError(f"sizes.{name}: a size's name must be lowercase letters and digits, without '_' "
                                  "(stage names say it: scale@<size>-<row>-<seed>)")
            if isinstance(shape, SizeShape):
                continue
            if not isinstance(shape, Mapping):
                raise ConfigError(f"sizes.{name}: must be a mapping of {', '.join(SIZE_SHAPE[:3])} (and optionally "
                                  f"{', '.join(SIZE_SHAPE[3:])}), got {shape!r}")
            check_keys(shape, f"sizes.{name}", list(SIZE_SHAPE), SIZE_SHAPE[:3])
            for key, value in shape.items():
                if not (key == "head_dim" and value is None):
                    _integer(f"sizes.{name}.{key}", value, 1)
        object.__setattr__(self, "sizes", {name: shape if isinstance(shape, SizeShape) else SizeShape(**shape)
                                           for name, shape in self.sizes.items()})
        check_choice("budget", self.budget, SCALE_BUDGETS)
        _integer("min_iters", self.min_iters, 1)


@dataclass(frozen=True)
class SettleConfig:
    """`settle`: more seeds only where a verdict is open (settling/; `modern-gpt settle` runs it). `looks`
    are the seed counts at which each comparison is judged, fixed before any run: the first is seeds:'s count, the
    last the cap; fewer than two looks is off: every comparison judged once, at report.confidence, on every seed
    both its rows ran, settle.runs' included, and scale_cap unused (so `-S settle.looks=[]` alone switches it off
    and trains nothing). `scale_cap`: the scale ladders' own last look (their runs cost most), one of looks; None:
    the cap. `runs`: the runs `modern-gpt settle` added, `<slug>-<seed>: {slug, seed}` (dvc.yaml's settle stage
    trains each), checked against the plan's rows (and, with looks on, its seed order) by the plan stage."""
    looks: list = field(default_factory=list)
    scale_cap: int | None = None
    runs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        looks = self.looks
        if (not isinstance(looks, list) or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in looks)
                or any(b <= a for a, b in zip(looks, looks[1:]))):
            raise ConfigError(f"looks={looks!r}: must list seed counts in increasing order, the first seeds:'s "
                              "count and the last the cap, e.g. [5, 8, 12, 20]; [] is off")
        if self.scale_cap is not None and self.on and self.scale_cap not in looks[1:]:
            raise ConfigError(f"scale_cap={self.scale_cap!r}: must be one of looks after the first "
                              f"({', '.join(map(str, looks[1:])) or 'none: looks is off'}), at most the cap; "
                              "empty: the cap")
        if not isinstance(self.runs, Mapping):
            raise ConfigError(f"runs={self.runs!r}: must be a mapping <slug>-<seed>: {{slug: <slug>, seed: <seed>}}")
        for key, run in self.runs.items():
            ok = (isinstance(run, Mapping) and set(run) == {"slug", "seed"} and isinstance(run["slug"], str)
                  and isinstance(run["seed"], int) and not isinstance(run["seed"], bool) and run["seed"] >= 0
                  and key == f"{run['slug']}-{run['seed']}")
            if not ok:
                raise ConfigError(f"runs.{key}: must be {{slug: <slug>, seed: <seed>}} with the key <slug>-<seed> "
                                  f"(modern-gpt settle writes them), got {run!r}")

    @property
    def on(self) -> bool:
        return len(self.looks) > 1

    def added(self) -> dict[str, list[int]]:
        """slug → the seeds added to it, increasing."""
        out: dict[str, list[int]] = {}
        for run in self.runs.values():
            out.setdefault(run["slug"], []).append(run["seed"])
        return {slug: sorted(seeds) for slug, seeds in out.items()}


TORCHRUN = (["torchrun"], ["python", "-m", "torch.distributed.run"], ["python3", "-m", "torch.distributed.run"])


@dataclass(frozen=True)
class LaunchConfig:
    """`launch`, what starts each training run's process (dvc.yaml puts it before `stages/run.py ...`): `python`,
    or a torchrun command line that trains each run over N processes together, each an equal slice of
    train.batch_size. Checked before any run starts, since torchrun wraps a child's one-line error in a report of
    its own; an --nproc_per_node torchrun works out itself (auto, gpu) is checked by each run."""
    command: str = "python"

    def __post_init__(self) -> None:
        if self.command == "python":
            return
        try:
            words = shlex.split(self.command) if isinstance(self.command, str) else []
        except ValueError:                            # an unclosed quote
            words = []
        if not any(words[:len(t)] == t for t in TORCHRUN):
            raise ConfigError(f"launch={self.command!r}: allowed are python, or torchrun with its options, e.g. "
                              "torchrun --standalone --nproc_per_node=2")

    @classmethod
    def parse(cls, raw: Any) -> "LaunchConfig":
        return cls() if raw is None else cls(raw)

    @property
    def nproc(self) -> int | None:
        """The processes per run, where the command names a number (None: python, or torchrun's own choice)."""
        found = re.search(r"--nproc[_-]per[_-]node[= ](\d+)\b", self.command)
        return int(found.group(1)) if found else None


def _reads(cls: type[T]) -> Callable[[Any, str], T]:
    return lambda raw, where: _section(cls, raw, where)


# Every section params.yaml may have, in its order (a typo such as `modle:` is an error, not an ignored section), with
# the one function that parses it, alone, into a frozen dataclass: `model` as given (ModelSection, its values checked
# as a ModelConfig), `baseline` as overrides of it (Baseline, checked once merged with `model`), `seeds` a plain list
# of integers, the one section without a class. pipeline/ladder_params.py then checks the sections against each other.
# OPTIONAL ones may be left out (their settings' defaults, or off). Each stage names the ones it reads (its PARAMS,
# config/params.py gives it only those); the plan reads all. Every reader of a section, stage or command, reads it
# here, `PARSERS[name](raw, where)` (the tokenize stage too: model:'s parser, of whose result it takes block_size).
PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "generate": _reads(GenerateConfig), "data": _reads(DataConfig), "tokenizer": _reads(TokenizerConfig),
    "model": ModelSection.parse, "baseline": Baseline.parse, "ladder": lambda raw, where: LadderConfig.parse(raw),
    "seeds": lambda raw, where: seed_list(where, raw),
    "train": lambda raw, where: TrainConfig.from_dict(raw if isinstance(raw, Mapping) else _not_mapping(raw, where),
                                                     where),
    "launch": lambda raw, where: LaunchConfig.parse(raw), "ablation": _reads(AblationConfig),
    "sweep": _reads(SweepConfig), "beyond": _reads(BeyondConfig),
    "catalogue": _reads(CatalogueConfig), "scale": _reads(ScaleConfig),
    "settle": _reads(SettleConfig), "serve": _reads(ServeConfig), "report": _reads(ReportConfig),
}
SECTIONS = tuple(PARSERS)
OPTIONAL = ("launch", "ablation", "sweep", "beyond", "catalogue", "scale", "settle", "report")
