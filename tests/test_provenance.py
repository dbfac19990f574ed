"""The report's provenance table: each line from the stages' outputs (corpus meta, run records), on cases built here."""

import dataclasses
import math

import pytest

from fakes import run_record
from modern_gpt.records.inputs import CorpusMeta
from modern_gpt.records.run_record import RunRecord
from modern_gpt.records.stages import Floor
from modern_gpt.reporting.provenance import code_line, provenance
from modern_gpt.reporting.results import RowResult, ladder_results, row_result

MODEL = {"n_layer": 3, "n_head": 6, "n_kv_head": 6, "n_embd": 96, "block_size": 48, "dropout": 0.1, "mlp_hidden": 0}
TRAIN = {"iters": 1500, "batch_size": 8, "lr": 0.002, "min_lr": 0.0002, "warmup_iters": 50, "weight_decay": 0.1,
         "grad_clip": 1.0, "eval_interval": 250, "eval_iters": 5}
META = CorpusMeta.from_dict({
    "corpus": {"path": "data/generated/sanskrit.txt", "bytes": 5_432_100, "md5": "0123456789abcdef", "chars": 2_000_000},
    "val_fraction": 0.15,
    "tokenizer": "akshara",
    "vocab_size": 1234,
    "train": {"tokens": 960_000, "chars": 1_700_000},
    "val": {"tokens": 170_000, "chars": 300_000},
})
EPYC = "AMD EPYC (family 25, model 17; AVX512)"
FILES = ("src/modern_gpt/core/errors.py", "src/modern_gpt/records/__init__.py, src/modern_gpt/records/run_record.py", "src/modern_gpt/nn/model.py",
         "src/modern_gpt/training/loop.py", "stages/run.py")


def record(row: str, seed: int, val: float, *, model: dict | None = None, md5: str = "",
           files: tuple[str, ...] = (), device: str = "cpu", torch: str = "2.3.1", machine: str = EPYC,
           threads: int = 2, processes: int = 1) -> RunRecord:
    """fakes.run_record at this file's shape and recipe, trained TRAIN's steps on a machine of its own."""
    return run_record(seed, val, params=200_000, slug=row, model={**MODEL, **(model or {})}, train_cfg=TRAIN,
                      params_non_embedding=190_000,
                      curve=[3.0, val], steps=TRAIN["iters"], secs=12.0,
                      tokens_per_sec=3000.0, device=device, torch=torch, machine=machine, threads=threads,
                      processes=processes, python="3.11.7", code_md5=md5, code_files=files)


def rows_of(*runs_per_row: list[RunRecord]) -> list[RowResult]:
    labels = ["Step 1 baseline", "+ RMSNorm", "+ RoPE"]
    return ladder_results([(runs[0].slug, labels[i], runs) for i, runs in enumerate(runs_per_row)])


def two_rows(**kw) -> list[RowResult]:
    return rows_of([record("baseline", s, 2.0 + s / 100, **kw) for s in (3, 5, 7)],
                   [record("norm", s, 1.9 + s / 100, **kw) for s in (3, 5, 7)])


