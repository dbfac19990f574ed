"""Where settling records the seeds it adds: params.yaml's settle.runs, one `<slug>-<seed>: {slug, seed}` entry per
run (dvc.yaml's settle stage trains each), written as DVC's `-S` writes (round-trip YAML: comments and order kept).
The plan stage reads them back through SettleConfig and checks them (order.added_seeds)."""

from __future__ import annotations

import io
from pathlib import Path

from ..core.files import write_bytes


def add_runs(path: Path, add: dict[str, tuple[int, ...]]) -> int:
    """settle.runs in params.yaml gains each (slug, seed) of `add`, in block style, one flow-style run a line; the
    rest of the file is written back as it was. Returns the runs added."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    rt = YAML()
    doc = rt.load(path.read_text(encoding="utf-8"))
    settle = doc["settle"]
    runs = CommentedMap()
    for key, run in (settle.get("runs") or {}).items():
        runs[key] = run
    count = 0
    for slug, seeds in add.items():
        for seed in seeds:
            item = CommentedMap([("slug", slug), ("seed", seed)])
            item.fa.set_flow_style()
            runs[f"{slug}-{seed}"] = item
            count += 1
    settle["runs"] = runs
    out = io.StringIO()
    rt.dump(doc, out)
    write_bytes(path, out.getvalue().encode("utf-8"))
    return count
