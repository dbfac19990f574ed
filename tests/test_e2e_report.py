"""End to end, the report: the real `dvc` on a copy of this project in a temporary git repo, at smoke size. What the
pipeline writes (every row and column, provenance, the losses, the curves' series, bits per character), and each
option's rows reaching it: A/A and leave-one-out, each tokenizer, a diverged run, the second ladder and a size, the
learning-rate grid, NoPE, a corpus folder of the user's. The trained workspaces: tests/e2e.py (conftest.py)."""

import csv
import io
import json
import re
import shutil
import sys

import pytest
import yaml

from e2e import DVC, ONE_THREAD, OPTIONS, ROWS, ran, report_rows, repro_with, run_cache_entries, sh, status
from fakes import LABELS
from modern_gpt.records.stages import Plan

pytestmark = pytest.mark.slow


@pytest.mark.light
def test_repro_writes_the_report_with_every_row_and_column(repo):
    rows = report_rows(repo)
    assert [r["variant"] for r in rows] == [*LABELS, "floor (entropy of the corpus process)"]
    for r in rows[:7]:
        assert r["params"].endswith("M") and " ± " in r["val"]              # params, val mean ± sd over 2 seeds
    assert all(r["verdict"].startswith(("**better**", "**worse**", "noise", "borderline")) for r in rows[1:7])
    text = (repo / "reports" / "ablation.md").read_text()
    for key in ("corpus", "md5", "tokenizer", "model shape", "seeds", "training code", "machine", "torch", "threads"):
        assert key in text
    assert "![validation loss" in text and (repo / "reports" / "val_curves.png").stat().st_size > 1000
    assert "## Learning rate" in text and (repo / "reports" / "lr_sweep.png").stat().st_size > 1000
    assert re.search(r"\*\*Full model against the baseline:\*\* Δ val [-+]\d\.\d{4} \(spread \d\.\d{4}, "
                     r"range \d\.\d{4}, 95% CI \[[-+]\d\.\d{4}, [-+]\d\.\d{4}\]\): "
                     r"(\*\*better\*\*|\*\*worse\*\*|noise|borderline)", text)
    metrics = json.loads((repo / "reports" / "metrics.json").read_text())
    assert list(metrics) == ROWS
    assert all(m["n"] == 2 and m["val_mean"] > 0 for m in metrics.values())


@pytest.mark.light
def test_the_report_reads_provenance_from_its_inputs(repo):
    record = json.loads((repo / "data" / "runs" / "qk_norm" / "1" / "run.json").read_text())
    assert record["code_md5"] and "stages/run.py" in record["code_files"]
    assert {f.split("/")[2] for f in record["code_files"] if f.startswith("src/")} == {
        "__init__.py", "changes", "config", "core", "nn", "records", "training"}
    assert f"md5 `{record['code_md5']}`" in (repo / "reports" / "ablation.md").read_text()
    threads = f"{record['threads']} thread{'s' * (record['threads'] != 1)}"
    assert record["machine"] and f"{record['machine']}, cpu, {threads}, torch {record['torch']}" \
        in (repo / "reports" / "ablation.md").read_text()
    plan = Plan.from_dict(json.loads((repo / "configs" / "plan.json").read_text()))
    assert [r.label for r in plan.ladders[0].rows] == LABELS
    assert [r.hf_class for r in plan.ladders[0].rows] == ["GPT2LMHeadModel", None, None, *["LlamaForCausalLM"] * 3,
                                                     "Qwen3ForCausalLM"]
    assert "LlamaForCausalLM" in (repo / "reports" / "ablation.md").read_text()
    assert set(json.loads((repo / "configs" / "norm.json").read_text())) == {"model", "train"}   # no display text


@pytest.mark.light
def test_reported_losses_are_the_trained_weights_own(repo):
    for row in ("baseline", "qk_norm"):
        record = json.loads((repo / "data" / "runs" / row / "0" / "run.json").read_text())
        assert record["val_loss"] == record["curve"][-1]["val"] and record["curve"][0]["val"] > record["val_loss"]


