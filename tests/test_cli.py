"""The quick command in its three spellings, its table, and its one-line errors."""

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import modern_gpt.training.loop as loop
from fakes import LABELS, run_record
from md_tables import cells
from modern_gpt.cli import main
from modern_gpt.config.params import project_params
from modern_gpt.reporting.results import row_result
from modern_gpt.stats.paired import compare, verdict_text
from modern_gpt.reporting.table import quick_line as format_row

ROOT = Path(__file__).resolve().parents[1]
PARAMS = project_params()                   # the quick command's design, and its CPU profile's shape


def run(args, cwd=ROOT, **kw):
    env = {**os.environ, "PYTHONPATH": ""}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=300, **kw)


def table_rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(("Step 1", "+ "))]


def check_table(stdout: str) -> None:
    lines = stdout.splitlines()
    assert lines[0].startswith("device=cpu vocab=") and "tokens=" in lines[0]
    assert lines[2].split()[:6] == ["variant", "params", "train", "val", "Δ", "val"]
    rows = table_rows(stdout)
    assert [r[:22].rstrip() for r in rows] == LABELS
    for row in rows:
        params = row[22:30].strip()
        assert params.endswith("M") and float(params[:-1]) > 0


@pytest.mark.slow                  # the quick command, the bench or a stage in processes of their own
def test_book_command_from_the_repo_root():
    """`python modern_gpt.py --ablate --smoke` runs this checkout's code, not a shadowed module."""
    out = run([sys.executable, "modern_gpt.py", "--ablate", "--smoke", "--iters", "4"])
    assert out.returncode == 0, out.stderr
    check_table(out.stdout)
    assert out.stderr == ""                                       # no progress noise when captured


@pytest.mark.slow                  # the quick command, the bench or a stage in processes of their own
def test_python_dash_m_from_the_repo_root_and_elsewhere(tmp_path):
    for cwd in (ROOT, tmp_path):
        out = run([sys.executable, "-m", "modern_gpt", "ablate", "--smoke", "--iters", "3", "--n-layer", "1"], cwd=cwd)
        assert out.returncode == 0, out.stderr
        check_table(out.stdout)


