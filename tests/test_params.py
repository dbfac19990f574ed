"""params.yaml is read as DVC reads it (YAML 1.2) and checked strictly, one line per mistake.

Each section is checked by the code of the stage that reads it: the ladder's sections by
pipeline.ladder_params.parse, the corpus sections by corpus.settings, the report's by reporting.settings.
"""

import json
from pathlib import Path

import pytest
import yaml

from fakes import LABELS, META, default, plan_files, refused
from modern_gpt.config import params as params_file
from modern_gpt.core.errors import ConfigError, DataError
from modern_gpt.config.model_section import Baseline, ModelSection
from modern_gpt.config.params import read_yaml
from modern_gpt.pipeline.plan import plan
from modern_gpt.records.inputs import CorpusMeta, RowConfig
from modern_gpt.records.stages import Floor, LadderName, Plan
from modern_gpt.config.sections import OPTIONAL, PARSERS, SECTIONS, ReportConfig
from modern_gpt.pipeline.ladder_params import check_all, parse, read_params
from modern_gpt.reporting.settings import Settings, report_settings
from modern_gpt.stats.paired import BAND_SDS

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_params_resolve_to_the_seven_row_ladder():
    p = read_params(ROOT / "params.yaml")
    rows = p.rows(vocab_size=50)
    assert [r.label for r in rows] == LABELS
    assert rows[0].config.n_kv_head == rows[0].config.n_head          # empty baseline n_kv_head: multi-head
    assert p.seeds == [0, 1, 2, 3, 4]                                      # five seeds per row
    assert p.sweep.seeds == [0, 1, 2]                                   # the grid: the first three


def test_the_committed_corpus_and_report_sections_are_valid():
    raw = default()
    PARSERS["generate"](raw["generate"], "generate")
    assert PARSERS["data"](raw["data"], "data").val_fraction == 0.1
    assert PARSERS["tokenizer"](raw["tokenizer"], "tokenizer").kind == "char"
    assert isinstance(report_settings(raw["report"]), Settings)
    assert ReportConfig().borderline == BAND_SDS                                 # the calibrated default


@pytest.mark.parametrize("text, value", [
    ("x: no", "no"), ("x: yes", "yes"), ("x: on", "on"), ("x: true", True), ("x: False", False),
    ("x: 1e-3", 0.001), ("x: 1.0e-05", 1e-05), ("x: 010", 10), ("x: 0x10", 16), ("x:", None), ("x: null", None),
    ("x: 1_000", 1000), ("x: .5", 0.5),
])
def test_yaml_is_read_with_the_1_2_core_rules_like_dvc(text, value, tmp_path):
    from dvc.utils.serialize import parse_yaml
    (tmp_path / "p.yaml").write_text(text + "\n")
    assert read_yaml(tmp_path / "p.yaml")["x"] == value == parse_yaml(text, "p.yaml")["x"]   # DVC's own reading


def with_(section: str, key: str | None, value) -> dict:
    raw = default()
    if key is None:
        raw[section] = value
    else:
        raw[section] = {**raw[section], key: value}
    return raw


def beyond_on(**values) -> dict:
    """The committed params with the second ladder switched on, over `values` (model or train flags)."""
    raw = default()
    model = {k: v for k, v in values.items() if k != "optimizer"}
    train = {"optimizer": values["optimizer"]} if "optimizer" in values else {}
    raw["beyond"] = {"ladder": [*(raw["beyond"]["ladder"] or BEYOND), *[k for k in values if k not in BEYOND]],
                     "model": {**raw["beyond"]["model"], **model}, "train": {**raw["beyond"]["train"], **train}}
    return raw


BEYOND = ["mlp", "tie_embeddings", "logit_softcap", "optimizer"]

