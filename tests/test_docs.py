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
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORTS = [ROOT / "reports" / "ablation.md", ROOT / "reports" / "beyond.md"]
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
    line = re.sub(r"<!--.*?-->", "", line)
    return [c.strip().replace("**", "").replace("−", "-") for c in line.strip().strip("|").split("|")]


def parse(table: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    head = cells(table[0])
    return head, [dict(zip(head, cells(row))) for row in table[2:]]


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