def test_each_line_reads_the_meta_and_the_run_records():
    info = provenance(META, two_rows(md5="aaaabbbbcccc", files=FILES), None)
    assert list(info) == ["corpus", "split", "tokenizer", "model shape", "seeds", "training", "optimizer", "speed",
                          "evaluation", "training code", "machine"]
    assert info["speed"] == "float32 (TF32 matmuls on CUDA), eager (train.compile: none)"   # older records: defaults
    assert info["corpus"] == "`data/generated/sanskrit.txt`: 2,000,000 characters, 5,432,100 bytes, md5 `0123456789abcdef`"
    assert info["split"] == ("contiguous; the last 15% validates (300,000 characters, 170,000 tokens; "
                             "train 960,000 tokens)")                          # meta's val_fraction, not params'
    assert info["tokenizer"] == "akshara, vocabulary 1,234"
    assert info["model shape"] == "3 layers, 6 heads, 96 wide, context 48, dropout 0.1"
    assert info["seeds"] == "3, 5, 7"                                          # the runs' seeds
    # 1500 × 8 × 48 = 576,000 tokens per run, 0.60 passes over 960,000 train tokens
    assert info["training"] == ("1,500 steps × 8 sequences × 48 tokens = 576,000 tokens per run (0.60 passes over "
                                "the train split); lr 0.002 → 0.0002 (warm-up 50, cosine), weight decay 0.1, clip 1")
    assert info["optimizer"] == "fused AdamW"
    assert info["evaluation"] == "40 fixed windows of 48 tokens per split, every 250 steps and at the end"
    assert info["training code"].startswith("md5 `aaaabbbbcccc` over the 5 files the runs imported")
    assert info["machine"] == f"{EPYC}, cpu, 2 threads, torch 2.3.1, Python 3.11.7"    # from the records


def test_the_model_shape_comes_from_the_run_records():
    wide = {**MODEL, "n_layer": 6, "n_embd": 192, "block_size": 128}
    info = provenance(META, two_rows(model=wide), None)
    assert info["model shape"] == "6 layers, 6 heads, 192 wide, context 128, dropout 0.1"
    assert info["training"].startswith("1,500 steps × 8 sequences × 128 tokens = 1,536,000 tokens per run (1.60 passes")
    assert info["evaluation"] == "40 fixed windows of 128 tokens per split, every 250 steps and at the end"


def test_runs_from_several_machines_are_grouped_and_the_report_says_what_that_means():
    h200 = dict(machine="NVIDIA H200", device="cuda", torch="2.11.0+cu128", threads=16)
    rows = rows_of([record("baseline", 0, 2.0, **h200), record("baseline", 1, 2.1)],
                   [record("norm", 0, 1.9, **h200), record("norm", 1, 2.0)])
    line = provenance(META, rows, None)["machine"]
    assert line.startswith("**2 machines or thread counts**: ")
    assert (f"{EPYC}, cpu, 2 threads, torch 2.3.1, Python 3.11.7 (Step 1 baseline, + RMSNorm); "
            "NVIDIA H200, cuda, 16 threads, torch 2.11.0+cu128, Python 3.11.7 (Step 1 baseline, + RMSNorm)") in line
    assert "differ by rounding" in line and "borderline" in line
    assert provenance(META, rows_of([record("baseline", s, 2.0 + s) for s in (0, 1)]), None)["machine"] == \
        f"{EPYC}, cpu, 2 threads, torch 2.3.1, Python 3.11.7"
    other = rows_of([record("baseline", s, 2.0 + s) for s in (0, 1)])
    aa = rows_of([record("baseline", s, 2.0 + s, machine="Intel Xeon (family 6, model 143; AVX512)") for s in (5, 6)])
    assert provenance(META, other, None, others=aa)["machine"].startswith("**2 machines or thread counts**")   # every run counts


def test_runs_of_one_machine_at_two_thread_counts_are_grouped_with_the_warning():
    rows = rows_of([record("baseline", 0, 2.0, threads=1), record("baseline", 1, 2.1, threads=2)])
    line = provenance(META, rows, None)["machine"]
    assert line.startswith("**2 machines or thread counts**: ") and "differ by rounding" in line
    assert f"{EPYC}, cpu, 1 thread, torch" in line and f"{EPYC}, cpu, 2 threads, torch" in line


def test_runs_trained_by_several_torchrun_processes_say_so_on_the_machine_line():
    rows = rows_of([record("baseline", s, 2.0 + s, threads=1, processes=2) for s in (0, 1)])
    assert provenance(META, rows, None)["machine"] == \
        f"{EPYC}, cpu, 1 thread x 2 processes (torchrun), torch 2.3.1, Python 3.11.7"