# The ladder's sections: pipeline.ladder_params.parse (the plan stage).
BAD = [
    (with_("model", "bias", "no"), "model.bias='no': must be true or false"),
    (with_("model", "norm", "batchnorm"), "model.norm='batchnorm': allowed values are layernorm, rmsnorm"),
    (with_("model", "n_kv_head", 3), "n_head must be divisible by n_kv_head"),
    (with_("model", "colour", "red"), "model.colour: unknown key"),
    (with_("model", "head_dim", "x"), "model.head_dim='x': must be an integer or null"),
    (with_("model", "head_dim", True), "model.head_dim=True: must be an integer or null"),
    (with_("baseline", "qk_norm", "off"), "baseline.qk_norm='off': must be true or false"),
    (with_("ladder", None, ["baseline", "norm", "warp"]), "ladder: unknown flag 'warp'"),
    (with_("ladder", None, ["baseline", "norm"]), "differ in n_kv_head, pos, mlp, bias, qk_norm"),
    (with_("ladder", None, ["norm", "pos", "mlp", "bias", "n_kv_head", "qk_norm"]),
     "ladder: must be a list that starts with baseline"),
    (with_("ladder", None, ["norm", "baseline", "pos", "mlp", "bias", "n_kv_head", "qk_norm"]),
     "ladder: must be a list that starts with baseline"),
    (with_("ladder", None, []), "ladder: must be a list that starts with baseline"),
    (with_("ladder", None, "baseline"), "ladder: must be a list that starts with baseline"),
    (with_("seeds", None, [0, 0]), "lists a seed twice"),
    (with_("seeds", None, []), "at least one seed"),
    (with_("seeds", None, [True]), "not a non-negative integer"),
    (with_("train", "iters", "many"), "train.iters='many': must be an integer"),
    (with_("train", "device", "tpu"), "train.device='tpu': allowed values are cpu, cuda, auto"),
    ({**default(), "extra": {}}, "params.extra: unknown section"),
    (with_("ablation", "rerun", ["pos", "warp"]), "ablation.rerun=['pos', 'warp']: must list rows of the ladder"),
    (with_("ablation", "rerun", ["pos", "pos"]), "ablation.rerun=['pos', 'pos']: must list rows of the ladder"),
    (with_("ablation", "rerun", "pos"), "ablation.rerun='pos': must list rows of the ladder (baseline, norm,"),
    (with_("ablation", "rerun_perturbation", 0), "ablation.rerun_perturbation=0: must be a number in"),
    (with_("ablation", "rerun_perturbation", 0.5), "ablation.rerun_perturbation=0.5: must be a number in"),
    (with_("train", "init_perturbation", -1e-7), "init_perturbation=-1e-07: must be a number in [0.0, 0.01)"),
    (with_("sweep", "lr", [0.5, -2]), "sweep.lr=[0.5, -2]: must list multiples of train.lr, each a positive number"),
    (with_("sweep", "lr", [0]), "sweep.lr=[0]: must list multiples of train.lr"),
    (with_("sweep", "lr", [2, 2.0]), "sweep.lr=[2, 2.0]: must list multiples of train.lr"),
    (with_("sweep", "lr", [1, 4]), "other than 1 (the main table's runs)"),
    (with_("sweep", "lr", ["x4"]), "sweep.lr=['x4']: must list multiples"),
    (with_("sweep", "lr", 4), "sweep.lr=4: must list multiples"),
    (with_("sweep", "lr", [True]), "sweep.lr=[True]: must list multiples"),
    (with_("sweep", "rows", ["qk_norm", "warp"]), "sweep.rows=['qk_norm', 'warp']: must list rows of the ladder"),
    (with_("sweep", "rows", ["qk_norm", "qk_norm"]), "sweep.rows=['qk_norm', 'qk_norm']: must list rows"),
    (with_("sweep", "steps", 3), "sweep.steps: unknown key; allowed keys are lr, rows, seeds"),
    (with_("sweep", "seeds", [0, 7]), "sweep.seeds=[0, 7]: must list seeds of the main table ([0, 1, 2, 3, 4])"),
    (with_("sweep", "seeds", []), "sweep.seeds=[]: must list seeds of the main table"),
    (with_("beyond", "ladder", ["mlp", "warp"]), "beyond.ladder=['mlp', 'warp']: must list flags given a value under "
     "beyond.model or beyond.train (mlp, tie_embeddings, logit_softcap, attn_window, parallel_block, value_residual, "
     "optimizer), each once; [] switches it off"),
    (with_("beyond", "ladder", ["mlp", "mlp"]), "beyond.ladder=['mlp', 'mlp']: must list flags"),
    (with_("beyond", "ladder", "mlp"), "beyond.ladder='mlp': must list flags"),
    (with_("beyond", None, {"ladder": [], "model": {"mlp": "relu3"}}),      # off, its values are checked still
     "beyond.model.mlp='relu3': allowed values are gelu, swiglu, relu2"),
    (with_("beyond", "model", {"colour": "red"}), "beyond.model.colour: unknown key; allowed keys are block_size"),
    (with_("beyond", "model", {"vocab_size": 9}), "beyond.model.vocab_size: unknown key"),
    (with_("beyond", "model", ["mlp"]), "beyond.model: must be a mapping of flag: value, got ['mlp']"),
    (with_("beyond", "train", {"warmup": 3}), "beyond.train.warmup: unknown key; allowed keys are iters"),
    (with_("beyond", "steps", 3), "beyond.steps: unknown key; allowed keys are ladder, model, train"),
    (beyond_on(mlp="relu3"), "beyond.model.mlp='relu3': allowed values are gelu, swiglu, relu2"),
    (beyond_on(logit_softcap=-1), "beyond.model.logit_softcap=-1.0: must be 0 (off) or a positive number"),
    (beyond_on(tie_embeddings="no"), "beyond.model.tie_embeddings='no': must be true or false"),
    (beyond_on(optimizer="sgd"), "beyond.train.optimizer='sgd': allowed values are adamw, muon"),
    (beyond_on(n_kv_head=3), "beyond.model.n_head=4, n_kv_head=3: n_head must be divisible by n_kv_head"),
    (with_("train", "optimizer", "lion"), "train.optimizer='lion': allowed values are adamw, muon"),
    (with_("launch", None, "mpirun -n 2"), "launch='mpirun -n 2': allowed are python, or torchrun with its options"),
    (with_("launch", None, "torchrun 'x"), "launch=\"torchrun 'x\": allowed are python, or torchrun"),
    (with_("launch", None, 2), "launch=2: allowed are python, or torchrun"),
    (with_("launch", None, "torchrun --standalone --nproc_per_node=5"),
     "train.batch_size=12: launch runs 5 processes per run, each training an equal slice of the batch: use a "
     "multiple of 5"),
]