@pytest.mark.slow                  # the quick command, the bench or a stage in processes of their own
def test_installed_console_script(tmp_path):
    script = Path(sys.executable).with_name("modern-gpt")
    out = run([str(script), "ablate", "--smoke", "--iters", "3", "--n-layer", "1"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    check_table(out.stdout)


def test_importing_modern_gpt_from_the_repo_root_gives_the_package():
    out = run([sys.executable, "-c", "import modern_gpt.config, modern_gpt; print(modern_gpt.__file__)"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith(os.path.join("src", "modern_gpt", "__init__.py"))


def test_seeds_give_mean_spread_and_a_verdict_column(capsys):
    assert main(["ablate", "--smoke", "--iters", "3", "--n-layer", "1", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].rstrip().endswith("verdict")
    rows = table_rows(out)
    assert len(rows) == 7 and "±" in rows[0]
    assert all(r.rstrip().endswith(("better", "worse", "spread)"))
               or re.search(r"(noise|borderline) \((not shown either way; )?(~|over )\d+ seeds\)", r) for r in rows[1:])


def test_help_names_the_books_spelling_and_bench_help_its_own_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "python modern_gpt.py --ablate --smoke" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    bench_help = " ".join(capsys.readouterr().out.split())
    m, batch = PARAMS["model"], PARAMS["train"]["batch_size"]
    assert (f"shape (defaults: params.yaml's model: shape and train.batch_size, now {m['n_layer']} layers, "
            f"{m['n_head']} heads, {m['n_embd']} wide, {m['block_size']} context, batch {batch})") in bench_help
    assert "--smoke" not in bench_help                                   # bench has no --smoke


def test_the_quick_commands_rows_are_params_yamls_design_at_the_profiles_shape():
    from modern_gpt.cli.support.profiles import SMOKE, cpu, rows_for
    from modern_gpt.pipeline.ladder_params import parse
    pipeline = parse(PARAMS).rows(vocab_size=65)
    assert [r.config for r in rows_for(cpu(), 65, None)] == [r.config for r in pipeline]   # cpu: the pipeline's shape
    smoke = rows_for(SMOKE, 65, None)
    assert [r.label for r in smoke] == LABELS and [r.slug for r in smoke] == [r.slug for r in pipeline]
    assert (smoke[0].config.n_layer, smoke[0].config.n_embd, smoke[0].config.head_dim) == (2, 64, 16)   # re-derived
    assert smoke[0].config.n_kv_head == 4 and rows_for(SMOKE, 65, 1)[-2].label == "+ MQA (kv=1)"


def test_the_quick_command_prints_the_honest_reading_under_its_table(capsys):
    assert main(["ablate", "--smoke", "--iters", "3", "--n-layer", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    below = lines[lines.index(table_rows("\n".join(lines))[-1]) + 1:]
    assert below[0] == ""
    assert any(line.startswith("one seed: no verdicts.") for line in below)
    assert any(line.startswith("units: losses in nats per token") and "negative is better" in line for line in below)
    assert below[-1].startswith("next: --seeds 3 judges each Δ by the report's rule") and "modern-gpt repro" in below[-1]
    assert main(["ablate", "--smoke", "--iters", "3", "--n-layer", "1", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "one seed" not in out and "next: the verdicts above are the report's rule" in out


def test_the_quick_command_warns_by_the_thresholds_of_the_pipelines_report():
    """The quick command has no params.yaml of its own: it uses ReportConfig's defaults, which are the pipeline's."""
    import yaml
    from modern_gpt.reporting.settings import Settings
    report = yaml.safe_load((ROOT / "params.yaml").read_text())["report"]
    assert {k: getattr(Settings(), k) for k in report} == {k: float(v) for k, v in report.items()}


def curve_record(seed: int, train: float, val: float, curve: list[float]):
    from modern_gpt.records.run_record import Point
    points = tuple(Point(iter=10 * (i + 1), train=train, val=v) for i, v in enumerate(curve))
    return dataclasses.replace(run_record(seed, val), train_loss=train, curve=points)


@pytest.mark.parametrize("train, val, curve, expected", [
    (0.9, 0.92, [1.2, 0.95, 0.92], []),                                     # healthy: only units and next
    (0.10, 0.12, [0.5, 0.2, 0.12], ["memorised: A, B: train and val under 0.2 nats per character"]),
    (0.9, 0.99, [1.2, 0.95, 0.99], ["overfitting: validation loss ended more than 2% above its minimum in "
                                    "A (seed 0, 1); B (seed 0, 1)."]),
    (0.8, 1.6, [1.7, 1.6, 1.6], ["val far above train: val is 2.00× to 2.00× train across the rows. The model "
                                 "fits its 1,234 training characters"]),
])
def test_quick_warnings_use_the_reports_thresholds(train, val, curve, expected):
    from modern_gpt.reporting.findings import quick_warnings
    from modern_gpt.reporting.settings import Settings
    ref = row_result("a", "A", [curve_record(s, train, val, curve) for s in (0, 1)])
    row = row_result("b", "B", [curve_record(s, train, val, curve) for s in (0, 1)], ref)
    lines = quick_warnings([ref, row], Settings(), train_chars=1234)
    assert [line[:len(e)] for line, e in zip(lines, expected)] == expected
    assert len(lines) == len(expected) + 2 and lines[-2].startswith("units:") and lines[-1].startswith("next:")


def test_the_quick_table_and_the_report_give_one_verdict():
    """Effect larger than the spread but the t-interval includes zero: noise in both front ends."""
    ref_vals, row_vals = [1.00, 1.00, 1.02], [0.98, 0.98, 0.96]              # effect -0.033, spread 1.69 x 0.0115
    ref = row_result("a", "A", [run_record(s, v) for s, v in enumerate(ref_vals)])
    row = row_result("b", "B", [run_record(s, v) for s, v in enumerate(row_vals)], ref)
    c = compare(row_vals, ref_vals)
    assert abs(c.effect) > c.spread and c.ci_low < 0 < c.ci_high              # the old quick rule said "yes"
    assert c.verdict == "noise" and format_row(row).endswith(verdict_text(c))


def test_a_diverged_seed_reaches_the_quick_table(monkeypatch, capsys):
    calls = []
    real_losses = loop.One.losses

    def exploding(self, x, y):
        calls.append(1)
        values = real_losses(self, x, y)
        return [float("nan")] if len(calls) == 2 else values       # seed 0 of the baseline, its second step

    monkeypatch.setattr(loop.One, "losses", exploding)
    assert main(["ablate", "--smoke", "--iters", "3", "--n-layer", "1", "--seeds", "2"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows[0].rstrip().endswith("(1/2 diverged)") and "(1 seed)" not in rows[0]
    assert "diverged" not in rows[1]


def test_user_corpus(tmp_path, capsys):
    corpus = tmp_path / "mine.txt"
    corpus.write_text("नमस्ते संसार । " * 200, encoding="utf-8")
    assert main(["ablate", "--corpus", str(corpus), "--iters", "2", "--n-layer", "1", "--n-embd", "32",
                 "--block-size", "16"]) == 0
    out = capsys.readouterr().out
    assert "vocab=11 " in out and len(table_rows(out)) == 7


def test_n_embd_changes_the_parameter_counts(capsys):
    main(["ablate", "--smoke", "--iters", "2", "--n-layer", "1"])
    small = table_rows(capsys.readouterr().out)[0][22:30]
    main(["ablate", "--smoke", "--iters", "2", "--n-layer", "1", "--n-embd", "128"])
    large = table_rows(capsys.readouterr().out)[0][22:30]
    assert float(large.strip()[:-1]) > float(small.strip()[:-1])


def write_bytes(tmp_path, data: bytes) -> str:
    p = tmp_path / "corpus.txt"
    p.write_bytes(data)
    return str(p)


BAD = [
    (["ablate", "--bogus"], "unrecognized arguments: --bogus"),
    (["ablate", "--device", "gpu"], "argument --device: invalid choice: 'gpu'"),
    (["ablate", "--smoke", "--n-kv-head", "3"], "n_head must be divisible by n_kv_head"),
    (["ablate", "--smoke", "--n-embd", "50"], "n_embd must be divisible by n_head"),
    (["ablate", "--smoke", "--n-embd", "12"], "head dim (3) must be even"),
    (["ablate", "--smoke", "--iters", "0"], "iters=0: must be a positive integer"),
    (["ablate", "--smoke", "--seeds", "0"], "--seeds=0"),
    (["ablate", "--corpus", "/no/such/corpus.txt"], "no such file or folder"),
    (["ablate", "--smoke", "--block-size", "4096"], "block_size=4096 needs at least"),
    (["ablate", "--smok"], "unrecognized arguments: --smok"),                   # no abbreviations
    (["ablate", "--smoke", "--iter", "3"], "unrecognized arguments: --iter 3"),
    (["bench", "--win", "2"], "unrecognized arguments: --win 2"),
    (["--smoke"], "--smoke is an option of ablate, not of modern-gpt itself: `modern-gpt ablate --smoke` "
                  "(the book's spelling: `python modern_gpt.py --ablate --smoke`)"),
    (["--iters", "3"], "--iters is an option of ablate, bench"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_is_one_line_on_stderr(args, message, capsys):
    with pytest.raises(SystemExit) as e:
        raise SystemExit(main(args))
    assert e.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err and captured.out == ""


@pytest.mark.parametrize("content, message", [
    (b"", "is empty"), (b" \n\n", "is empty"),
    (b"good text\n\xff\xfe bad", "not UTF-8 at byte 10 (line 2)"),
])
def test_bad_corpus_is_one_line_and_changes_nothing(tmp_path, capsys, content, message):
    path = write_bytes(tmp_path, content)
    assert main(["ablate", "--corpus", path]) == 2
    assert message in capsys.readouterr().err
    assert Path(path).read_bytes() == content and os.listdir(tmp_path) == ["corpus.txt"]


TINY_BENCH = ["bench", "--n-layer", "1", "--n-embd", "32", "--block-size", "16", "--batch-size", "2",
              "--iters", "1", "--windows", "2", "--warmup", "1"]


def bench_lines(out: str) -> list[list[str]]:
    """The table's lines as (variant, mode, rest...): its columns are two spaces apart or more, a cell holds
    single spaces at most, and an empty cell (× same of batched seeds) drops out."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("variant")) + 2
    return [re.split(r" {2,}", line.strip()) for line in lines[start:] if line.strip() and not line.startswith("×")]


@pytest.mark.slow                  # the quick command, the bench or a stage in processes of their own
def test_bench_times_a_reference_and_every_row_side_by_side(capsys):
    assert main([*TINY_BENCH, "--compile", "none", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "float32 matmul peak (best size" in out
    table = bench_lines(out)
    assert table[0][:2] == ["reference (plain Step 1)", "eager"]
    assert table[0][5:7] == ["1.00", "1.00"]                       # the reference against itself
    assert [t[0] for t in table[1::2]] == LABELS and {t[1] for t in table[1::2]} == {"eager"}
    assert [t[0] for t in table[2::2]] == LABELS and {t[1] for t in table[2::2]} == {"2 seeds batched"}
    for t in table:
        assert float(t[3].replace(",", "")) > 0 and t[-2].endswith("%") and t[-1].endswith("s")


@pytest.mark.slow                  # the quick command, the bench or a stage in processes of their own
def test_bench_compiles_the_rows_it_is_given(capsys):
    assert main([*TINY_BENCH, "--rows", "baseline,qk_norm", "--compile", "default"]) == 0
    table = bench_lines(capsys.readouterr().out)
    assert [t[:2] for t in table] == [["reference (plain Step 1)", "eager"], ["reference (plain Step 1)", "default"],
                                      ["Step 1 baseline", "eager"], ["Step 1 baseline", "default"],
                                      ["+ QK-norm", "eager"], ["+ QK-norm", "default"]]


def test_bench_decode_times_servings_generation_with_and_without_the_cache(monkeypatch, capsys):
    """--decode's figures are serving's timings (the serve stage's own): one generation per window and mode."""
    import modern_gpt.bench.decode as decode
    calls, real = [], decode.timings

    def recorded(model, batch, prompt_len, new_tokens, **kw):
        calls.append((batch, prompt_len, new_tokens, kw["cache"], kw["repeats"]))
        return real(model, batch, prompt_len, new_tokens, **kw)

    monkeypatch.setattr(decode, "timings", recorded)
    assert main(["bench", "--decode", "--contexts", "16,8", "--iters", "2", "--windows", "1", "--n-layer", "1",
                 "--n-embd", "32"]) == 0
    lines = [cells(line) for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert lines[0][:2] == ["row", "context"] and len(lines[0]) == 7
    rows = ("Step 1 baseline", "+ QK-norm")
    assert [line[:2] for line in lines[1:]] == [[row, c] for row in rows for c in ("8", "16")]
    assert all(float(line[2].replace(",", "")) > 0 < float(line[3].replace(",", "")) for line in lines[1:])
    assert lines[1][5:] == lines[3][5:] == ["1.00×", "1.00×"]                 # the shortest context against itself
    assert calls == [(1, c - 2, 2, cache, 1) for _row in (0, 1) for c in (8, 16) for cache in (True, False)]


@pytest.mark.parametrize("args, message", [
    (["--rows", "baseline,nope"], "--rows: no row nope"),
    (["--seeds", "0"], "--seeds=0: must be at least 1"),
    (["--compile", "fast"], "argument --compile: invalid choice"),
    (["--decode", "--iters", "0"], "--iters=0: must be at least 1"),
])
def test_bench_bad_options_are_one_line(capsys, args, message):
    try:
        code = main([*TINY_BENCH, *args])
    except SystemExit as e:                                         # argparse's own one-line error
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1

MODEL_LIBRARIES = ("torch", "transformers", "pandas", "matplotlib", "tokenizers")


@pytest.mark.parametrize("args", [["--help"], ["review", "HEAD"], ["review", "--check"]], ids=" ".join)
def test_a_command_that_needs_no_model_imports_no_model_library(args):
    """--help, review and review --check (its `dvc status` is a process of its own) import no torch, nor the
    report's plotting and table libraries: each command imports what it uses when it runs."""
    code = ("import sys\nfrom modern_gpt.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            f"print('imported:', *[m for m in {MODEL_LIBRARIES!r} if m in sys.modules], file=sys.stderr)\n")
    out = run([sys.executable, "-c", code, *args])
    *said, imported = out.stderr.splitlines()
    assert imported == "imported:", out.stderr
    assert "Traceback" not in out.stderr and (out.stdout or said)       # it ran: a page, a review or a check


def test_ray_is_an_extra_no_import_of_the_project_imports_it_and_repro_ray_without_it_is_one_line(tmp_path):
    check = ("import sys, modern_gpt, modern_gpt.cli, modern_gpt.cli.repro, modern_gpt.cli.support.shared_runs\n"
             "assert 'ray' not in sys.modules, 'ray imported'\n")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "params.yaml").write_bytes((ROOT / "params.yaml").read_bytes())   # checked first (check_params)
    hidden = ("import sys; sys.modules['ray'] = None\n"       # ray not installed: its import fails
              "from modern_gpt.cli import main; sys.exit(main(['repro', '--ray']))\n")
    done = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == ("modern-gpt: error: --ray: ray is not installed here; install it: pip install -e "
                                   "'.[ray]' (or pip install -r requirements.txt, which pins it)")


def test_export_and_import_help_name_every_family_the_bridge_handles(monkeypatch, capsys):
    from modern_gpt.config.hf_class import HF_CLASSES
    families = [{"GPT2LMHeadModel": "GPT-2"}.get(c, c.removesuffix("ForCausalLM")) for c in HF_CLASSES]
    named = ", ".join(families[:-1]) + " or " + families[-1]             # GPT-2, Llama, Mistral or Qwen3
    monkeypatch.setenv("COLUMNS", "200")                                   # one line per command
    with pytest.raises(SystemExit):
        main(["--help"])
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines() if named in line] == ["export", "import"]


def test_explain_and_import_config_read_a_folders_config_json(tmp_path, capsys):
    config = ROOT / "tests" / "fixtures" / "hf_configs" / "llama-3-8b.json"
    (tmp_path / "config.json").write_bytes(config.read_bytes())
    for command in ("explain", "import-config"):
        assert main([command, str(config)]) == 0
        from_file = capsys.readouterr().out
        assert main([command, str(tmp_path)]) == 0
        assert capsys.readouterr().out == from_file
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["explain", str(empty)]) == 2
    assert capsys.readouterr().err == (f"modern-gpt: error: {empty}: a folder without config.json (give a model's "
                                       "config.json, or the folder that holds it)\n")


@pytest.mark.parametrize("args, message", [
    (["--temperature", "-1"], "--temperature=-1.0: must be at least 0 (0: greedy)"),
    (["--temperature", "nan"], "--temperature=nan: must be at least 0 (0: greedy)"),
    (["--top-k", "-1"], "--top-k=-1: must be at least 0 (0: all tokens)"),
])
def test_sample_names_only_the_bad_setting(tmp_path, capsys, args, message):
    """Checked before the run is read: the line names the one setting, not every sampling setting at once."""
    assert main(["sample", str(tmp_path), *args]) == 2
    assert capsys.readouterr().err == f"modern-gpt: error: {message}\n"


def test_the_quick_command_judges_the_catalogue_each_change_against_row_0(capsys, monkeypatch):
    """--catalogue: each change params.yaml's catalogue: gives, alone on the book's design, compared with row 0."""
    from modern_gpt.reporting import results
    seen = []
    original = results.row_result

    def spy(slug, label, runs, ref=None, **kw):
        seen.append((slug, ref.slug if ref is not None else None))
        return original(slug, label, runs, ref, **kw)
    monkeypatch.setattr(results, "row_result", spy)
    assert main(["ablate", "--smoke", "--catalogue", "--iters", "2", "--n-layer", "2"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("the book's design", "+ "))]
    assert [r.split("  ")[0] for r in rows] == ["the book's design", "+ sandwich norm", "+ value embeddings",
                                               "+ partial RoPE (25%)", "+ differential attention", "+ gated attention",
                                               "+ token shift (smear)", "+ multi-token prediction", "+ z-loss",
                                               "+ MoE (top-2 of 4)"]
    assert [ref for _, ref in seen] == [None] + ["qk_norm"] * 9
    assert main(["ablate", "--smoke", "--catalogue", "--beyond"]) == 2
    assert capsys.readouterr().err.strip().endswith("--beyond and --catalogue: one ladder at a time (the second "
                                                    "ladder, or the catalogue)")


def test_the_quick_command_judges_the_second_ladder_with_your_own_changes_rows(capsys):
    """--beyond: the second ladder from the book's design, every flag params.yaml gives it while it is off, the
    parallel block and value-residual learning (changes/) included; two seeds get the rule's verdicts."""
    assert main(["ablate", "--smoke", "--beyond", "--iters", "3", "--n-layer", "2", "--seeds", "2"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("the book's design", "+ "))]
    assert [r.split("  ")[0] for r in rows] == ["the book's design", "+ ReLU²", "+ untied head", "+ logit soft-cap 15",
                                               "+ sliding window 16 (SL)", "+ parallel block", "+ value residual",
                                               "+ Muon"]
    assert all(re.search(r"\s(better|worse|noise)", r) for r in rows[1:])


@pytest.mark.slow                                                  # a copy of the smoke build (tests/e2e.py)
def test_a_switch_set_to_1_which_dvc_sees_as_unchanged_is_refused_by_every_runner_before_anything_runs(
        repo, monkeypatch, capsys):
    """DVC compares a param's old and new value by equality (true == 1): after `qk_norm: true` becomes `1` it sees
    nothing to run, so a plain `dvc repro` refuses nothing. repro, settle, shard and reproduce check every value first
    (cli/support/dvc_calls.py: check_params), each in one line naming the key, and leave params.yaml as it was."""
    from e2e import commit, status
    (repo / "reports" / "overlays").mkdir(parents=True)
    (repo / "reports" / "overlays" / "beyond.yaml").write_bytes((ROOT / "reports/overlays/beyond.yaml").read_bytes())
    text = (repo / "params.yaml").read_text()
    bad = re.sub(r"^  qk_norm: true$", "  qk_norm: 1", text, count=1, flags=re.M)
    assert bad != text
    (repo / "params.yaml").write_text(bad)
    commit(repo, "qk_norm: 1")
    assert status(repo) == set()                                 # DVC: nothing changed
    monkeypatch.chdir(repo)
    for args in (["repro"], ["settle"], ["shard", "1/2"], ["reproduce", "beyond"]):
        assert main(args) == 2, args
        assert capsys.readouterr().err == "modern-gpt: error: model.qk_norm=1: must be true or false\n", args
        assert (repo / "params.yaml").read_text() == bad
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""