def test_a_record_from_before_the_machine_was_recorded_says_so():
    old = rows_of([record("baseline", s, 2.0 + s, machine="", threads=0) for s in (0, 1)])
    assert provenance(META, old, None)["machine"] == "machine not recorded, cpu, torch 2.3.1, Python 3.11.7"


def test_parameter_matching_and_floor_lines_are_optional():
    info = provenance(META, two_rows(), None)
    assert "parameter matching" not in info and "floor" not in info
    matched = rows_of([record("baseline", 0, 2.0, model={**MODEL, "mlp_hidden": 0}),
                       record("baseline", 1, 2.1, model={**MODEL, "mlp_hidden": 0})],
                      [record("norm", 0, 1.9, model={**MODEL, "mlp_hidden": 392}),
                       record("norm", 1, 2.0, model={**MODEL, "mlp_hidden": 392})])
    info = provenance(META, matched, Floor(0.9, 0.0123, 50_000), match_params=True)
    assert info["parameter matching"] == "on: MLP hidden sizes Step 1 baseline default, + RMSNorm 392"
    assert info["floor"] == (f"0.9000 ± 0.0123 nats per character ({0.9 / math.log(2):.3f} bpc): the entropy of "
                             "the process that generated the corpus, the lowest loss any model can reach")
    assert info["floor"].startswith("0.9000 ± 0.0123 nats per character (1.298 bpc)")
    assert list(info)[-2:] == ["parameter matching", "floor"]


def test_code_line_with_one_md5_gives_it_and_the_file_count():
    line = code_line(two_rows(md5="aaaabbbbcccc", files=FILES))
    assert line.startswith("md5 `aaaabbbbcccc` over the 5 files the runs imported: ")
    assert "`stages/run.py` and 4 modules in `src/modern_gpt/{" in line
    for folder in ("core", "nn", "training"):
        assert folder in line.split("src/modern_gpt/{", 1)[1]
    assert "different" not in line


def test_code_line_counts_the_files_of_every_run_once():
    rows = rows_of([record("baseline", 0, 2.0, md5="aaaabbbbcccc", files=FILES[:3] + FILES[-1:])],
                   [record("norm", 0, 1.9, md5="aaaabbbbcccc", files=FILES)])
    assert code_line(rows).startswith("md5 `aaaabbbbcccc` over the 5 files the runs imported")


def test_code_line_says_when_the_runs_were_made_by_different_code():
    rows = rows_of([record("baseline", 0, 2.0, md5="bbbb00000000", files=FILES),
                    record("baseline", 1, 2.1, md5="aaaa00000000", files=FILES)],
                   [record("norm", 0, 1.9, md5="aaaa00000000", files=FILES),
                    record("norm", 1, 2.0, md5="aaaa00000000", files=FILES)])
    line = code_line(rows)
    assert line.startswith("**2 different versions** (md5 `aaaa00000000`, `bbbb00000000`)")   # sorted
    assert "different code" in line and "dvc repro" in line
    assert provenance(META, rows, None)["training code"] == line


def test_code_line_gives_one_version_and_each_rows_change_files_where_rows_import_their_own():
    """A row whose change file it imported too has another md5 by design: one version, and that row's files, not
    "different versions"; two runs of the same files with different md5s still are."""
    change = "src/modern_gpt/changes/parallel_block.py"
    rows = rows_of([record("baseline", 0, 2.0, md5="aaaa00000000", files=FILES),
                    record("baseline", 1, 2.1, md5="aaaa00000000", files=FILES)],
                   [record("norm", 0, 1.9, md5="cccc00000000", files=[*FILES, change]),
                    record("norm", 1, 2.0, md5="cccc00000000", files=[*FILES, change])])
    line = code_line(rows)
    assert line.startswith("md5 `aaaa00000000` over the 5 files the runs imported: ") and "different" not in line
    assert line.endswith("; rows with change files of their own: " + rows[1].label
                         + ": `changes/parallel_block.py` too, md5 `cccc00000000`")
    again = rows_of([record("baseline", 0, 2.0, md5="aaaa00000000", files=FILES)],
                    [record("norm", 0, 1.9, md5="cccc00000000", files=[*FILES, change]),
                     record("norm", 1, 2.0, md5="dddd00000000", files=[*FILES, change])])   # those files, twice
    assert code_line(again).startswith("**3 different versions**")