@pytest.mark.parametrize("launch", ["python", "torchrun --standalone --nproc_per_node=2",
                                    "python -m torch.distributed.run --nproc-per-node 4", "torchrun --nproc_per_node=auto"])
def test_launch_takes_python_or_a_torchrun_that_splits_the_batch_evenly(launch):
    parse(with_("launch", None, launch))


@pytest.mark.parametrize("raw, message", BAD, ids=[m for _, m in BAD])
def test_each_mistake_gives_one_line_naming_the_field(raw, message):
    refused(lambda: parse(raw), message)


# The corpus and report sections: checked where they are read (tokenize, generate and report stages).
def checker(name):
    return lambda raw: PARSERS[name](raw, name)


BAD_SECTIONS = [
    (checker("tokenizer"), with_("tokenizer", "kind", "words")["tokenizer"],
     "tokenizer.kind='words': allowed values are char, akshara, bpe"),
    (checker("data"), with_("data", "val_fraction", 1.5)["data"], "data.val_fraction=1.5"),
    (report_settings, with_("report", "confidence", 2.0)["report"], "report.confidence=2.0"),
    (report_settings, with_("report", "borderline", -0.5)["report"], "report.borderline=-0.5: must be a number in"),
    (checker("generate"), with_("generate", "chars", 0)["generate"],
     "generate.chars=0: must be an integer >= 1"),
    (checker("generate"), {"chars": 10}, "generate.seed: missing"),
]


