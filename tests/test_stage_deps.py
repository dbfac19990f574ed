"""Each stage depends on exactly the modules its script imports: no more (needless reruns), no
fewer (a code change that would not rerun the results it affects)."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
STAGES = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
PROBE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("stage", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
for name, m in sorted(sys.modules.items()):
    if name == "modern_gpt" or name.startswith("modern_gpt."):
        print(m.__file__)
"""


def imported(script: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, script], cwd=ROOT, capture_output=True, text=True, check=True)
    return {str(Path(f).resolve().relative_to(ROOT)) for f in out.stdout.split()}


def script_of(stage: dict) -> str:
    return stage["cmd"].split()[1]


@pytest.mark.parametrize("name", list(STAGES))
def test_stage_depends_on_its_script_and_exactly_the_modules_it_imports(name):
    stage = STAGES[name]
    script = script_of(stage)
    declared = {d for d in stage["deps"] if isinstance(d, str) and d.startswith(("src/", "stages/"))}
    expected = {script} | imported(script)
    if name == "report":          # the report prints the training code's hash, so it depends on it too
        expected |= {script_of(STAGES["train"])} | imported(script_of(STAGES["train"]))
    assert declared == expected