def test_code_line_without_an_md5_says_not_recorded():
    assert code_line(two_rows()) == "not recorded"
    assert provenance(META, two_rows(), None)["training code"] == "not recorded"


@pytest.mark.parametrize("fraction, shown", [(0.1, "10%"), (0.05, "5%"), (0.25, "25%")])
def test_the_split_states_the_fraction_the_tokenize_stage_used(fraction, shown):
    info = provenance(dataclasses.replace(META, val_fraction=fraction), two_rows(), None)
    assert info["split"].startswith(f"contiguous; the last {shown} validates (")


def test_a_record_round_trips_through_its_dict():
    r = record("baseline", 0, 2.0, md5="aaaabbbbcccc", files=FILES)
    assert RunRecord.from_dict(r.to_dict()) == r


def test_code_line_names_package_files_and_folders_and_counts_runs_without_a_hash():
    files = ("stages/run.py", "src/modern_gpt/__init__.py", "src/modern_gpt/nn/model.py", "src/modern_gpt/core/files.py")
    recorded = record("baseline", 0, 2.0, md5="aaaabbbbcccc", files=files)
    unrecorded = record("baseline", 1, 2.0)
    line = code_line([row_result("baseline", "Step 1 baseline", [recorded, unrecorded])])
    assert "3 modules in `src/modern_gpt/{__init__.py,core/,nn/}`" in line
    assert line.endswith("; 1 of 2 runs recorded none")


def test_the_hugging_face_line_groups_rows_by_class():
    from modern_gpt.reporting.provenance import hf_line
    line = hf_line([("Step 1 baseline", "GPT2LMHeadModel"), ("+ RMSNorm", None), ("+ SwiGLU", "LlamaForCausalLM"),
                    ("+ no bias", "LlamaForCausalLM"), ("+ QK-norm", "Qwen3ForCausalLM")])
    assert line == ("Step 1 baseline: GPT2LMHeadModel; + SwiGLU, + no bias: LlamaForCausalLM; + QK-norm: "
                    "Qwen3ForCausalLM; + RMSNorm: no class (`modern-gpt export` says which flag)")
    info = provenance(META, two_rows(), None, hf_classes=[("Step 1 baseline", "GPT2LMHeadModel")])
    assert info["Hugging Face"] == "Step 1 baseline: GPT2LMHeadModel"
    assert "Hugging Face" not in provenance(META, two_rows(), None)


def test_the_optimizer_line_names_the_rows_that_muon_trains():
    import dataclasses
    from modern_gpt.reporting.provenance import optimizer_line

    def with_opt(r: RunRecord, optimizer: str) -> RunRecord:
        return dataclasses.replace(r, train=dataclasses.replace(r.train, optimizer=optimizer))

    adamw = [[record(row, s, 2.0) for s in (0, 1)] for row in ("baseline", "norm", "pos")]
    assert optimizer_line(rows_of(*adamw)) == "fused AdamW"
    tail = rows_of(adamw[0], adamw[1], [with_opt(r, "muon") for r in adamw[2]])
    assert optimizer_line(tail).startswith("fused AdamW; from + RoPE on: Muon on the blocks' matrices")
    middle = rows_of(adamw[0], [with_opt(r, "muon") for r in adamw[1]], adamw[2])
    assert optimizer_line(middle).startswith("fused AdamW; in + RMSNorm: Muon")
    every = rows_of(*[[with_opt(r, "muon") for r in runs] for runs in adamw])
    assert optimizer_line(every).startswith("Muon on the blocks' matrices") and "fused AdamW on the rest" in optimizer_line(every)