@pytest.mark.light
def test_second_repro_runs_nothing_and_the_report_is_byte_identical(repo):
    before = (repo / "reports" / "ablation.md").read_bytes()
    out = sh([*DVC, "repro"], repo)
    assert ran(out.stdout) == set() and "Data and pipelines are up to date" in out.stdout
    assert (repo / "reports" / "ablation.md").read_bytes() == before


@pytest.mark.light
def test_dvc_draws_one_series_per_row_with_its_seed_band_and_the_pngs(repo):
    """`dvc plots diff` as a reviewer runs it: read the rendered vega-lite, not the YAML."""
    data = json.loads(sh([*DVC, "plots", "diff", "HEAD", "--json"], repo).stdout)["data"]
    curves = next(v for k, v in data.items() if k.startswith("validation loss per row"))[0]["content"]
    assert [layer["mark"]["type"] for layer in curves["layer"]] == ["area", "line"]
    assert curves["layer"][0]["encoding"]["y2"] == {"field": "high"}                  # the band: seed min to max
    assert curves["encoding"]["color"]["field"] == "series"                          # one series per row and rev
    assert {"calculate": "datum.rev + ' · ' + datum.variant", "as": "series"} in curves["transform"]
    values = curves["data"]["values"]
    assert {v["variant"] for v in values} == set(LABELS) and {v["rev"] for v in values} == {"HEAD", "workspace"}
    assert all({"iter", "val_mean", "val_min", "val_max"} <= set(v) for v in values)
    effects = next(v for k, v in data.items() if k.startswith("effect of each change"))[0]["content"]
    assert [layer["mark"]["type"] for layer in effects["layer"]] == ["rule", "point", "rule"]
    assert effects["layer"][0]["encoding"]["y2"] == {"field": "high"}                # the 95% interval
    assert {v["variant"] for v in effects["data"]["values"] if v["d_val"] != ""} == set(LABELS[1:])
    rates = next(v for k, v in data.items() if k.startswith("val loss against learning rate"))[0]["content"]
    assert {v["row"] for v in rates["data"]["values"]} == {"qk_norm"}
    assert rates["encoding"]["x"]["scale"] == {"type": "log"}                       # multiples of train.lr
    assert rates["encoding"]["x"]["axis"]["labelOverlap"] == "greedy"               # no labels on top of each other
    assert "scale" not in curves["encoding"]["x"]                                    # training steps stay linear
    for png in ("reports/val_curves.png", "reports/lr_sweep.png"):
        assert [p["type"] for p in data[png]] == ["image", "image"]                   # HEAD and workspace
    assert not any(k.endswith(".csv") for k in data)            # no default plot zigzagging through the rows


@pytest.mark.light
def test_char_tokenizer_reports_bpc_as_loss_over_ln2(repo):
    row = report_rows(repo)[0]
    assert float(row["bpc"]) == pytest.approx(float(row["val"].split(" ± ")[0]) / 0.6931471805599453, abs=2e-3)


@pytest.mark.light
def test_nope_is_a_row_that_a_flag_runs(repo):
    sh([*DVC, "exp", "run", "-S", "model.pos=none", "plan"], repo)       # the plan alone: what would retrain
    assert {s for s in status(repo) if s.startswith("run@")} == {
        f"run@{row}-{seed}" for row in ROWS[2:] for seed in (0, 1)}        # the pos row and every row after it
    assert json.loads((repo / "configs" / "plan.json").read_text())["ladders"][0]["rows"][2]["label"] == "+ NoPE"
    assert json.loads((repo / "configs" / "pos.json").read_text())["model"]["pos"] == "none"


# A smaller ladder with the optional rows switched on, the A/A copy and leave-one-out: conftest.py's options_repo.
@pytest.mark.light
def test_aa_and_leave_one_out_run_end_to_end(options_repo):
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "## A/A check" in text and "seeds 5, 6" in text
    assert "## Leave one out" in text and "| − QK-norm" in text
    configs = {p.name for p in (options_repo / "configs").glob("*.json")}
    assert configs == {"baseline.json", "norm.json", "qk_norm.json", "loo_qk_norm.json", "plan.json"}
    loo = json.loads((options_repo / "configs" / "loo_qk_norm.json").read_text())["model"]
    assert loo["qk_norm"] is False and loo["norm"] == "rmsnorm"               # full model, one change reverted
    csv = (options_repo / "reports" / "ablation.csv").read_text()
    assert "\naa," in csv and "\nloo_qk_norm," in csv
    assert sorted(p.name for p in (options_repo / "data" / "runs" / "baseline").iterdir()) == ["0", "1", "5", "6"]


