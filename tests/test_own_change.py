"""docs/own-change.md, done as the page says, in a copy of the project with the real `dvc`: a change of your own is one
file and one params entry; `dvc repro` then trains its rows and nothing else, its row has a verdict in the report,
and its export is refused naming the field and the file. Removing it reruns only the plan; editing its file
retrains only its rows."""

import csv
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from e2e import DVC, ROOT, commit, ran, sh, status

pytestmark = pytest.mark.slow

PAGE = (ROOT / "docs" / "own-change.md").read_text()
FILE = "src/modern_gpt/changes/parallel_block.py"
ROW = "beyond_parallel_block"


def blocks(lang: str) -> list[str]:
    """The page's fenced code blocks of one language ('' for a bare fence), in order."""
    found, current, fence = [], None, None
    for line in PAGE.splitlines(keepends=True):
        if line.startswith("```") and current is None:
            current, fence = [], line[3:].strip()
        elif line.startswith("```"):
            if fence == lang:
                found.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return found


def test_the_pages_code_is_the_projects():
    assert blocks("python")[0] == (ROOT / FILE).read_text()
    assert blocks("python")[1] == (ROOT / "src/modern_gpt/changes/value_residual.py").read_text()
    entry = yaml.safe_load(blocks("yaml")[0])
    assert entry == {"beyond": {"ladder": ["parallel_block"], "model": {"parallel_block": True}}}


def runs_csv(repo: Path) -> dict[str, dict[str, str]]:
    with open(repo / "reports" / "runs.csv", newline="") as f:
        return {f"{r['family']}@{r['run']}-{r['seed']}": r for r in csv.DictReader(f)}


def test_your_own_change_trains_only_its_rows_is_judged_and_its_export_is_refused(repo):
    # the project as it was before the change: its file and params entry taken out; only the plan reruns
    (repo / FILE).unlink()
    params = yaml.safe_load((repo / "params.yaml").read_text())
    del params["beyond"]["model"]["parallel_block"]
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert ran(sh([*DVC, "repro"], repo).stdout) == {"plan"}
    commit(repo, "without the parallel block")
    configs = {p.name: p.read_bytes() for p in (repo / "configs").glob("*.json") if p.name != "plan.json"}
    before = runs_csv(repo)

    # what the page says to write: the file, and the entry in params.yaml
    (repo / FILE).write_text(blocks("python")[0])
    entry = yaml.safe_load(blocks("yaml")[0])["beyond"]
    params["beyond"]["ladder"] = entry["ladder"]
    params["beyond"]["model"].update(entry["model"])
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    new = {f"beyond@parallel_block-{s}" for s in (0, 1)} | {"serve_beyond@parallel_block"}
    assert status(repo) == {"plan"} | new                                 # no run of the main table
    out = sh([*DVC, "repro"], repo)
    assert ran(out.stdout) == {"plan", "report"} | new
    assert status(repo) == set()
    assert {p.name: p.read_bytes() for p in (repo / "configs").glob("*.json") if p.name in configs} == configs
    # (configs/plan.json, which no run reads, now lists the second ladder and its row)
    planned = json.loads((repo / "configs" / f"{ROW}.json").read_text())
    assert planned["model"]["parallel_block"] is True and list(planned["change_files"]) == [
        "modern_gpt/changes/parallel_block.py"]
    after = runs_csv(repo)
    assert {k: (r["config_md5"], r["code_md5"]) for k, r in after.items() if k in before} == {
        k: (r["config_md5"], r["code_md5"]) for k, r in before.items()}
    assert {k for k in after if k not in before} == {f"beyond@{ROW}-{s}" for s in (0, 1)}
    row = next(line for line in (repo / "reports" / "beyond.md").read_text().splitlines()
               if re.match(r"\|\s+\d+ \| \+ parallel block ", line))       # the ladder table's row
    assert re.search(r"\| \**(better|worse|noise|borderline)", row), row   # judged by the rule, like every row

    refused = sh([sys.executable, "modern_gpt.py", "export", f"data/runs/{ROW}/0", "out"], repo, check=False)
    assert refused.returncode != 0 and not (repo / "out").exists()
    (quoted,) = blocks("")                                             # the page's one bare block: the refusal
    assert quoted.splitlines()[0] == f"$ modern-gpt export data/runs/{ROW}/0 out/"
    assert refused.stderr.strip().splitlines() == [quoted.splitlines()[-1]]

    # editing the change's file retrains its rows, and only those
    commit(repo, "the parallel block")
    (repo / FILE).write_text((repo / FILE).read_text() + "# an edit\n")
    assert ran(sh([*DVC, "repro", "plan"], repo).stdout) == {"plan"}
    assert status(repo) == {f"beyond@parallel_block-{s}" for s in (0, 1)} | {"report"}   # its runs, no other
