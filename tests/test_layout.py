"""Two rules of the source's shape, read from its syntax tree: each class name means one thing (it is defined once
under src/), and a function longer than 50 lines is split where a part has a name of its own, unless it is one of
the few listed here with the reason it stays whole."""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONGEST = 50
STAY_WHOLE = {
    # a training run imports it (dvc.yaml's run deps): splitting it changes the runs' code and retrains every run
    "src/modern_gpt/training/loop.py:fit",
}


def definitions(kind) -> dict[str, list[ast.AST]]:
    found = defaultdict(list)
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kind):
                found[f"{path.relative_to(ROOT)}:{node.name}"].append(node)
    return found


def test_each_class_name_is_defined_once():
    places = defaultdict(list)
    for where in definitions(ast.ClassDef):
        places[where.rsplit(":", 1)[1]].append(where)
    assert {name: p for name, p in places.items() if len(p) > 1} == {}


def test_no_function_is_longer_than_50_lines_but_the_listed_ones():
    long = {where for where, nodes in definitions((ast.FunctionDef, ast.AsyncFunctionDef)).items()
            if any(n.end_lineno - n.lineno + 1 > LONGEST for n in nodes)}
    assert long == STAY_WHOLE
