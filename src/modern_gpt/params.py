"""params.yaml: read as YAML 1.2 (as DVC reads it), checked strictly, turned into typed configs.

PyYAML speaks YAML 1.1, where `no` is False and `1e-3` is a string; DVC speaks 1.2, where `no` is a
string and `1e-3` a float. The loader here uses 1.2's core rules, so both read the same values, and
the configs' strict types then refuse `bias: no` instead of guessing.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .config import ModelConfig, Row, TrainConfig, change_label, check_choice, ladder
from .errors import ConfigError

TOKENIZERS = ("char", "akshara", "bpe")


class Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with the YAML 1.2 core schema's booleans, integers, floats and null."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (
        "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:null")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for tag, pattern, firsts in [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     "-+.0123456789"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
]:
    Yaml12Loader.add_implicit_resolver(tag, re.compile(pattern), list(firsts))


def _construct_int(loader, node):
    text = loader.construct_scalar(node)
    return int(text, 0) if text.startswith(("0o", "0x")) else int(text)


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def read_yaml(path: str | Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.load(f, Loader=Yaml12Loader)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ConfigError(f"{path}: not valid YAML{where}: {getattr(e, 'problem', e)}") from None


@dataclass(frozen=True)
class Params:
    corpus: str                       # data.corpus
    val_fraction: float               # data.val_fraction
    tokenizer: dict                   # kind (+ vocab_size for bpe)
    model: dict                       # ModelConfig fields but vocab_size
    baseline: dict                    # the Step 1 values of the ablation flags
    ladder: list[str]
    seeds: list[int]
    train: TrainConfig
    ablation: dict                    # match_params, aa_seeds, leave_one_out
    report: dict                      # thresholds of the verdicts and warnings
    raw: dict                         # everything, as read

    def configs(self, vocab_size: int) -> tuple[ModelConfig, ModelConfig]:
        """The baseline and the model under study, at the model's shape."""
        model = ModelConfig.from_dict({**self.model, "vocab_size": vocab_size}, "model")
        base = {**self.model, **self.baseline, "vocab_size": vocab_size}
        if base.get("n_kv_head") is None:                       # null: plain multi-head
            base["n_kv_head"] = model.n_head
        return ModelConfig.from_dict(base, "baseline"), model

    def rows(self, vocab_size: int) -> list[Row]:
        """The ladder's rows for a tokenizer of `vocab_size` tokens."""
        return ladder(*self.configs(vocab_size), self.ladder)

    def leave_one_out(self, vocab_size: int) -> list[Row]:
        """The full model with one change reverted to its baseline value, for each listed flag."""
        base, model = self.configs(vocab_size)
        return [Row(f"loo_{flag}", "− " + change_label(flag, getattr(model, flag), model)[2:],
                    dataclasses.replace(model, **{flag: getattr(base, flag)}), True)
                for flag in self.ablation["leave_one_out"]]


SECTIONS = ("generate", "data", "tokenizer", "model", "baseline", "ladder", "seeds", "train", "ablation", "report")
MODEL_KEYS = [f.name for f in dataclasses.fields(ModelConfig) if f.name != "vocab_size"]
ABLATION_DEFAULTS: dict[str, Any] = {"match_params": False, "aa_seeds": [], "leave_one_out": []}
REPORT_DEFAULTS: dict[str, Any] = {
    "confidence": 0.95,          # of the paired t interval behind each verdict
    "memorised_below": 0.2,      # nats per character: train and val both below this means memorised
    "overfit_rise": 0.02,        # val loss ending this fraction above its minimum means overfitting
    "param_tolerance": 0.05,     # non-embedding params differing by more than this fraction are marked
}


def _seed_list(name: str, seeds: Any) -> list[int]:
    if not isinstance(seeds, list):
        raise ConfigError(f"{name}: must be a list of seeds, got {seeds!r}")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ConfigError(f"{name}: {s!r} is not a non-negative integer")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{name}: {seeds} lists a seed twice")
    return seeds


