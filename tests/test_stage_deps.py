"""Each stage depends on what it uses, at the granularity of folders: every module its script imports lies
under a declared dep, every declared code folder is one it imports from, and the params sections its
script reads (PARAMS, the only sections config.params.load hands it) are the ones dvc.yaml lists.

That the files a stage reads lie under its declared deps is checked on a real pipeline, in test_e2e_reruns.py.
"""

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from e2e import code_copy
from modern_gpt.config.sections import SECTIONS
from modern_gpt.pipeline.families import TRAINING

ROOT = Path(__file__).resolve().parents[1]
STAGES = {name: {**stage.get("do", {}), **stage}                    # a foreach stage (settle): its `do` is the stage
          for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items()}
PACKAGE = "src/modern_gpt"
PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("stage", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
files = sorted(m.__file__ for name, m in sys.modules.items()
               if (name == "modern_gpt" or name.startswith("modern_gpt.")) and getattr(m, "__file__", None))
print(json.dumps({"files": files, "params": list(module.PARAMS)}))
"""


@functools.cache
def probe(script: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """What a stage script imports and the params sections it reads: one fresh interpreter per script, asked once
    per session: the stages share a few scripts, and four checks read each."""
    out = subprocess.run([sys.executable, "-c", PROBE, script], cwd=ROOT, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    return frozenset(str(Path(f).resolve().relative_to(ROOT)) for f in found["files"]), tuple(found["params"])


def under(path: str, dep: str) -> bool:
    return path == dep or path.startswith(dep.rstrip("/") + "/")


def code_deps(stage: dict) -> list[str]:
    return [d for d in stage["deps"] if d.startswith(("src/", "stages/"))]


@pytest.mark.parametrize("name", list(STAGES))
def test_every_imported_module_lies_under_a_declared_dep(name):
    stage = STAGES[name]
    script = stage["cmd"].split()[1]
    imported, _ = probe(script)
    declared = code_deps(stage)
    assert script in declared
    assert imported and all(f.startswith(PACKAGE + "/") for f in imported)
    outside = sorted(f for f in imported if not any(under(f, d) for d in declared))
    assert not outside, f"{name} imports modules no dep covers: {outside}"


@pytest.mark.parametrize("name", list(STAGES))
def test_every_declared_code_folder_is_one_the_stage_imports_from(name):
    imported, _ = probe(STAGES[name]["cmd"].split()[1])
    unused = [d for d in code_deps(STAGES[name]) if d.startswith(PACKAGE) and not any(under(f, d) for f in imported)]
    assert not unused, f"{name} depends on code it never imports (needless reruns): {unused}"


def declared_sections(stage: dict) -> list[str]:
    """The params.yaml sections a stage declares: `section` or `section.key`; `params.yaml:` is all of them."""
    out = []
    for p in stage.get("params", []):
        if isinstance(p, dict):
            out += list(SECTIONS) if "params.yaml" in p else []    # another file (a run's config): not params.yaml
        else:
            out.append(p.split(".")[0])
    return sorted(set(out))


@pytest.mark.parametrize("name", list(STAGES))
def test_the_params_sections_a_stage_reads_are_the_ones_it_declares(name):
    _, sections = probe(STAGES[name]["cmd"].split()[1])
    assert sorted(sections) == declared_sections(STAGES[name])


def test_plan_depends_on_all_of_params_yaml_and_runs_on_their_own_config_file():
    assert {"params.yaml": None} in STAGES["plan"]["params"]
    for family in TRAINING:
        (entry,) = STAGES[family.stage]["params"]
        (path,) = entry
        assert path.startswith("configs/") and path.endswith(".json") and entry[path] is None
        assert STAGES[family.stage]["deps"] == STAGES["run"]["deps"]    # the one list, written once


TOOLS = (f"{PACKAGE}/hf/", f"{PACKAGE}/bench/", f"{PACKAGE}/review/", f"{PACKAGE}/cli/")   # beside the pipeline
                                                                                             # (docs/layout.md)


@pytest.mark.parametrize("name", list(STAGES))
def test_no_stage_imports_a_tool_or_depends_on_one(name):
    imported, _ = probe(STAGES[name]["cmd"].split()[1])
    assert not [f for f in imported if f.startswith(TOOLS)]
    assert not [d for d in code_deps(STAGES[name]) if (d + "/").startswith(TOOLS)]


ROW_PROBE = PROBE.replace('print(json.dumps(', """
from modern_gpt.core.files import read_json
from modern_gpt.nn import GPT
from modern_gpt.records.inputs import RowConfig
GPT(RowConfig.from_dict(read_json(sys.argv[2]), sys.argv[2]).model)
files = sorted(m.__file__ for name, m in sys.modules.items()
               if (name == "modern_gpt" or name.startswith("modern_gpt.")) and getattr(m, "__file__", None))
print(json.dumps(""")


def test_a_rows_own_change_files_are_what_it_imports_past_the_runs_deps_and_its_config_names_them(tmp_path):
    """Probed row by row: a run of a row that switches changes of a new kind on imports their files, which no dep
    of dvc.yaml lists (adding one would retrain every run); its config file names each with its md5, and the run
    depends on its config file. A row without them imports nothing past the shared list."""
    from modern_gpt.config import ModelConfig, TrainConfig
    from modern_gpt.records.inputs import RowConfig
    base = ModelConfig(vocab_size=11, n_layer=2, block_size=8)
    declared = code_deps(STAGES["run"])
    for cfg, files in ((base, set()), (base.replace(parallel_block=True), {"parallel_block"}),
                       (base.replace(parallel_block=True, value_residual=True), {"parallel_block", "value_residual"})):
        row = RowConfig(cfg, TrainConfig())
        config = tmp_path / "row.json"
        config.write_text(json.dumps(row.to_dict()))
        out = subprocess.run([sys.executable, "-c", ROW_PROBE, "stages/run.py", str(config)], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        imported = {str(Path(f).resolve().relative_to(ROOT)) for f in json.loads(out.stdout)["files"]}
        outside = {f for f in imported if not any(under(f, d) for d in declared)}
        assert outside == {f"{PACKAGE}/changes/{name}.py" for name in files}
        assert {f"src/{f}" for f in row.to_dict().get("change_files", {})} == outside


def test_the_guard_would_catch_a_missing_folder():
    """The check itself: a stage that imports nn/ but does not declare it is caught."""
    stage = {**STAGES["run"], "deps": [d for d in STAGES["run"]["deps"] if d != f"{PACKAGE}/nn/model.py"]}
    imported, _ = probe(stage["cmd"].split()[1])
    assert [f for f in imported if not any(under(f, d) for d in code_deps(stage))]


def test_display_text_lives_where_no_run_depends_on_it():
    """Row labels are in pipeline/ and the switches' declarations (changes/builtin.py), report wording in
    reporting/: none is a dependency of a run (a change of a new kind's label is in its own file, which its rows
    import)."""
    run_deps = code_deps(STAGES["run"])
    assert not any(under(f"{PACKAGE}/{f}", d) for f in ("pipeline/labels.py", "reporting/wording.py",
                                                          "changes/builtin.py") for d in run_deps)


@pytest.mark.slow                  # processes of their own, each importing torch
def test_each_stage_script_runs_its_own_checkouts_src(tmp_path):
    """The `sys.path[0] = <checkout>/src` line of each script is what makes a copy of the project (DVC's
    experiments, the pipeline tests' temporary repos) run its own code: the installed package is the
    original checkout's (pip install -e .), and without the line a copy's script imports that one."""
    copy = code_copy(tmp_path / "copy")
    init = copy / "src" / "modern_gpt" / "__init__.py"
    init.write_text(init.read_text() + "\nimport sys as _sys; print('the copy', file=_sys.stderr)\n")
    for script in sorted((copy / "stages").glob("*.py")):
        out = subprocess.run([sys.executable, str(script), "--help"], cwd=copy, capture_output=True, text=True)
        assert out.returncode == 0 and "the copy" in out.stderr, (script.name, out.stderr[-500:])
        text = script.read_text()
        line = next(x for x in text.splitlines() if x.startswith("sys.path[0] = "))
        script.write_text(text.replace(line, "pass"))
        out = subprocess.run([sys.executable, str(script), "--help"], cwd=copy, capture_output=True, text=True)
        assert "the copy" not in out.stderr, script.name              # the installed package, not the copy


@pytest.mark.parametrize("name", list(STAGES))
def test_every_path_a_stage_reads_or_writes_is_an_argument_on_its_command_line(name):
    """Each data dep and each out lies under a path dvc.yaml's command gives the script (a dep named by a param,
    such as ${data.corpus}, comes from params.yaml), and the script writes no such path itself: every path
    argument is required, and no string in it names a folder of the pipeline."""
    stage = STAGES[name].get("do", STAGES[name])           # settle: a foreach stage's `do`
    args = stage["cmd"].split()[2:]
    data = [d for d in stage.get("deps", []) if not d.startswith(("stages/", "src/", "${"))]
    outs = [next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", []) + stage.get("metrics", [])]
    for path in data + outs:
        assert any(path == a or path.startswith(a.rstrip("/") + "/") for a in args), f"{name}: {path}"
    script = ast.parse((ROOT / stage["cmd"].split()[1]).read_text(encoding="utf-8"))
    named = [n.value for n in ast.walk(script) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.startswith(("data/", "configs", "reports"))]
    assert named == [], f"{name}'s script names {named}"
    defaults = [k.arg for n in ast.walk(script) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") ==
                "add_argument" for k in n.keywords if k.arg == "default"]
    assert defaults == [], f"{name}'s script has an argument with a default"


def test_the_report_stages_outs_are_the_report_files_named_once_in_reporting_outputs():
    from modern_gpt.reporting import outputs
    stage = STAGES["report"]
    out = stage["cmd"].split("--out ")[1].split()[0]
    outs = [next(iter(o)) for o in stage["outs"] + stage["metrics"]]
    assert outs == [f"{out}/{name}" for name in outputs.STAGE_OUTS]


def test_dvc_yaml_stays_readable_at_a_glance():
    assert len((ROOT / "dvc.yaml").read_text().splitlines()) <= 198     # 170; +8 the settle stage, +8 the catalogue
    # stage, +6 paths and comments wrapped, +3 why the off-by-default reports are not the report stage's outs
