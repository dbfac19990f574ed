"""What made each off-by-default report: reports/overlays/<report>.yaml, the settings params.yaml needs on top for
`dvc repro` to write reports/<report>.md (its ladder or sizes switched on, its learning-rate grid rows, and every
run `modern-gpt settle` added for it), applied by `modern-gpt reproduce <report>`.

An overlay is a partial params.yaml: a mapping merges into the same mapping key by key (so settle.runs gains the
overlay's runs and keeps params.yaml's), an empty one (`runs:` with nothing under it) adds nothing, and anything
else replaces the value there, as `dvc exp run -S key=value` does. The committed params.yaml keeps the overlays' settled runs out: DVC makes a stage of every settle.runs entry
(dvc.yaml's `foreach`), which would train on the default job a run only a report that is off reads.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import ConfigError
from ..config.params import parse_yaml, sections
from ..pipeline.families import settle_runs
from ..reporting import outputs

FOLDER = Path("reports", outputs.OVERLAYS)   # one file per off-by-default report: <report>.yaml
FILES = outputs.OVERLAY_FILES               # what each overlay makes, under reports/


def names(root: Path = Path(".")) -> list[str]:
    """The reports an overlay makes, by file name."""
    return sorted(f.stem for f in (root / FOLDER).glob("*.yaml"))


def read(name: str, root: Path = Path(".")) -> dict[str, Any]:
    """reports/overlays/<name>.yaml as plain data; an unknown report, or a section params.yaml has not, refused in
    one line."""
    path = root / FOLDER / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"report {name!r}: no {FOLDER}/{name}.yaml; allowed: {', '.join(names(root)) or 'none'}")
    raw = parse_yaml(path.read_text(encoding="utf-8"), path)
    sections(raw, ())                             # its sections are params.yaml's
    return raw


def apply(text: str, overlays: list[Mapping[str, Any]]) -> str:
    """params.yaml's text with the overlays applied, its comments and order kept where nothing replaced them (a
    round trip through ruamel.yaml, as DVC's `-S` writes); what an overlay adds is written in flow style where it
    holds only scalars (a ladder, a settled run)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    def styled(value: Any) -> Any:
        if isinstance(value, Mapping):
            out = CommentedMap((k, styled(v)) for k, v in value.items())
            if value and all(not isinstance(v, (Mapping, list)) for v in value.values()):
                out.fa.set_flow_style()
            return out
        if isinstance(value, list):
            seq = CommentedSeq(styled(v) for v in value)
            seq.fa.set_flow_style()
            return seq
        return value

    def put(doc: Any, overlay: Mapping[str, Any]) -> None:
        for key, value in overlay.items():
            if isinstance(value, Mapping) and isinstance(doc.get(key), Mapping):
                put(doc[key], value)
            elif value is None and isinstance(doc.get(key), Mapping):
                continue                          # an empty section (`runs:` with no entries) adds nothing
            else:                                 # an empty settle.runs (null) takes the mapping whole
                doc[key] = styled(value)

    rt = YAML()
    rt.width = 120
    doc = rt.load(text)
    for overlay in overlays:
        put(doc, overlay)
    out = io.StringIO()
    rt.dump(doc, out)
    return out.getvalue()


def added_runs(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The settle.runs entries of `after` (raw params) that `before` has not: what a settle round wrote, each read
    by settle:'s one parser (config.sections' SettleConfig)."""
    old = settle_runs(before)
    return {k: dict(v) for k, v in settle_runs(after).items() if k not in old}


def with_runs(name: str, runs: Mapping[str, Any], root: Path = Path(".")) -> None:
    """reports/overlays/<name>.yaml gains settle.runs entries (its comments kept)."""
    path = root / FOLDER / f"{name}.yaml"
    path.write_text(apply(path.read_text(encoding="utf-8"), [{"settle": {"runs": dict(runs)}}]), encoding="utf-8")


def of(report: str) -> str:
    """The overlay that makes a report: 'beyond' for beyond.md."""
    return next(name for name, files in FILES.items() if files[0] == report)