@pytest.mark.parametrize("tokenizer", [["tokenizer.kind=akshara"], ["tokenizer.kind=bpe", "tokenizer.vocab_size=300"]],
                         ids=["akshara", "bpe"])
def test_each_tokenizer_runs_end_to_end_and_reports_bits_per_character(options_repo, tokenizer):
    sets = [*tokenizer, "seeds=[0]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]", "ablation.match_params=true"]
    repro_with(options_repo, sets)
    meta = json.loads((options_repo / "data" / "tokenized" / "meta.json").read_text())
    kind = tokenizer[0].split("=")[1]
    assert meta["tokenizer"] == kind and meta["val"]["tokens"] < meta["val"]["chars"]
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert f"| tokenizer | {kind}, vocabulary" in re.sub(" +", " ", text)
    rows = report_rows(options_repo)
    assert all(0.5 < float(r["bpc"]) < 8 for r in rows[:3])
    assert "parameter matching" in text                                        # match_params on: sized MLPs
    assert json.loads((options_repo / "configs" / "qk_norm.json").read_text())["model"]["mlp_hidden"] > 0


def test_a_diverged_run_reaches_the_report_counted_and_marked(options_repo):
    sets = ["train.lr=100", "train.min_lr=0", "train.grad_clip=0", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"]
    repro_with(options_repo, sets)
    records = {row: [json.loads((options_repo / "data" / "runs" / row / f"{seed}" / "run.json").read_text())
                     for seed in (0, 1)] for row in ("baseline", "norm", "qk_norm")}
    diverged = {row: sum(r["diverged"] for r in runs) for row, runs in records.items()}
    assert diverged["baseline"] >= 1                                      # lr 100 without clipping blows up
    assert all(r["val_loss"] is None for runs in records.values() for r in runs if r["diverged"])
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "**Diverged:**" in text and not re.search(r"\bnan\b", text, re.IGNORECASE)
    for r in report_rows(options_repo)[:3]:
        n = diverged[{"Step 1 baseline": "baseline", "+ RMSNorm": "norm", "+ QK-norm": "qk_norm"}[r["variant"]]]
        assert (f"{n}/2 diverged" in r["val"]) == (n > 0)


def test_the_second_ladder_and_a_size_reuse_the_books_runs_write_their_reports_and_off_keeps_them(options_repo):
    """The second ladder, and the main ladder at one more size (scale.sizes), in one run: neither retrains the
    main table's runs; switched off, beyond.md and scale.md stay."""
    sets = ["beyond.ladder=[tie_embeddings,optimizer,attn_window]", "beyond.model.attn_window=4",
            "ablation.aa_seeds=[]", "ablation.leave_one_out=[]", "+scale.sizes.xs={n_layer: 1, n_embd: 16, n_head: 2}"]
    out = repro_with(options_repo, sets)
    flags = ("tie_embeddings", "optimizer", "attn_window")
    assert {s for s in ran(out.stdout) if "@" in s} == {f"beyond@{f}-{s}" for f in flags for s in (0, 1)} | {
        f"serve_beyond@{f}" for f in flags} | {                                 # row 0 trains and serves nothing
        f"scale@xs-{r}-{s}" for r in OPTIONS["ladder"] for s in (0, 1)}        # the default size: the main runs
    scaled = json.loads((options_repo / "configs" / "scale_xs_qk_norm.json").read_text())["model"]
    assert (scaled["n_layer"], scaled["n_embd"], scaled["n_head"], scaled["qk_norm"]) == (1, 16, 2, True)
    scale_md = (options_repo / "reports" / "scale.md").read_text()
    assert "| change " in scale_md and "| + QK-norm " in scale_md and "xs 0.00" in scale_md
    assert "(scale.budget: steps)" in scale_md and (options_repo / "reports" / "scale.png").is_file()
    rows = report_rows(options_repo, "beyond.md")
    assert [r["variant"] for r in rows] == ["the book's design", "+ untied head", "+ Muon", "+ sliding window 4 (S)"]
    main = {r["variant"]: r for r in report_rows(options_repo)}
    assert rows[0]["val"] == main["+ QK-norm"]["val"]                            # the main table's last row
    assert all(r["verdict"] for r in rows[1:])
    record = json.loads((options_repo / "data" / "runs" / "beyond_optimizer" / "0" / "run.json").read_text())
    assert record["train"]["optimizer"] == "muon" and record["model"]["tie_embeddings"] is False
    text = (options_repo / "reports" / "beyond.md").read_text()
    assert "| optimizer | fused AdamW; from + Muon on: Muon on the blocks' matrices (torch.optim.Muon" in \
        re.sub(" +", " ", text)
    served = json.loads((options_repo / "data" / "serve" / "beyond_attn_window.json").read_text())
    assert served["windows"] == [4] and served["kv_bytes_tensor"] == served["kv_bytes_per_sequence"]
    assert "## Serving cost" in text and "| window 4 on 1 of 1 layers |" in re.sub(" +", " ", text)
    written = [(options_repo / "reports" / name).read_bytes() for name in ("beyond.md", "scale.md")]
    sh(["git", "checkout", "params.yaml"], options_repo)
    sh([*DVC, "repro"], options_repo)                                           # off again
    assert [(options_repo / "reports" / name).read_bytes() for name in ("beyond.md", "scale.md")] == written
    assert not list((options_repo / "configs").glob("beyond_*")) and not list((options_repo / "configs").glob("scale_*"))


def test_a_planted_huge_learning_rate_shows_in_the_sweep_and_a_new_rate_trains_only_its_runs(options_repo):
    overrides = ["sweep.rows=[norm,qk_norm]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"]
    out = repro_with(options_repo, [*overrides, "sweep.lr=[1000]"])
    assert {s for s in ran(out.stdout) if "@" in s} == {f"sweep@{r}-1000-{s}" for r in ("norm", "qk_norm") for s in (0, 1)}
    table = list(csv.DictReader(io.StringIO((options_repo / "reports" / "lr_sweep.csv").read_text())))
    assert [(r["row"], float(r["multiple"])) for r in table] == [("norm", 1.0), ("norm", 1000.0), ("qk_norm", 1.0),
                                                                  ("qk_norm", 1000.0)]
    for r in table:                                  # lr 2: every row blew up there, and only there
        unstable = int(r["diverged"]) + int(r["seeds_spiked"]) > 0
        assert unstable == (float(r["multiple"]) == 1000.0), r
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "## Learning rate" in text and "| + RMSNorm" in text[text.index("## Learning rate"):]
    assert re.search(r"At lr 2 \(×1000\), \+ RMSNorm: spikes in \d/2 seeds \(\d+ in all\), diverged \d/2", text)
    assert (options_repo / "reports" / "lr_sweep.png").stat().st_size > 1000

    out = repro_with(options_repo, [*overrides, "sweep.lr=[1000,0.5]"])
    assert {s for s in ran(out.stdout) if "@" in s} == {f"sweep@{r}-0.5-{s}" for r in ("norm", "qk_norm") for s in (0, 1)}
    assert "| 0.001 (×0.5) |" in re.sub(" +", " ", (options_repo / "reports" / "ablation.md").read_text())


def test_a_users_corpus_folder_from_params(options_repo):
    mine = options_repo / "data" / "mine"
    mine.mkdir()
    a, b = "नरः वनम् गच्छति ।\n" * 400, "सीता फलम् खादति ।\n" * 400
    (mine / "a.txt").write_text(a, encoding="utf-8")
    (mine / "b.txt").write_text(b, encoding="utf-8")
    sets = ["data.corpus=data/mine", "seeds=[0]", "ablation.aa_seeds=[]", "ablation.leave_one_out=[]"]
    repro_with(options_repo, sets)
    text = (options_repo / "reports" / "ablation.md").read_text()
    assert "`data/mine`" in text and "floor" not in text                    # the floor is the generator's only
    assert json.loads((options_repo / "data" / "tokenized" / "meta.json").read_text())["corpus"]["chars"] == len(a + "\n" + b)
    sh(["git", "checkout", "params.yaml"], options_repo)
    out = sh([*DVC, "exp", "run", "-S", "data.corpus=data/missing.txt"], options_repo, check=False)
    assert out.returncode != 0 and "data/missing.txt" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_reproduce_makes_a_report_from_its_committed_overlay_and_puts_everything_else_back(options_and_remote):
    """`modern-gpt reproduce beyond --settle` on an overlay of the second ladder with looks of its own: the report
    and the overlay's settled runs come out, params.yaml, dvc.lock, configs/ and the other reports as committed; the
    run-cache goes to the remote. Committed, the same command without --settle trains nothing and says the report
    is the same bytes; an unknown report and a changed params.yaml are one line each, and change nothing."""
    repo, remote = options_and_remote, options_and_remote.parent / "modern-gpt-remote"
    overlays = repo / "reports" / "overlays"          # the copy has no reports/: this overlay is its only one
    overlays.mkdir(parents=True)
    (overlays / "beyond.yaml").write_text(
        "# the second ladder, one flag\nbeyond:\n  ladder: [tie_embeddings]\n"
        "settle:\n  looks: [2, 3]\n  runs:\n")
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "one overlay"], repo)
    before = {p: (repo / p).read_bytes()
              for p in ("params.yaml", "dvc.lock", "reports/ablation.md", "configs/plan.json")}
    env = {**ONE_THREAD, "PYTHONPATH": str(repo / "src")}
    cli = [sys.executable, "-m", "modern_gpt", "reproduce"]
    out = sh([*cli, "beyond", "--settle", "--remote", "nearby"], repo, env=env, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert ("reproduce: beyond: new, nothing committed to compare with (reports/beyond.md, reports/beyond_runs.csv)"
            in out.stdout)
    assert {p: (repo / p).read_bytes() for p in before} == before
    changed = sh(["git", "status", "--porcelain", "--untracked-files=all"], repo).stdout.splitlines()
    overlay = yaml.safe_load((overlays / "beyond.yaml").read_text())
    added = overlay["settle"]["runs"] or {}
    assert sorted(changed) == sorted(["?? reports/beyond.md", "?? reports/beyond_runs.csv"]
                                     + ([" M reports/overlays/beyond.yaml"] if added else []))
    assert all(v == {"slug": k.rsplit("-", 1)[0], "seed": 2} for k, v in added.items())
    assert any("beyond_tie_embeddings" in cmd for cmd in run_cache_entries(remote))
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "the report"], repo)
    for gone in (repo / ".dvc" / "cache", repo / "data"):    # as a fresh clone: no cache, no outputs, only the remote
        shutil.rmtree(gone)
    again = sh([*cli, "beyond", "--remote", "nearby"], repo, env=env)
    assert "reproduce: beyond: the same bytes as committed" in again.stdout, again.stdout + again.stderr
    assert ": trained (" not in again.stdout and "Running stage 'beyond@" not in again.stdout, again.stdout
    assert (repo / "data" / "runs" / "beyond_tie_embeddings" / "0" / "model.pt").is_file()   # restored, not trained
    assert sh(["git", "status", "--porcelain"], repo).stdout == ""
    for args, says in ((["nope"], "report 'nope': no reports/overlays/nope.yaml; allowed: beyond"),
                       (["beyond"], "params.yaml: changed since HEAD")):
        if args == ["beyond"]:
            (repo / "params.yaml").write_text((repo / "params.yaml").read_text() + "# edited\n")
        bad = sh([*cli, *args], repo, env=env, check=False)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and says in bad.stderr, bad.stderr
    sh(["git", "checkout", "params.yaml"], repo)
