"""params.yaml, read as YAML 1.2 (as DVC reads it), one section at a time.

ruamel.yaml (the YAML 1.2 parser DVC itself uses for `-S`) reads the file: `no` is a string and `1e-3` a
float, as DVC sees them, and the configs' strict types then refuse `bias: no` instead of guessing.

A stage asks for the sections it declares in dvc.yaml and gets only those: it cannot read a
setting that DVC would not rerun it for. No run imports this file (a run reads its own config file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML, YAMLError

from ..core.errors import ConfigError
from .sections import SECTIONS


def read_yaml(path: str | Path) -> Any:
    """The file as plain dicts, lists and scalars (YAML 1.2 core schema), or a one-line ConfigError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    return parse_yaml(text, path)


def parse_yaml(text: str, where: str | Path) -> Any:
    """YAML text (a params.yaml, from a file or from git) as read_yaml reads a file; `where` names it in errors."""
    try:
        return YAML(typ="safe").load(text)                  # as DVC reads it (dvc.utils.serialize)
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark else ""
        raise ConfigError(f"{where}: not valid YAML{line}: {getattr(e, 'problem', None) or e}") from None


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


def project_params() -> Any:
    """This checkout's own params.yaml, whatever the working directory: the one definition of the book's design,
    the toy shape and the sampling defaults, which the commands beside the pipeline read too."""
    path = Path(__file__).resolve().parents[3] / "params.yaml"     # src/modern_gpt/config/ → the checkout
    if not path.is_file():
        raise ConfigError(f"{path}: not found; the commands read the design from the checkout's params.yaml "
                          "(install the checkout editable: pip install -e .)")
    return read_yaml(path)
