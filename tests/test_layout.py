"""The rules of the source's shape, read from its syntax tree: each class name means one thing (it is defined once under
src/, but a class local to a change file's `plugs()`, which no other module sees), and so does each public
module-level function's, but the listed ones; a function longer than 50 lines is split where a part has a name of its
own, and a module longer than its folder allows by what it holds; no two modules import each other, however
indirectly; and cli/ tells its commands from what they share, by folder (cli/__init__.py): a module directly in cli/
is a `modern-gpt` command, and a module in cli/support/ is none. Each rule has the few exceptions listed here with
the reason they stay."""

import ast
from collections import Counter, defaultdict
from pathlib import Path

import networkx as nx
from md_tables import table_under

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "src" / "modern_gpt" / "cli"
LONGEST = 50
STAY_WHOLE = {
    # a training run imports it (dvc.yaml's run deps): splitting it changes the runs' code and retrains every run
    "src/modern_gpt/training/loop.py:fit",
}
MODULE_LINES = 400                           # a module's lines at most, and less in the folders below
FOLDER_LINES = {"src/modern_gpt/reporting": 300}
CYCLES: list[set[str]] = []                 # none: each would be listed here with the reason it stays
SAME_NAME = {                                # public module-level functions defined in more than one module
    "add_parsers": "each command module's one entry point (cli/__init__.py reads it by that name)",
    "generate": "the corpus's text (corpus/sanskrit) and a model's tokens (serving): each module's own verb",
    "git": "two call shapes of one thing, running git (review/sides.py, cli/support/ray_runs.py)",
    "plugs": "each change file's model code, by the name its Change passes (changes/<name>.py)",
    "check": "each change file's refusal of the configs it cannot run with (changes/<name>.py), and review's check",
}


SAME_FILE_NAME = {                           # module file names src/ uses twice (__init__.py aside), and why
    "model.py": "two layers of one thing: a model's settings (config/model.py) and its code (nn/model.py)",
}


def definitions(kind) -> dict[str, list[ast.AST]]:
    found = defaultdict(list)
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kind):
                found[f"{path.relative_to(ROOT)}:{node.name}"].append(node)
    return found


def plug_locals(tree: ast.AST) -> set[ast.AST]:
    """The classes defined inside a change file's `plugs()` body: that change's own, seen by no other module."""
    return {node for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "plugs"
            for node in ast.walk(f) if isinstance(node, ast.ClassDef)}


def classes_named_twice(sources: dict[str, str]) -> dict[str, list[str]]:
    """{class name: where} for each name defined at two places of `sources` ({path under the root: text}), leaving
    out the classes local to `plugs()` in changes/*.py: two change files may each name a class Shift there."""
    places = defaultdict(list)
    for path, text in sources.items():
        tree = ast.parse(text)
        local = plug_locals(tree) if path.startswith("src/modern_gpt/changes/") else set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node not in local:
                places[node.name].append(f"{path}:{node.name}")
    return {name: p for name, p in places.items() if len(p) > 1}


def test_each_class_name_is_defined_once():
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "src").rglob("*.py"))}
    assert classes_named_twice(sources) == {}


def test_classes_local_to_a_change_files_plugs_are_left_out_of_the_unique_names():
    body = "def plugs(cfg):\n    class Shift:\n        pass\n    return {}\n"
    two = {"src/modern_gpt/changes/shift_a.py": body, "src/modern_gpt/changes/shift_b.py": body}
    assert classes_named_twice(two) == {}
    top = {**two, "src/modern_gpt/nn/shift.py": "class Shift:\n    pass\n"}
    assert classes_named_twice(top) == {}                    # one module-level Shift beside the local ones
    assert set(classes_named_twice({**two, "src/modern_gpt/nn/a.py": "class Shift:\n    pass\n",
                                    "src/modern_gpt/nn/b.py": "class Shift:\n    pass\n"})) == {"Shift"}
    outside = {"src/modern_gpt/nn/x.py": body, "src/modern_gpt/nn/y.py": body}   # plugs() elsewhere: not a change's
    assert set(classes_named_twice(outside)) == {"Shift"}


def test_each_public_module_level_function_name_is_defined_once_but_the_listed_ones():
    places = defaultdict(list)
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                places[node.name].append(str(path.relative_to(ROOT)))
    assert {name for name, p in places.items() if len(p) > 1} == set(SAME_NAME)


def test_no_function_is_longer_than_50_lines_but_the_listed_ones():
    long = {where for where, nodes in definitions((ast.FunctionDef, ast.AsyncFunctionDef)).items()
            if any(n.end_lineno - n.lineno + 1 > LONGEST for n in nodes)}
    assert long == STAY_WHOLE