@pytest.mark.parametrize("check, section, message", BAD_SECTIONS, ids=[m for _, _, m in BAD_SECTIONS])
def test_each_mistake_in_a_stage_section_gives_one_line_naming_the_field(check, section, message):
    refused(lambda: check(section), message)


def test_parse_reads_only_the_ladder_sections():
    """A bad tokenizer, data or report setting is the business of the stage that reads it, not the plan's."""
    raw = with_("tokenizer", "kind", "words")
    raw = {**raw, "data": {**raw["data"], "val_fraction": 1.5}, "report": {**raw["report"], "confidence": 2.0}}
    assert [r.label for r in parse(raw).rows(vocab_size=50)] == LABELS


def test_the_plan_refuses_a_params_yaml_without_its_serve_section_in_one_line():
    """serve: has no defaults in code: params.yaml is the one definition of the sampling settings."""
    raw = default()
    del raw["serve"]                                    # read as stages/plan.py reads it
    refused(lambda: check_all(params_file.sections(raw, SECTIONS, OPTIONAL)),
             "params: section 'serve' is missing")


def test_the_ladder_must_start_with_baseline_and_says_so_in_one_line():
    raw = with_("ladder", None, ["norm", "pos", "mlp", "bias", "n_kv_head", "qk_norm"])
    with pytest.raises(ConfigError) as e:
        parse(raw)
    message = str(e.value)
    assert message.startswith("ladder:") and "baseline" in message and "\n" not in message
    # listed again after row 0, `baseline` is not a flag
    refused(lambda: parse(with_("ladder", None, ["baseline", "baseline", "norm"])), "ladder: unknown flag 'baseline'")


@pytest.mark.parametrize("setting, width", [(None, 32), (16, 16), (48, 48)])
def test_model_head_dim_takes_null_or_an_integer(setting, width):
    p = parse(with_("model", "head_dim", setting))
    rows = p.rows(vocab_size=50)
    assert [r.label for r in rows] == LABELS
    assert {r.config.head_dim for r in rows} == {width}      # null resolved; the baseline keeps the model's shape


def test_a_null_head_dim_follows_a_ladder_of_heads_and_a_set_one_stays():
    raw = with_("ladder", None, ["baseline", "n_head"])
    raw["baseline"], raw["sweep"] = {"n_head": 8}, {"lr": []}
    rows = parse(raw).rows(vocab_size=50)                      # model: n_embd 128, n_head 4, head_dim null
    assert [(r.config.n_head, r.config.head_dim) for r in rows] == [(8, 16), (4, 32)]
    raw["model"]["head_dim"] = 16
    rows = parse(raw).rows(vocab_size=50)
    assert [(r.config.n_head, r.config.head_dim) for r in rows] == [(8, 16), (4, 16)]


def test_model_pos_none_is_accepted_and_resolves_the_ladder():
    p = parse(with_("model", "pos", "none"))
    rows = p.rows(vocab_size=50)
    assert [r.label for r in rows] == [*LABELS[:2], "+ NoPE", *LABELS[3:]]
    assert rows[1].config.pos == "learned" and rows[2].config.pos == "none" and rows[-1].config.pos == "none"


