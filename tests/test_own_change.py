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
    files = [FILE, *(f"src/modern_gpt/changes/{n}.py" for n in ("value_residual", "gated_attn", "mtp", "smear"))]
    assert blocks("python") == [(ROOT / f).read_text() for f in files]
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


def test_a_change_filling_every_plug_point_trains_only_its_rows_decodes_as_it_recomputes_and_is_refused_export(repo):
    """tests/fixtures/every_point.py as changes/every_point.py of a copy, judged alone in the catalogue."""
    (repo / "src/modern_gpt/changes/every_point.py").write_text((ROOT / "tests/fixtures/every_point.py").read_text())
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["catalogue"] = {"ladder": ["every_point"], "model": {"every_point": True}}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    before = runs_csv(repo)
    new = {f"catalogue@every_point-{s}" for s in (0, 1)}
    assert status(repo) == {"plan"} | new                                 # no other run, no serve stage
    assert ran(sh([*DVC, "repro"], repo).stdout) == {"plan", "report"} | new
    assert status(repo) == set()
    after = runs_csv(repo)
    assert {k: r for k, r in after.items() if k in before} == before       # every other run as it was
    assert {k for k in after if k not in before} == {f"catalogue@catalogue_every_point-{s}" for s in (0, 1)}
    text = (repo / "reports" / "catalogue.md").read_text()
    assert re.search(r"\|\s*1\s*\|\s*\+ every point\s*\|.*\|\s*\**(better|worse|noise|borderline).*\|\s*lower val loss, "
                     r"shown at a test's \(none: a test's\)\s*\|", text), text
    assert not (repo / "reports" / "beyond.md").exists() or "every point" not in (repo / "reports" / "beyond.md").read_text()

    check = ("import torch\n"
             "from modern_gpt.nn.checkpoint import load_run\n"
             "from modern_gpt.nn.model import KVCache\n"
             "from modern_gpt.serving.kv_cache import kv_cache\n"
             "from modern_gpt.changes import decode_numbers\n"
             "m = load_run('data/runs/catalogue_every_point/0').eval()\n"
             "cfg = m.cfg\n"
             "x = torch.randint(0, cfg.vocab_size, (2, cfg.block_size), generator=torch.Generator().manual_seed(0))\n"
             "with torch.no_grad():\n"
             "    full = m(x)[0]\n"
             "    for step in (1, 5):\n"
             "        c = KVCache(cfg, 2)\n"
             "        got = torch.cat([m(x[:, i:i + step], cache=c)[0] for i in range(0, cfg.block_size, step)], 1)\n"
             "        assert torch.allclose(got, full, atol=1e-5), step\n"
             "size = kv_cache(cfg.n_layer, cfg.n_kv_head, cfg.head_dim, 'float32', cfg.block_size, windows=cfg.windows,\n"
             "                state_numbers=decode_numbers(cfg))\n"
             "assert decode_numbers(cfg) == cfg.n_embd and KVCache(cfg, 1).nbytes == size.bytes_per_sequence\n"
             "print('decodes as it recomputes')\n")
    done = sh([sys.executable, "-c", check], repo, env={"PYTHONPATH": str(repo / "src")})
    assert done.stdout.strip() == "decodes as it recomputes"
    refused = sh([sys.executable, "modern_gpt.py", "export", "data/runs/catalogue_every_point/0", "out"], repo,
                 check=False)
    assert refused.returncode != 0 and not (repo / "out").exists()
    assert refused.stderr.strip() == ("modern-gpt: error: every_point=true: no Hugging Face class here computes it "
                                      "(modern_gpt/changes/every_point.py declares hf=None)")
