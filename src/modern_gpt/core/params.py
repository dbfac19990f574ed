"""params.yaml, read as YAML 1.2 (as DVC reads it), one section at a time.

PyYAML speaks YAML 1.1, where `no` is False and `1e-3` is a string; DVC speaks 1.2, where `no` is a
string and `1e-3` a float. The loader here uses 1.2's core rules, so both read the same values, and
the configs' strict types then refuse `bias: no` instead of guessing.

A stage asks for the sections it declares in dvc.yaml and gets only those: it cannot read a
setting that DVC would not rerun it for.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

# Every section params.yaml may have (a typo such as `modle:` is an error, not an ignored section).
SECTIONS = ("generate", "data", "tokenizer", "model", "baseline", "ladder", "seeds", "train", "launch", "ablation",
            "sweep", "serve", "report")


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


def sections(raw: Any, names: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """The named sections of a params mapping; unknown section names anywhere in it are errors."""
    if not isinstance(raw, dict):
        raise ConfigError("params: must be a mapping of sections")
    for key in raw:
        if key not in SECTIONS:
            raise ConfigError(f"params.{key}: unknown section; allowed are {', '.join(SECTIONS)}")
    for name in names:
        if name not in raw and name not in optional:
            raise ConfigError(f"params: section {name!r} is missing")
    return {name: raw.get(name) for name in names}


def load(names: tuple[str, ...], path: str | Path = "params.yaml", optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """Only the named sections of params.yaml (those a stage declares in dvc.yaml)."""
    return sections(read_yaml(path), names, optional)