def write(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def test_a_stage_gets_only_the_sections_it_names(tmp_path):
    raw = default()
    got = params_file.load(("report",), write(tmp_path, raw), optional=("report",))
    assert got == {"report": raw["report"]}
    # optional and absent: None (every report key has a default)
    no_report = {k: v for k, v in raw.items() if k != "report"}
    assert params_file.load(("report",), write(tmp_path, no_report), optional=("report",)) == {"report": None}
    assert report_settings(None) == Settings()
    # required and absent: an error
    refused(lambda: params_file.load(("report",), write(tmp_path, no_report)), "params: section 'report' is missing")


@pytest.mark.parametrize("where", ["first", "last"])
def test_an_unknown_section_anywhere_in_the_file_is_refused(tmp_path, where):
    raw = default()
    raw = {"modle": {"n_layer": 2}, **raw} if where == "first" else {**raw, "modle": {"n_layer": 2}}
    path = write(tmp_path, raw)
    refused(lambda: params_file.load(("report",), path, optional=("report",)), "params.modle: unknown section")
    refused(lambda: read_params(path), "params.modle: unknown section")


def test_unreadable_yaml_is_one_line(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match=r"params.yaml: not valid YAML \(line 2\)"):
        read_params(bad)
    with pytest.raises(ConfigError, match=r"params.yaml: not valid YAML \(line 2\)"):
        params_file.load(("report",), bad, optional=("report",))


def test_rerun_rows_get_their_own_configs_with_perturbed_initial_weights():
    raw = with_("ablation", "rerun", ["qk_norm", "baseline", "pos"])           # any order: ladder order out
    configs, planned = plan_files(raw)
    assert [r.slug for r in planned.rerun] == ["rerun_baseline", "rerun_pos", "rerun_qk_norm"]
    assert [r.of for r in planned.rerun] == ["baseline", "pos", "qk_norm"]
    assert planned.rerun_perturbation == 1e-7
    for row in ("baseline", "pos", "qk_norm"):
        again, original = configs[f"rerun_{row}"], configs[row]
        assert again["model"] == original["model"]
        assert again["train"] == {**original["train"], "init_perturbation": 1e-7}
        assert original["train"]["init_perturbation"] == 0.0
    configs, planned = plan_files(default())                              # off by default
    assert planned.rerun == () and not any(k.startswith("rerun_") for k in configs)


def test_the_sweep_gets_a_config_per_row_and_rate_with_both_rates_scaled():
    raw = default()
    raw["sweep"] = {"lr": [4, 0.5], "rows": ["qk_norm", "n_kv_head"], "seeds": [2, 0]}   # any order: ladder
    configs, planned = plan_files(raw)                                          # and seed order out
    sweep = planned.sweep
    assert sweep.lr == raw["train"]["lr"] and sweep.seeds == (0, 2)
    assert [r.slug for r in sweep.rows] == ["n_kv_head", "qk_norm"]
    assert [c.slug for c in sweep.rows[1].runs] == ["sweep_qk_norm_x4", "sweep_qk_norm_x0.5"]
    assert [c.multiple for c in sweep.rows[1].runs] == [4.0, 0.5]
    for row in ("n_kv_head", "qk_norm"):
        for m in (4, 0.5):
            mine, main = configs[f"sweep_{row}_x{m}"], configs[row]
            assert mine["model"] == main["model"]
            assert mine["train"] == {**main["train"], "lr": main["train"]["lr"] * m,
                                     "min_lr": main["train"]["min_lr"] * m}
    raw["sweep"] = {"lr": [], "rows": ["qk_norm"]}                              # an empty sweep: off
    configs, planned = plan_files(raw)
    assert planned.sweep.rows == () and not any(k.startswith("sweep_") for k in configs)
    del raw["sweep"]                                                            # no section: off too
    assert plan_files(raw)[1].sweep.rows == ()


def test_the_second_ladder_is_off_by_default_and_on_switches_one_flag_a_row_from_the_books_design():
    configs, planned = plan_files(default())
    assert default()["beyond"]["ladder"] == [] and [x.name for x in planned.ladders] == ["main"]
    assert not any(k.startswith("beyond_") for k in configs)
    del_raw = default()
    del del_raw["beyond"]                                                       # no section: off too
    assert plan_files(del_raw)[1].ladder("beyond") is None

    configs, planned = plan_files(beyond_on())
    beyond = planned.ladder("beyond").rows
    assert [r.slug for r in beyond] == ["qk_norm", *[f"beyond_{f}" for f in BEYOND]]
    assert [r.label for r in beyond] == ["the book's design", "+ ReLU²", "+ untied head", "+ logit soft-cap 15",
                                         "+ Muon"]
    assert "qk_norm" in configs and planned.ladders[0].rows[-1].slug == "qk_norm"   # row 0: the main table's runs
    before = configs["qk_norm"]
    for flag, part, value in [("mlp", "model", "relu2"), ("tie_embeddings", "model", False),
                                 ("logit_softcap", "model", 15.0), ("optimizer", "train", "muon")]:
        mine = configs[f"beyond_{flag}"]
        changed = {(s, k) for s in ("model", "train") for k in mine[s] if mine[s][k] != before[s][k]}
        assert changed == {(part, flag)} and mine[part][flag] == value, flag
        before = mine
    assert [r.hf_class for r in beyond] == ["Qwen3ForCausalLM", None, None, None, None]
    text = json.dumps(planned.to_dict())
    assert Plan.from_dict(json.loads(text)) == planned                              # through plan.json and back
    assert [x.name for x in Plan.from_dict(json.loads(text)).ladders] == [LadderName.MAIN, LadderName.BEYOND]
    assert '"name": "beyond"' in text                                              # the file holds the plain name
    with pytest.raises(DataError, match=r"^configs/plan.json.ladders\[1\].name='second': not one of main, beyond, "
                                        r"scale, catalogue; rerun it: dvc repro$"):
        Plan.from_dict(json.loads(text.replace('"name": "beyond"', '"name": "second"')))


def test_a_second_ladder_value_equal_to_the_row_above_is_marked_no_change():
    raw = beyond_on()
    raw["beyond"]["model"]["mlp"] = "swiglu"                                   # the book's own value
    row = plan_files(raw)[1].ladder("beyond").rows[1]
    assert row.label == "+ SwiGLU (no change)" and row.changed is False


def test_the_sweep_covers_a_second_ladder_row_with_its_own_optimiser():
    raw = beyond_on()
    raw["sweep"] = {**raw["sweep"], "rows": ["beyond_optimizer", "qk_norm"]}
    configs, planned = plan_files(raw)
    assert [r.slug for r in planned.sweep.rows] == ["qk_norm", "beyond_optimizer"]   # ladder order
    for m in raw["sweep"]["lr"]:
        mine, main = configs[f"sweep_beyond_optimizer_x{m}"], configs["beyond_optimizer"]
        assert mine["model"] == main["model"] and main["train"]["optimizer"] == "muon"
        assert mine["train"] == {**main["train"], "lr": main["train"]["lr"] * m, "min_lr": main["train"]["min_lr"] * m}
    raw = default()
    raw["beyond"]["ladder"] = []
    raw["sweep"] = {**raw["sweep"], "rows": ["beyond_optimizer"]}                 # off: no such row
    refused(lambda: parse(raw), "sweep.rows=['beyond_optimizer']: must list rows of the ladders (baseline, norm,")


def test_the_docs_quote_what_dvc_and_repro_say_about_a_params_mistake_dvc_meets_first(tmp_path, monkeypatch, capfd):
    """docs/params.md words the messages DVC prints before any stage of ours runs: an empty seed list leaves no
    run@ stage, and a wrongly indented key is DVC's YAML parse error; modern-gpt repro says the latter in our one
    line. The quotes are the real messages of this DVC (run here in a bare DVC repo), so a new wording fails."""
    import re
    import subprocess
    import sys

    from modern_gpt.cli import main as cli_main

    page = (ROOT / "docs" / "params.md").read_text()
    section = page.split("## When DVC's message comes first", 1)[1]
    quoted = [" ".join(q.split()) for q in re.findall(r"`([^`]*(?:ERROR|not valid YAML)[^`]*)`", section)]
    not_found, corrupted, ours = quoted
    for f in ("dvc.yaml", "params.yaml"):
        (tmp_path / f).write_text((ROOT / f).read_text())
    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".dvc" / "config").write_text("[core]\n    no_scm = True\n")      # what `dvc init --no-scm` writes
    monkeypatch.chdir(tmp_path)

    def dvc(args: list[str]) -> int:
        out = subprocess.run([sys.executable, "-m", "dvc", *args], capture_output=True, text=True)
        print(out.stdout, out.stderr)
        return out.returncode

    def say(run, *args: str) -> str:
        capfd.readouterr()
        assert run(list(args)) != 0
        out = capfd.readouterr()
        return " ".join((out.out + out.err).split())

    params = (ROOT / "params.yaml").read_text()
    (tmp_path / "params.yaml").write_text(re.sub(r"^seeds:(.*)\n(- \d+\n)+", r"seeds: []\1\n", params, flags=re.M))
    assert not_found in say(dvc, "repro", "run@qk_norm-0")
    (tmp_path / "params.yaml").write_text(params.replace("\n  n_layer:", "\n   n_layer:", 1))
    assert corrupted.removesuffix(" mapping") in say(dvc, "repro", "run@qk_norm-0")
    line = say(cli_main, "repro")
    assert line.startswith("modern-gpt: error: ") and ours in line and line.count("error") == 1