def top_level(path: Path) -> set[str]:
    """The names a module defines at its top level."""
    return {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def registers(path: Path) -> bool:
    """Whether a module registers a subcommand anywhere: a call of add_parser or set_defaults."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in ("add_parser", "set_defaults")
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_each_module_directly_in_cli_is_a_command_and_no_module_in_cli_support_is():
    from modern_gpt.cli import COMMANDS, build_parser

    commands = {p.stem for p in CLI.glob("*.py") if p.name != "__init__.py"}
    assert {p.name for p in CLI.iterdir() if p.is_dir() and p.name != "__pycache__"} == {"support"}
    assert sorted(m.__name__.rsplit(".", 1)[1] for m in COMMANDS) == sorted(commands)    # each listed once
    for name in commands:
        assert "add_parsers" in top_level(CLI / f"{name}.py") and registers(CLI / f"{name}.py"), name
    _, parsers = build_parser()               # each subcommand's function: a cmd_ of a module directly in cli/
    funcs = {sub: p.get_default("func") for sub, p in parsers.items()}
    assert [sub for sub, f in funcs.items() if not f.__name__.startswith("cmd_")] == []
    assert {f.__module__ for f in funcs.values()} == {f"modern_gpt.cli.{name}" for name in commands}
    for path in sorted((CLI / "support").glob("*.py")):
        assert not registers(path), path.name
        assert not {n for n in top_level(path) if n == "add_parsers" or n.startswith("cmd_")}, path.name


def test_no_module_is_longer_than_its_folder_allows():
    long = {}
    for path in sorted((ROOT / "src").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        limit = next((n for folder, n in FOLDER_LINES.items() if where.startswith(folder + "/")), MODULE_LINES)
        if len(path.read_text(encoding="utf-8").splitlines()) > limit:
            long[where] = limit
    assert long == {}


def imports() -> nx.DiGraph:
    """src/'s modules, an edge from each to every module of src/ it imports: at the top, in a function or under
    TYPE_CHECKING alike (a name imported from a package counts as its module when it is one)."""
    src = ROOT / "src"
    modules = {".".join(p.relative_to(src).with_suffix("").parts).removesuffix(".__init__"): p
               for p in src.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *[node.module or ""]])
                targets = [f"{base.rstrip('.')}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def folder(module: str) -> str:
    """A module's folder of src/modern_gpt/ as docs/layout.md's table names it: 'cli/', or '__main__.py'."""
    top = module.split(".")[1]
    return f"{top}/" if (ROOT / "src" / "modern_gpt" / top).is_dir() else f"{top}.py"


def test_every_import_between_folders_is_one_the_layers_table_lists_and_every_entry_is_used():
    _, table = table_under((ROOT / "docs" / "layout.md").read_text(encoding="utf-8"), "## Layers")
    allowed = {row["folder"].strip("`"): {f.strip(" `") for f in row["imports"].split(",")} for row in table}
    used = defaultdict(set)
    for a, b in imports().edges():
        if a != "modern_gpt" and folder(a) != folder(b):
            used[folder(a)].add(folder(b))
    assert "reporting/" in used and "changes/" in used["config/"]                  # the graph is read
    wrong = {f"{a} imports {b}" for a, found in used.items() for b in found - allowed.get(a, set())}
    assert not wrong, f"imports docs/layout.md's Layers table does not list: {sorted(wrong)}"
    stale = {f"{a}: {b}" for a, listed in allowed.items() for b in listed - used[a]}
    assert not stale, f"entries of docs/layout.md's Layers table no import uses: {sorted(stale)}"


def test_no_two_modules_of_src_share_a_file_name_but_the_listed_ones():
    names = Counter(p.name for p in (ROOT / "src").rglob("*.py") if p.name != "__init__.py")
    assert {name for name, k in names.items() if k > 1} == set(SAME_FILE_NAME)


def test_no_two_modules_import_each_other_but_the_listed_ones():
    graph = imports()
    assert graph.has_edge("modern_gpt.pipeline.plan", "modern_gpt.pipeline.sizes")        # the graph is read
    assert [c for c in nx.strongly_connected_components(graph) if len(c) > 1] == CYCLES


def folder_graph() -> nx.DiGraph:
    """Folders of src/modern_gpt/, an edge where a module of one imports a module of another."""
    graph = nx.DiGraph()
    for a, b in imports().edges():
        if a != "modern_gpt" and folder(a) != folder(b):
            graph.add_edge(folder(a), folder(b))
    return graph


def test_the_statistics_are_a_floor_and_reporting_settling_and_pipeline_import_one_way():
    """stats/ (the paired rule, its simulations, the levels) imports neither settling nor reporting; settling stands on
    it and imports neither pipeline nor reporting; no two of reporting, settling and pipeline import each other."""
    graph = folder_graph()
    assert graph.has_edge("settling/", "stats/") and graph.has_edge("reporting/", "stats/")     # the graph is read
    below = nx.descendants(graph, "stats/")
    assert not below & {"settling/", "reporting/", "pipeline/", "review/", "cli/"}, sorted(below)
    three = ("reporting/", "settling/", "pipeline/")
    both = [(a, b) for a in three for b in three if a < b and graph.has_edge(a, b) and graph.has_edge(b, a)]
    assert both == []
    assert not nx.descendants(graph, "settling/") & {"pipeline/", "reporting/"}


def private_imports() -> list[str]:
    """`from <module> import _name` where the module lies in another folder of src/modern_gpt/ than the importer."""
    src, found = ROOT / "src", []
    for path in src.rglob("*.py"):
        name = ".".join(path.relative_to(src).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 2 or (
                    isinstance(node, ast.ImportFrom) and (node.module or "").startswith("modern_gpt.")):
                names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                found += [f"{name}: from {'.' * node.level}{node.module} import {n}" for n in names]
    return found


def test_no_module_imports_another_folders_private_name():
    assert private_imports() == []
