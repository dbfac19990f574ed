"""Generation: the cache gives the tokens of a full recompute; the sample command and the serving section."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from modern_gpt.cli import main
from modern_gpt.core.errors import ConfigError, DataError
from modern_gpt.config.params import project_params
from modern_gpt.records.stages import ServeRecord
from modern_gpt.corpus.tokenizers import SymbolTokenizer
from modern_gpt.nn import GPT
from modern_gpt.pipeline.ladder_params import read_params
from modern_gpt.reporting.cells import fence
from modern_gpt.reporting.pages import build_main
from modern_gpt.reporting.results import Ladder, Results
from modern_gpt.reporting.settings import Settings
from modern_gpt.config.sections import PARSERS
from modern_gpt.serving.generate import generate, serve_row, timings
from fakes import ladder, run_json
from md_tables import cells

ROOT = Path(__file__).resolve().parents[1]
ROWS = read_params(ROOT / "params.yaml").rows(vocab_size=19)
FULL = dataclasses.replace(ROWS[-1].config, block_size=32, n_layer=2, n_embd=32)
SERVE = project_params()["serve"]                 # params.yaml's serve: section, the one definition of its values


@pytest.mark.parametrize("temperature, top_k", [(0.0, None), (1.0, None), (0.8, 5)])
def test_the_cache_generates_the_tokens_of_a_full_recompute(temperature, top_k):
    torch.manual_seed(0)
    model = GPT(FULL).eval()
    prompt = torch.randint(0, 19, (2, 7), generator=torch.Generator().manual_seed(3))
    a = generate(model, prompt, 100, temperature=temperature, top_k=top_k, seed=4)
    b = generate(model, prompt, 100, temperature=temperature, top_k=top_k, seed=4, cache=False)
    assert a.shape == (2, 32) and torch.equal(a, b) and torch.equal(a[:, :7], prompt)    # stops at the context
    assert torch.equal(generate(model, prompt, 5, temperature=temperature, top_k=top_k, seed=4), a[:, :12])


def test_top_k_one_is_greedy():
    model = GPT(FULL).eval()
    prompt = torch.zeros(1, 3, dtype=torch.long)
    assert torch.equal(generate(model, prompt, 10, top_k=1, seed=1), generate(model, prompt, 10, temperature=0))


def test_a_prompt_longer_than_the_context_is_one_line():
    with pytest.raises(ConfigError, match=r"prompt: 33 tokens, longer than the model's context \(block_size=32\)"):
        generate(GPT(FULL), torch.zeros(1, 33, dtype=torch.long), 1)


def test_serve_row_measures_and_checks_the_cache():
    s = PARSERS["serve"]({**SERVE, "new_tokens": 10, "repeats": 2, "batch": 2}, "serve")
    model = GPT(FULL).eval()
    row = serve_row(model, [1, 2, 3], s)
    assert len(row["sample"]) == 10 and row["new_tokens"] == 10
    assert row["kv_bytes_per_token"] == 2 * 2 * FULL.n_kv_head * FULL.head_dim * 4
    assert row["kv_bytes_per_sequence"] == row["kv_bytes_tensor"] == row["kv_bytes_per_token"] * 32
    assert row["prefill_tokens_per_sec"] > 0 and row["decode_tokens_per_sec"] > 0
    t = timings(model, 2, 4, 6, repeats=2, cache=False)
    assert t.decode_tokens_per_sec > 0


@pytest.mark.parametrize("raw, message", [
    ({"batch": 0}, "serve.batch=0: must be an integer in [1,"),
    ({"temperature": -1}, "serve.temperature=-1: must be a number in [0.0, 100.0)"),
    ({"top_k": 1.5}, "serve.top_k=1.5: must be an integer"),
    ({"colour": 1}, "serve.colour: unknown key"),
    ("x", "serve: must be a mapping"),
    (None, "serve.prompt_tokens: missing"),                 # no serve: section: every key is params.yaml's to give
])
def test_bad_serve_settings_are_one_line(raw, message):
    raw = {**SERVE, **raw} if isinstance(raw, dict) else raw
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        PARSERS["serve"](raw, "serve")


def served(rows, kv_heads):
    settings = PARSERS["serve"](SERVE, "serve")
    return [ServeRecord(slug=r.slug, seed=0, settings=settings, prompt=(1, 2), prompt_text="रामः ", sample=(3,),
                        n_kv_head=k, context=64, windows=(None,) * 4, kv_bytes_per_token=1024 * k,
                        kv_bytes_per_sequence=65536 * k, kv_bytes_tensor=65536 * k, weights_bytes=3_000_000,
                        prefill_tokens_per_sec=5000.0, decode_tokens_per_sec=900.0 + k, new_tokens=48,
                        sample_text=f"वनम् {k}", machine="CPU X", device="cpu", threads=2, torch="2.13.0",
                        python="3.11.7") for r, k in zip(rows, kv_heads)]


def test_a_serve_record_goes_out_and_comes_back_the_same(tmp_path):
    record = served(ladder([[1.0, 1.01, 1.02]]), [2])[0]
    path = tmp_path / "serve.json"
    path.write_text(json.dumps(record.to_dict()))
    assert ServeRecord.from_dict(json.loads(path.read_text())) == record
    old = {k: v for k, v in record.to_dict().items() if k not in ("windows", "device")}    # an older version's file
    with pytest.raises(DataError, match=r"^serve record: not a ServeRecord of this version .*rerun it: dvc repro$"):
        ServeRecord.from_dict(old)
    bad = {**record.to_dict(), "settings": {**record.to_dict()["settings"], "batch": 0}}
    with pytest.raises(DataError, match=r"^serve record.settings: batch=0: must be an integer .*; rerun it: dvc repro$"):
        ServeRecord.from_dict(bad)


def test_the_serving_section_shows_the_cache_and_the_gqa_saving():
    rows = ladder([[1.0, 1.01, 1.02], [0.99, 1.0, 1.01], [0.98, 0.99, 1.0]])
    text = build_main(Results([Ladder("main", rows, serve=served(rows, [4, 4, 2]))], Settings())).markdown
    assert "## Serving cost" in text and "## Samples" in text
    lines = [line for line in text.splitlines() if line.startswith("| + RoPE")]
    assert cells(lines[0]) == [
        "+ RoPE", "2", "2 KiB", "128 KiB", "128 KiB", "0.50×", f"{(16 * 2**30 - 3_000_000) // (65536 * 2):,}",
        "5,000", "902"]
    assert ("**+ RoPE** keeps 0.50× the KV cache of the row above (4 K/V heads → 2 K/V heads), so 65,524 → "
            "131,049 full-context sequences fit in 16 GiB") in text
    assert "| attention |" not in text                              # no row has a window: no column for it
    assert "```text\nरामः वनम् 2\n```" in text and "on CPU X, 2 threads" in text
    assert "## Serving cost" not in build_main(Results([Ladder("main", rows)], Settings())).markdown


def test_a_fence_is_longer_than_any_backticks_inside():
    assert fence("a ```` b") == "`````text\na ```` b\n`````"


@pytest.fixture
def run_dir(tmp_path):
    """A run folder and a tokenized folder as the pipeline lays them out."""
    text = "रामः वनम् गच्छति ।\n" * 20
    tok = SymbolTokenizer.fit({"kind": "char"}, text)
    cfg = dataclasses.replace(FULL, vocab_size=tok.vocab_size)
    run = tmp_path / "runs" / "qk_norm" / "0"
    run.mkdir(parents=True)
    torch.manual_seed(0)
    torch.save(GPT(cfg).state_dict(), run / "model.pt")
    (run / "run.json").write_text(run_json(cfg))
    data = tmp_path / "tokenized"
    data.mkdir()
    (data / "tokenizer.json").write_text(json.dumps(tok.to_dict()))
    torch.tensor(tok.encode(text), dtype=torch.int32).numpy().tofile(data / "val.bin")
    return run, data


def test_sample_marks_where_the_prompt_ends_and_when_the_context_caps_it(run_dir, capsys):
    run, data = run_dir
    assert main(["sample", str(run), "--data", str(data), "--prompt", "रामः", "--tokens", "8", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    head, prompt, rule, generated = out.split("\n", 3)
    assert head == "── prompt (4 tokens) ──" and prompt == "रामः" and rule == "── generated (8 tokens) ──"
    assert len(generated.removesuffix("\n")) == 8                         # 8 characters: one token each
    assert main(["sample", str(run), "--data", str(data), "--tokens", "5", "--prompt-tokens", "4"]) == 0
    assert capsys.readouterr().out.split("\n")[1] == "रामः"                 # the validation text's start
    assert main(["sample", str(run), "--data", str(data), "--prompt", "रामः", "--tokens", "256"]) == 0
    lines = capsys.readouterr().out.split("\n")                          # block_size 32 − a 4-token prompt
    assert lines[2] == ("── generated (28 tokens; the model's context of 32 tokens stops it there, short of "
                        "--tokens 256) ──")


@pytest.mark.parametrize("args, message", [
    (["--prompt", "hello राम"], "--prompt: 'e', 'h', 'l', 'o' not in the vocabulary"),
    (["--prompt", "राम" * 20], "prompt: 60 tokens, longer than the model's context (block_size=32)"),
    (["--prompt", ""], "--prompt: empty"),
])
def test_sample_refuses_bad_prompts_in_one_line(run_dir, capsys, args, message):
    run, data = run_dir
    assert main(["sample", str(run), "--data", str(data), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("command", [["sample"], ["export", "OUT"]])
def test_a_run_missing_from_a_fresh_clone_says_how_to_get_it_in_one_line(tmp_path, capsys, command):
    """A clone has the report and configs/ but no weights: sample and export say so, and name the DVC commands."""
    missing = tmp_path / "data" / "runs" / "qk_norm" / "0"
    args = [command[0], str(missing)] + [str(tmp_path / c) for c in command[1:]]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err == (f"modern-gpt: error: {missing}: no trained run here (a clone has the report and configs/, not "
                   "the weights): `dvc repro run@qk_norm-0` trains it, or `dvc pull tokenize run@qk_norm-0` fetches it "
                   "and the tokenizer from a DVC remote that holds the runs (docs/machines.md)\n")
    assert not (tmp_path / "OUT").exists()
    assert main(["sample", str(tmp_path / "elsewhere")]) == 2
    assert capsys.readouterr().err.endswith("elsewhere: no such folder\n")


def test_sample_without_the_tokenizer_says_how_to_get_it(run_dir, capsys):
    run, data = run_dir
    (data / "tokenizer.json").unlink()
    assert main(["sample", str(run), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert err.endswith("tokenizer.json: not found (--data: the folder the tokenize stage writes; `dvc repro "
                        "tokenize` writes it, `dvc pull tokenize` fetches it)\n") and err.count("\n") == 1


def test_import_of_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main(["import", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"modern-gpt: error: {tmp_path / 'nope'}: no such folder") and err.count("\n") == 1


def test_sample_refuses_what_is_not_a_run_in_one_line(run_dir, capsys):
    run, data = run_dir
    assert main(["sample", str(run.parent), "--data", str(data)]) == 2
    assert "qk_norm: not a run folder (a run folder holds model.pt and run.json)" in capsys.readouterr().err
    (run / "model.pt").rename(run / "weights.pt")
    assert main(["sample", str(run), "--data", str(data)]) == 2
    assert "model.pt: not found (a run folder holds model.pt and run.json)" in capsys.readouterr().err
    (run / "weights.pt").rename(run / "model.pt")
    record = json.loads((run / "run.json").read_text())
    cfg = record["model"]
    for model, message in [({**cfg, "n_embd": 64}, "weights do not fit the config"),      # another shape
                           ({**cfg, "window": 8}, "run.json.model: not a ModelConfig of this version")]:  # unknown key
        (run / "run.json").write_text(json.dumps({**record, "model": model}))
        assert main(["sample", str(run), "--data", str(data)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    # the one strict reader of a run.json (records/run_record.py): another version's record, or not JSON
    (run / "run.json").write_text(json.dumps({k: v for k, v in record.items() if k != "losses"}))
    assert main(["sample", str(run), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "run.json: not a RunRecord of this version (keys " in err and err.count("\n") == 1, err
    (run / "run.json").write_text("{not json")
    assert main(["sample", str(run), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "run.json: not readable JSON (" in err and err.count("\n") == 1, err


def test_the_serving_section_shows_a_windows_saving_computed_and_from_the_tensor():
    rows = ladder([[1.0, 1.01, 1.02], [0.99, 1.0, 1.01]])
    full, windowed = served(rows, [2, 2])
    full = dataclasses.replace(full, windows=(None,) * 4, kv_bytes_per_token=8192, kv_bytes_per_sequence=2048 * 256,
                               kv_bytes_tensor=2048 * 256)                 # 4 layers x 64 tokens x 2048 bytes per layer-token
    windowed = dataclasses.replace(windowed, windows=(16, 16, 16, None), kv_bytes_per_token=8192,
                                   kv_bytes_per_sequence=2048 * 112, kv_bytes_tensor=2048 * 112,
                                   decode_tokens_per_sec=850.0)   # 3 x 16 + 64 layer-tokens
    text = build_main(Results([Ladder("main", rows, serve=[full, windowed])], Settings())).markdown
    line = next(x for x in text.splitlines() if x.startswith(f"| {rows[1].label}"))
    assert cells(line) == [
        rows[1].label, "2", "window 16 on 3 of 4 layers", "8 KiB", "224 KiB", "224 KiB", "0.44×",
        f"{(16 * 2**30 - 3_000_000) // (2048 * 112):,}", "5,000", "850"]
    assert ("keeps 0.44× the KV cache of the row above (2 K/V heads → 2 K/V heads, window 16 on 3 of 4 layers)"
            in text)
    assert "ring buffer" in text