def test_the_files_between_stages_are_written_and_read_by_one_type():
    """configs/<row>.json, data/tokenized/meta.json and floor.json: what the writer's type writes, the same type
    reads back equal; another version's file (a key missing or unknown, a value of the wrong kind or out of range)
    is one line naming the file and the field."""
    configs, _ = plan(parse(beyond_on()), META)
    for slug, config in configs.items():
        assert RowConfig.from_dict(json.loads(json.dumps(config.to_dict())), slug) == config
    assert CorpusMeta.from_dict(json.loads(json.dumps(META.to_dict()))) == META
    assert Floor.from_dict(json.loads(json.dumps(Floor(1.25, 0.002, 500).to_dict()))) == Floor(1.25, 0.002, 500)
    row = configs["qk_norm"].to_dict()
    meta = META.to_dict()
    for bad, cls, message in [
        ({"model": row["model"]}, RowConfig, r"^f.json: not a RowConfig of this version \(keys \['model'\]\)"),
        ({**row, "model": {**row["model"], "n_head": 0}}, RowConfig,
         r"^f.json.model: n_head=0: must be a positive integer; rerun it: dvc repro$"),
        ({**row, "model": {**row["model"], "wide": 1}}, RowConfig, r"^f.json.model: not a ModelConfig of this"),
        ({**meta, "vocab_size": "48"}, CorpusMeta, r"^f.json.vocab_size='48': not an integer; rerun it: dvc repro$"),
        ({**meta, "val": {"tokens": 10}}, CorpusMeta, r"^f.json.val: not a SplitSize of this version"),
        ({"nats_per_char": 1.2, "se": None, "sentences": 5}, Floor, r"^f.json.se=None: not a number"),
    ]:
        with pytest.raises(DataError, match=message):
            cls.from_dict(bad, "f.json")


def test_model_and_baseline_stay_as_given_so_a_null_follows_the_shape():
    """params.yaml's model: and baseline: are typed (ModelSection, Baseline) but kept as given: a null head_dim is
    n_embd / n_head at whatever shape a row trains, a null baseline n_kv_head one K/V head per query head."""
    p = parse(default())
    assert isinstance(p.model, ModelSection) and isinstance(p.baseline, Baseline)
    wide = p.model.replace(n_embd=96, n_head=6)
    assert p.model.config(48).head_dim == 32 and wide.config(48).head_dim == 16          # null: the shape's
    assert p.baseline.config(wide, 48).n_kv_head == 6 and wide.config(48).n_kv_head == 2
    fixed = p.model.replace(head_dim=8).replace(n_embd=96, n_head=6)
    assert fixed.config(48).head_dim == 8 and p.baseline.replace(n_kv_head=3).config(fixed, 48).n_kv_head == 3
    refused(lambda: p.model.replace(width=3), "model.width: unknown key; allowed keys are block_size,")
    refused(lambda: ModelSection.parse({**default()["model"], "n_head": 0}), "model.n_head=0: must be a positive")
    refused(lambda: Baseline.parse(["norm"]), "baseline: must be a mapping, got ['norm']")
