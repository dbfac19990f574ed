"""The front page and docs/: short enough to finish, links that resolve, and no figure that disagrees with the
committed report.

A page shares a figure with the committed reports (reports/ablation.md, and reports/beyond.md, the second ladder's)
in two ways, and both are checked:
- a Markdown table with a `variant` column: each cell under a header the report's table also has equals the
  report's cell for that variant (and learning rate), whatever the page leaves out;
- a line of prose that quotes the report ends with `<!-- report -->`: every number on it is one the report prints.
And the other way round: a distinctive figure of the report (a loss to 4 decimals, a count with thousands
separators, a parameter count in millions) on an unmarked prose line is an error, so no quote escapes the check;
a line whose figure only happens to equal one of the report's says so with `<!-- not the report's -->`.
Quoted command output (`$ dvc metrics diff`, `$ dvc exp show`, `$ git diff reports/...`, `$ dvc repro` in a code
block) is checked against the committed files too: the committed side of every quoted value is today's.
"""

import json
import re
from pathlib import Path

import pytest
import yaml

import md_tables
from modern_gpt.pipeline.families import SERVING, TRAINING, settle_runs, settle_stage
from modern_gpt.reporting.runs_csv import from_csv

ROOT = Path(__file__).resolve().parents[1]
REPORTS = [ROOT / "reports" / name for name in ("ablation.md", "beyond.md", "scale.md", "catalogue.md")]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = "<!-- report -->"
NOT_THE_REPORT = "<!-- not the report's -->"      # a figure measured elsewhere that happens to equal one of the report
NUMBER = re.compile(r"(?<![\w.])[+\-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
DISTINCTIVE = re.compile(r"^(\d\.\d{4}|\d{1,3}(,\d{3})+|\d\.\d{3}M)$")
KEYS = ("variant", "lr")                          # what identifies a row of the report's tables


def prose_and_tables(text: str) -> tuple[list[str], list[list[str]]]:
    """The lines outside code blocks that are not tables, and the tables (each a list of lines)."""
    prose, tables, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("|"):
            if tables and tables[-1][-1] is not None:
                tables[-1].append(line)
            else:
                tables.append([line])
            continue
        if tables and tables[-1][-1] is not None:
            tables[-1].append(None)               # the table ended
        prose.append(line)
    return prose, [[row for row in t if row is not None] for t in tables]


def cells(line: str) -> list[str]:
    return md_tables.cells(line, plain=True)


def parse(table: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    return md_tables.rows(table, plain=True)


def numbers(text: str) -> set[str]:
    return {n.lstrip("+-−") for n in NUMBER.findall(text.replace("**", ""))}


REPORT_TEXT = "\n".join(r.read_text(encoding="utf-8") for r in REPORTS)
REPORT_TABLES = [parse(t) for t in prose_and_tables(REPORT_TEXT)[1] if "variant" in cells(t[0])]
REPORT_NUMBERS = numbers(REPORT_TEXT)


def key(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row.get(k, "") for k in KEYS)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_tables_that_quote_the_report_agree_with_it(page):
    for table in prose_and_tables(page.read_text(encoding="utf-8"))[1]:
        head, rows = parse(table)
        if "variant" not in head:
            continue
        wanted_keys = {tuple(r.get(k, "") if k in head else "" for k in KEYS) for r in rows}
        has_rows = lambda t: wanted_keys <= {tuple(r.get(k, "") if k in head else "" for k in KEYS) for r in t[1]}  # noqa: E731
        shared = lambda t: (has_rows(t), len(set(head) & set(t[0])))        # noqa: E731
        report_head, report_rows = max(REPORT_TABLES, key=shared)
        columns = [h for h in head if h in report_head and h not in KEYS]
        by_key = {tuple(r.get(k, "") if k in head else "" for k in KEYS): r for r in report_rows}
        for row in rows:
            wanted = tuple(row.get(k, "") if k in head else "" for k in KEYS)
            assert wanted in by_key, f"{page.name}: row {wanted} is not in the report's table {report_head}"
            for c in columns:
                assert row[c] == by_key[wanted][c], f"{page.name}: {row['variant']} {c}: {row[c]!r}, report " \
                                                    f"{by_key[wanted][c]!r}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_prose_quotes_of_the_report_are_marked_and_agree_with_it(page):
    for line in prose_and_tables(page.read_text(encoding="utf-8"))[0]:
        found = numbers(re.sub(r"<!--.*?-->", "", line))
        if MARK in line:
            assert found <= REPORT_NUMBERS, f"{page.name}: not in the report: {sorted(found - REPORT_NUMBERS)}\n{line}"
        elif NOT_THE_REPORT not in line:
            shared = {n for n in found & REPORT_NUMBERS if DISTINCTIVE.match(n)}
            assert not shared, f"{page.name}: figures of the report {sorted(shared)} on a line not marked " \
                               f"{MARK}:\n{line}"


def test_the_checks_catch_a_stale_figure():
    """The two checks above fail on a page that quotes an old figure, in a table or in marked prose."""
    head, rows = REPORT_TABLES[0]
    row = next(r for r in rows if r["variant"] == "+ RoPE")
    stale = row["val"].replace(row["val"][:6], f"{float(row['val'][:6]) + 0.0001:.4f}")
    page = f"| variant | val |\n|---|---|\n| + RoPE | {stale} |\n"
    (_, page_rows), = [parse(t) for t in prose_and_tables(page)[1]]
    assert page_rows[0]["val"] != row["val"]
    assert not numbers(f"RoPE moved val to {stale} {MARK}") <= REPORT_NUMBERS


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lowercased, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def headings(text: str) -> str:
    """The text without its code blocks (a `# comment` in a shell block is not a heading)."""
    return "\n".join(prose_and_tables(text)[0])


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_link_resolves_to_a_file_and_heading(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", headings(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: link to {target}: no such file"
        if anchor:
            assert anchor in anchors(headings(file.read_text(encoding="utf-8"))), \
                f"{page.name}: link to {target}: no such heading"


def test_the_front_page_fits_and_reaches_every_page():
    front = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(front.splitlines()) <= 250
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        name = page.relative_to(ROOT).as_posix()
        assert name in front or page.name in index, f"{name}: linked from neither the front page nor docs/README.md"
        assert page.name == "README.md" or "[← front page](../README.md)" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_pages_speak_of_the_project_and_its_users(page):
    text = headings(page.read_text(encoding="utf-8")).lower()
    for phrase in ("this task", "was lent", "this session", "no gpu machine"):
        assert phrase not in text, f"{page.name}: {phrase!r}"


def test_the_beyond_page_quotes_the_second_ladders_report_row_for_row():
    """docs/beyond.md's table is reports/beyond.md's, every row (its cells: the table test above)."""
    def ladder_table(text: str) -> list[dict[str, str]]:
        return next(rows for head, rows in (parse(t) for t in prose_and_tables(text)[1]) if "variant" in head)
    page = ladder_table((ROOT / "docs" / "beyond.md").read_text(encoding="utf-8"))
    report = ladder_table((ROOT / "reports" / "beyond.md").read_text(encoding="utf-8"))
    assert [r["variant"] for r in page] == [r["variant"] for r in report] != []
    assert {"secs", "verdict", "val"} <= set(page[0])                           # the cost and the verdict


def test_the_gpu_pages_run_time_estimates_follow_from_each_sizes_flops():
    """docs/gpus.md's estimate table: N is the committed scale report's, and every other column the arithmetic the
    page states (6 FLOPs per parameter and token, the attention scores, the report's tokens per run)."""
    text = (ROOT / "docs" / "gpus.md").read_text(encoding="utf-8")
    head, rows = next(parse(t) for t in prose_and_tables(text)[1] if "training FLOPs per run" in t[0])
    scale = (ROOT / "reports" / "scale.md").read_text(encoding="utf-8")
    tokens, vocab, context, steps = 500 * 12 * 64, 48, 64, 500
    assert f"500 steps × 12 × 64 = {tokens:,} tokens" in scale and f"vocabulary {vocab}" in scale
    assert [r["size"] for r in rows] == ["xs", "model:", "l"]
    for r in rows:
        layers, width = map(int, r["layers × width"].split(" × "))
        n = int(r["N"].replace(",", ""))
        assert f"**{r['size']}** {layers} layers × {width} wide" in scale and f"N = {n:,}" in scale
        flops = tokens * (6 * (n + width * vocab) + 6 * layers * context * width)
        assert r["training FLOPs per run"] == f"{flops:.2e}".replace("e+", "e")
        assert r["CPU: GFLOP/s"] == f"{flops / float(r['CPU: seconds per run (median of 5)']) / 1e9:.0f}"
        bound = flops / 989e12 * 1e3
        assert r[head[6]] == f"{bound:.2g} ms"
        ops, secs = re.fullmatch(r"(\d+) ops: ([\d.]+) s", r[head[7]]).groups()
        assert secs == f"{steps * int(ops) * 5e-6:.1f}"


# ------------------------------------------------------------------------------------------ quoted command output
# A code block line `$ command` starts a command; the lines after it, up to the next `$ ` line or the block's end,
# are what it printed (`...` marks lines left out). Values on the committed side of each output (the HEAD column
# of `dvc metrics diff`, the baseline commit's row of `dvc exp show`, the `-` lines of `git diff reports/...`)
# must be today's committed ones; stage names must be the committed pipeline's.
METRICS = json.loads((ROOT / "reports" / "metrics.json").read_text(encoding="utf-8"))
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
LOCK_HASHES = {d["path"]: d["md5"] for stage in yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))[
    "stages"].values() for d in stage.get("deps", []) + stage.get("outs", []) if "md5" in d}
STAGES = ({name for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"].items()
           if "matrix" not in stage and "foreach" not in stage}
          | {f.stage_name(**items) for f in TRAINING + SERVING for items in f.walk(PARAMS)}
          | {settle_stage(run["slug"], run["seed"]) for run in settle_runs(PARAMS).values()})
TREE = ("├", "└", "│")                            # dvc exp show: an experiment's row under its baseline


def commands(text: str) -> list[tuple[str, list[str]]]:
    """Each `$ command` in the page's code blocks (a trailing `# comment` dropped), with the lines it printed."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced and line.startswith("$ "):
            out.append((re.sub(r"\s+#.*$", "", line[2:]).strip(), []))
        elif fenced and out and out[-1][1] is not None:
            out[-1][1].append(line)
        if not fenced and out and out[-1][1] is not None:
            out.append(("", None))                # the block ended: no later line belongs to its last command
    return [(c, lines) for c, lines in out if lines is not None]


def columns(line: str) -> list[str]:
    """A DVC table's cells: separated by two spaces or more."""
    return re.split(r"\s{2,}", line.strip())


def dvc_value(value, digits: bool) -> str:
    """As DVC prints a metric or param: rounded to 5 digits (metrics diff) or 5 significant ones (exp show)."""
    if isinstance(value, float):
        return str(round(value, 5)) if digits else f"{value:.5g}"
    return str(value)


def committed(name: str) -> str | None:
    """A `dvc exp show` column's committed value: a metric of reports/metrics.json, a param of params.yaml
    (either may be prefixed with its file, `params.yaml:model.n_kv_head`), or a dependency's hash in dvc.lock."""
    file, _, key = name.rpartition(":")
    if key in LOCK_HASHES and not file:
        return LOCK_HASHES[key]
    sources = {"reports/metrics.json": METRICS, "params.yaml": PARAMS}
    found = []
    for path, data in sources.items():
        value = data
        for part in key.split("."):
            value = value.get(part, KeyError) if isinstance(value, dict) else KeyError
        if value is not KeyError and file in ("", path):
            found.append(dvc_value(value, digits=False))
    return found[0] if len(found) == 1 else None


def metrics_diff_problems(lines: list[str]) -> tuple[list[str], dict[str, str]]:
    """The HEAD (or main) column against reports/metrics.json, and each Change against the two values."""
    problems, workspace = [], {}
    rows = [columns(line) for line in lines if line.strip() and line.strip() != "..."]
    head = rows[0]
    for row in rows[1:]:
        if len(row) != len(head) or len(head) != 5:
            problems.append(f"dvc metrics diff: not a row of Path, Metric, HEAD, workspace, Change: {row}")
            continue
        path, metric, old, new, change = row
        slug, _, field = metric.partition(".")
        if path != "reports/metrics.json" or field not in METRICS.get(slug, {}):
            problems.append(f"dvc metrics diff: {path} {metric}: not a metric of reports/metrics.json")
            continue
        want = dvc_value(METRICS[slug][field], digits=True)
        if old != want:
            problems.append(f"dvc metrics diff: {metric}: {head[2]} {old}, reports/metrics.json has {want}")
        if abs(float(new) - float(old) - float(change)) > 1e-9:
            problems.append(f"dvc metrics diff: {metric}: change {change} is not {new} - {old}")
        workspace[metric] = new
    return problems, workspace


def exp_show_problems(lines: list[str]) -> tuple[list[str], dict[str, str]]:
    """The baseline commit's row (the one row neither the workspace nor an experiment) against the committed
    metrics, params and dependency hashes."""
    rows = [columns(line) for line in lines if line.strip() and line.strip() != "..."]
    head, body = rows[0], rows[1:]
    base = [r for r in body if r[0] != "workspace" and not r[0].startswith(TREE)]
    if len(base) != 1 or any(len(r) != len(head) for r in body):
        return [f"dvc exp show: not one baseline row of {len(head)} columns: {body}"], {}
    problems = []
    for name, value in list(zip(head, base[0]))[1:]:
        want = committed(name)
        if want is None:
            problems.append(f"dvc exp show: column {name}: no committed metric, param or dependency of that name")
        elif value != want:
            problems.append(f"dvc exp show: {name}: {value} on the committed row ({base[0][0]}), committed {want}")
    workspace = next((dict(zip(head, r)) for r in body if r[0] == "workspace"), {})
    return problems, workspace


def normalised(line: str) -> tuple[str, ...] | str:
    """A report line as a page quotes it: table padding trimmed."""
    return tuple(md_tables.cells(line)) if line.startswith("|") else line.strip()


def git_diff_problems(file: str, lines: list[str], workspace: dict[str, str]) -> list[str]:
    """Every `-` line is a line of the committed report; a `+` row of the ladder's table has the val the quoted
    workspace metrics give (where the block quotes them)."""
    report = (ROOT / file).read_text(encoding="utf-8")
    have = [normalised(line) for line in report.splitlines()]
    table = next((parse(t)[0] for t in prose_and_tables(report)[1] if "variant" in cells(t[0])), [])
    slugs = list(METRICS)
    problems = []
    for line in lines:
        quoted = normalised(line[1:])
        if line.startswith("-") and not line.startswith("---") and quoted not in have:
            same_row = [" | ".join(h) for h in have if isinstance(h, tuple) and h[:2] == quoted[:2]]
            problems.append(f"git diff {file}: not a line of the committed report:\n{line}"
                            + "".join(f"\n  committed: {r}" for r in same_row[:1]))
        row = cells(line[1:]) if line.startswith("+|") else []
        if len(row) == len(table) and row[0].isdigit() and "val" in table and int(row[0]) < len(slugs):
            mean, _, sd = row[table.index("val")].partition(" ± ")
            for field, shown in (("val_mean", mean), ("val_sd", sd)):
                metric = f"{slugs[int(row[0])]}.{field}"
                if metric in workspace and abs(float(shown) - float(workspace[metric])) > 5.5e-5:
                    problems.append(f"git diff {file}: + row {row[1]}: val {shown}, the quoted workspace's "
                                    f"{metric} is {workspace[metric]}")
    return problems


def repro_problems(command: str, lines: list[str]) -> list[str]:
    """Stage names are the committed pipeline's; on the committed params the runs come from the cache."""
    problems = [f"{command}: no stage {name} in the committed pipeline"
                for name in re.findall(r"[Ss]tage '([^']+)'", "\n".join(lines)) if name not in STAGES]
    if "-S" not in command:
        problems += [f"{command}: trains {line}" for line in lines if re.match(r"Running stage '(run|sweep)@", line)]
    return problems


def committed_runs() -> dict[str, dict[str, list[float]]]:
    """reports/runs.csv's val losses: family → run → seed's val, in seed order."""
    out: dict[str, dict[str, list[float]]] = {}
    for line in from_csv((ROOT / "reports" / "runs.csv").read_text(encoding="utf-8")):
        out.setdefault(line.family, {}).setdefault(line.run, []).append(line.val_loss)
    return out


def review_problems(lines: list[str]) -> list[str]:
    """`modern-gpt review BASE` against HEAD: the BASE column is the committed runs' mean (the runs of both sides'
    seeds: all of them where no seed is on one side only), Δ is here minus BASE, and a row whose inputs are the
    same moved by 0."""
    table = [cells(line) for line in lines if line.startswith("|") and "---" not in line]
    if not table or table[0][:2] != ["run", "family"]:
        return ["modern-gpt review: no runs table (run, family, ...)"]
    head, runs, problems = table[0], committed_runs(), []
    for row in (dict(zip(head, r)) for r in table[1:]):
        run = re.match(r"`([^`]+)`", row["run"]).group(1)
        vals = runs.get(row["family"], {}).get(run)
        if vals is None:
            problems.append(f"modern-gpt review: {row['family']} {run}: no such run in reports/runs.csv")
            continue
        vals = vals[:int(row["paired seeds"])]   # the seeds both sides ran: the base ones (settle's come after)
        if row["BASE val"] != f"{sum(vals) / len(vals):.4f}":
            problems.append(f"modern-gpt review: {run}: BASE val {row['BASE val']}, reports/runs.csv gives "
                            f"{sum(vals) / len(vals):.4f}")
        if abs(float(row["val here"]) - float(row["BASE val"]) - float(row["Δ val"])) > 1.5e-4:
            problems.append(f"modern-gpt review: {run}: Δ {row['Δ val']} is not {row['val here']} - {row['BASE val']}")
        if row["inputs"] == "same" and row["Δ val"] != "+0.0000":
            problems.append(f"modern-gpt review: {run}: the same inputs and Δ {row['Δ val']}")
    return problems


def quote_problems(text: str) -> tuple[list[str], set[str]]:
    """What the page's quoted command output gets wrong against the committed files, and which kinds it quotes."""
    problems, kinds, workspace = [], set(), {}
    for command, lines in commands(text):
        if command.startswith("dvc metrics diff"):
            found, seen = metrics_diff_problems(lines)
            problems += found + [f"dvc metrics diff: {k}: workspace {v}, dvc exp show's workspace {workspace[k]}"
                                 for k, v in seen.items() if workspace.get(k, v) != v]
            workspace.update(seen)
            kinds.add("dvc metrics diff")
        elif command.startswith("dvc exp show"):
            found, workspace = exp_show_problems(lines)
            problems += found
            kinds.add("dvc exp show")
        elif (diff := re.fullmatch(r"git diff (reports/\S+)", command)):
            problems += git_diff_problems(diff.group(1), lines, workspace)
            kinds.add("git diff reports/")
        elif re.fullmatch(r"modern-gpt review \S+", command):
            problems += review_problems(lines)
            kinds.add("modern-gpt review")
        elif re.search(r"\bdvc (repro|exp run -S model\.)", command) and "--queue" not in command:
            problems += repro_problems(command, lines)
            kinds.add("dvc repro" if "repro" in command else "dvc exp run")
    return problems, kinds


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_quoted_command_output_agrees_with_the_committed_files(page):
    problems, _ = quote_problems(page.read_text(encoding="utf-8"))
    assert not problems, f"{page.name}: quoted output that is not today's committed one (regenerate it):\n" + \
        "\n".join(problems)


def test_the_pipeline_page_quotes_each_kind_of_output_and_the_check_reads_them():
    _, kinds = quote_problems((ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8"))
    assert kinds == {"dvc metrics diff", "dvc exp show", "git diff reports/", "dvc repro", "dvc exp run"}, kinds


def test_the_review_page_quotes_a_review_and_the_check_reads_it():
    _, kinds = quote_problems((ROOT / "docs" / "review.md").read_text(encoding="utf-8"))
    assert "modern-gpt review" in kinds
    runs = committed_runs()["run"]
    slug, vals = next(iter(runs.items()))
    mean = sum(vals) / len(vals)
    row = f"| `{slug}` | run | same | {len(vals)} | {{}} | {mean:.4f} | +0.0000 | | noise |"
    page = f"```\n$ modern-gpt review HEAD\n| run | family | inputs | paired seeds | BASE val | val here | Δ val | CI | " \
           f"verdict |\n|---|---|---|---|---|---|---|---|---|\n{row}\n```\n"
    assert quote_problems(page.format(f"{mean:.4f}"))[0] == []
    assert any("BASE val" in p for p in quote_problems(page.format(f"{mean + 0.001:.4f}"))[0])


def test_the_quote_check_catches_a_stale_value():
    """Each kind of quoted output, stale on its committed side by one digit, or naming an unknown stage, fails."""
    slug, field = next(iter(METRICS)), "val_mean"
    value = dvc_value(METRICS[slug][field], digits=True)
    stale = f"{float(value) + 0.00001:.5f}"
    report_line = next(line for line in (ROOT / "reports" / "ablation.md").read_text(encoding="utf-8").splitlines()
                       if line.startswith("**Full model"))
    page = f"""```
$ dvc metrics diff HEAD
Path                  Metric           HEAD     workspace    Change
reports/metrics.json  {slug}.{field}  {value}  {value}      0.0
$ dvc exp show --only-changed
  Experiment      {slug}.{field}
  workspace       {value}
  abc1234         {stale}
$ git diff reports/ablation.md
-{report_line.replace(".", ",", 1)}
$ dvc repro
Stage 'run@{slug}-99' didn't change, skipping
Running stage 'run@{slug}-0':
```
"""
    problems, _ = quote_problems(page)
    assert any("dvc exp show" in p and stale in p for p in problems), problems
    assert any(p.startswith("git diff reports/ablation.md: not a line") for p in problems), problems
    assert any(f"no stage run@{slug}-99" in p for p in problems) and any("trains Running" in p for p in problems)
    assert not any("dvc metrics diff" in p for p in problems), problems
    problems, _ = quote_problems(page.replace(f"  {value}  {value}", f"  {stale}  {value}"))
    assert any(f"HEAD {stale}" in p for p in problems), problems

