"""The two sides of a review: a commit read through git (`git show`), and the working tree.

What a side holds is what git tracks: reports/runs.csv, reports/ablation.csv, configs/, params.yaml and dvc.lock.
Nothing is read from DVC's cache, so a review works in a fresh clone without a remote. params.yaml is read by the
project's one reader (config/params.py: YAML 1.2, as DVC reads it), as it was written: an older commit's params are
not checked against today's rules.
"""

from __future__ import annotations

import csv
import hashlib
import io
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..config.params import parse_yaml
from ..core.errors import DataError
from ..reporting import outputs
from ..reporting.runs_csv import RunLine, from_csv

REPORTS = "reports"               # the report stage's --out, as dvc.yaml gives it
RUNS = f"{REPORTS}/{outputs.RUNS}"
TABLE = f"{REPORTS}/{outputs.TABLE}"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)     # libyaml's: dvc.lock has thousands of lines
TOKENS = "data/tokenized"        # the tokenize stage's output: one md5 for the corpus, its split and the tokenizer


@dataclass(frozen=True)
class Side:
    name: str                    # 'main (1a2b3c4)' or 'this working tree'
    runs: tuple[RunLine, ...]
    params: dict[str, Any]
    configs: dict[str, str]      # run slug → git's blob id of configs/<slug>.json
    lock: dict[str, Any]         # dvc.lock ({} where absent)
    table: tuple[dict[str, str], ...]   # reports/ablation.csv's rows

    def tokens(self) -> str | None:
        """The md5 dvc.lock records for the tokenized corpus (None: not recorded)."""
        for out in self.lock.get("stages", {}).get("tokenize", {}).get("outs", []):
            if out.get("path") == TOKENS:
                return out.get("md5")
        return None


def git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def repo_root(start: Path = Path(".")) -> Path:
    out = git(start, "rev-parse", "--show-toplevel")
    if out.returncode:
        raise DataError(f"{start.resolve()}: not inside a git repository (review compares commits of one)")
    return Path(out.stdout.strip())


def resolve(root: Path, base: str) -> str:
    """BASE's commit, or a one-line DataError naming what was given."""
    out = git(root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    if out.returncode or not out.stdout.strip():
        raise DataError(f"review BASE {base!r}: not a commit of this repository (give a branch, tag or commit, "
                        "e.g. main or origin/main)")
    return out.stdout.strip()


def commit_side(root: Path, base: str) -> Side:
    sha = resolve(root, base)

    def show(path: str) -> str | None:
        out = git(root, "show", f"{sha}:{path}")
        return out.stdout if out.returncode == 0 else None

    runs = show(RUNS)
    if runs is None:
        raise DataError(f"review BASE {base!r} ({sha[:7]}): has no {RUNS} (it predates the runs table, or no "
                        "report was committed): compare against a later commit")
    listed = [line.split(None, 3) for line in git(root, "ls-tree", "-r", sha, "configs/").stdout.splitlines()]
    configs = {Path(path).stem: blob for _, _, blob, path in listed if path.endswith(".json")}
    return Side(f"{base} ({sha[:7]})", tuple(from_csv(runs, f"{base}:{RUNS}")),
                side_params(show("params.yaml"), f"{base}:params.yaml"), configs, load_yaml(show("dvc.lock")),
                read_table(show(TABLE)))


def tree_side(root: Path) -> Side:
    def read(path: str) -> str | None:
        f = root / path
        return f.read_text(encoding="utf-8") if f.is_file() else None

    runs = read(RUNS)
    if runs is None:
        raise DataError(f"{RUNS}: missing in this working tree; the report stage writes it: dvc repro")
    configs = {p.stem: blob_id(p.read_bytes()) for p in sorted((root / "configs").glob("*.json"))}
    return Side("this working tree", tuple(from_csv(runs)), side_params(read("params.yaml"), "params.yaml"), configs,
                load_yaml(read("dvc.lock")), read_table(read(TABLE)))


def blob_id(data: bytes) -> str:
    """The id git gives these bytes (`git hash-object`): a commit's files compare by `git ls-tree` alone."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def side_params(text: str | None, where: str) -> dict[str, Any]:
    """A side's params.yaml as written ({} where absent)."""
    data = parse_yaml(text, where) if text is not None else None
    return data if isinstance(data, dict) else {}


def load_yaml(text: str | None) -> dict[str, Any]:
    """dvc.lock, DVC's own file (libyaml's parser: it has thousands of lines)."""
    if text is None:
        return {}
    try:
        data = yaml.load(text, Loader=LOADER)
    except yaml.YAMLError as e:
        raise DataError(f"a YAML file of the review does not parse: {str(e).splitlines()[0]}") from None
    return data if isinstance(data, dict) else {}


def read_table(text: str | None) -> tuple[dict[str, str], ...]:
    return tuple(csv.DictReader(io.StringIO(text))) if text else ()