def _section(raw: dict, name: str, kind: type) -> Any:
    if name not in raw:
        raise ConfigError(f"params: section {name!r} is missing")
    value = raw[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(f"{name}: must be a {'mapping' if kind is dict else 'list'}, got {value!r}")
    return value


def _optional(raw: dict, name: str, allowed: list[str]) -> dict:
    section = raw.get(name) or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{name}: must be a mapping")
    _keys(section, name, allowed, [])
    return section


def _keys(section: dict, name: str, allowed: list[str], required: list[str]) -> None:
    for key in section:
        if key not in allowed:
            raise ConfigError(f"{name}.{key}: unknown key; allowed keys are {', '.join(allowed)}")
    for key in required:
        if key not in section:
            raise ConfigError(f"{name}.{key}: missing")


def parse(raw: Any) -> Params:
    if not isinstance(raw, dict):
        raise ConfigError("params: must be a mapping of sections")
    for key in raw:
        if key not in SECTIONS:
            raise ConfigError(f"params.{key}: unknown section; allowed are {', '.join(SECTIONS)}")
    generate = _section(raw, "generate", dict)
    _keys(generate, "generate", ["chars", "seed"], ["chars", "seed"])
    for key, low in (("chars", 1), ("seed", 0)):
        v = generate[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ConfigError(f"generate.{key}={v!r}: must be an integer >= {low}")
    data = _section(raw, "data", dict)
    _keys(data, "data", ["corpus", "val_fraction"], ["corpus", "val_fraction"])
    if not isinstance(data["corpus"], str) or not data["corpus"]:
        raise ConfigError(f"data.corpus={data['corpus']!r}: must be a path to a text file or folder")
    vf = data["val_fraction"]
    if isinstance(vf, bool) or not isinstance(vf, (int, float)) or not 0 < vf < 1:
        raise ConfigError(f"data.val_fraction={vf!r}: must be a number between 0 and 1 (exclusive)")

    tokenizer = _section(raw, "tokenizer", dict)
    _keys(tokenizer, "tokenizer", ["kind", "vocab_size"], ["kind"])
    check_choice("tokenizer.kind", tokenizer["kind"], TOKENIZERS)
    if tokenizer["kind"] == "bpe":
        v = tokenizer.get("vocab_size")
        if isinstance(v, bool) or not isinstance(v, int) or v < 257:
            raise ConfigError(f"tokenizer.vocab_size={v!r}: bpe needs an integer of at least 257 (256 bytes + merges)")

    model = _section(raw, "model", dict)
    _keys(model, "model", MODEL_KEYS, [])
    ModelConfig.from_dict({**model, "vocab_size": 1}, "model")               # types and values now

    baseline = _section(raw, "baseline", dict)
    _keys(baseline, "baseline", MODEL_KEYS, [])

    flags = _section(raw, "ladder", list)
    for flag in flags:
        if not isinstance(flag, str):
            raise ConfigError(f"ladder: entries must be flag names, got {flag!r}")

    seeds = _seed_list("seeds", _section(raw, "seeds", list))
    if not seeds:
        raise ConfigError("seeds: give at least one seed")

    train = TrainConfig.from_dict(_section(raw, "train", dict), "train")
    ablation = {**ABLATION_DEFAULTS, **_optional(raw, "ablation", list(ABLATION_DEFAULTS))}
    if not isinstance(ablation["match_params"], bool):
        raise ConfigError(f"ablation.match_params={ablation['match_params']!r}: must be true or false")
    aa = _seed_list("ablation.aa_seeds", ablation["aa_seeds"])
    if aa and (len(aa) != len(seeds) or set(aa) & set(seeds)):
        raise ConfigError(f"ablation.aa_seeds={aa}: give {len(seeds)} seeds (as many as seeds), none of {seeds}")
    loo = ablation["leave_one_out"]
    if not isinstance(loo, list) or any(f not in flags for f in loo) or len(set(loo)) != len(loo):
        raise ConfigError(f"ablation.leave_one_out={loo!r}: must list flags of the ladder ({', '.join(flags)}), "
                          "each once")

    report = {**REPORT_DEFAULTS, **_optional(raw, "report", list(REPORT_DEFAULTS))}
    for key, low, high in (("confidence", 0.5, 1.0), ("memorised_below", 0.0, math.inf),
                           ("overfit_rise", 0.0, math.inf), ("param_tolerance", 0.0, math.inf)):
        v = report[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= v < high:
            raise ConfigError(f"report.{key}={v!r}: must be a number in [{low}, {high})")

    params = Params(
        corpus=data["corpus"], val_fraction=float(vf), tokenizer=dict(tokenizer), model=dict(model),
        baseline=dict(baseline), ladder=list(flags), seeds=list(seeds), train=train,
        ablation=ablation, report=report, raw=raw,
    )
    params.rows(vocab_size=1)                                   # the ladder must resolve, now
    params.leave_one_out(vocab_size=1)
    return params


def load(path: str | Path = "params.yaml") -> Params:
    return parse(read_yaml(path))
