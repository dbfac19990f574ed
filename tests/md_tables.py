"""The tests' one reader of a Markdown table: each table of a text as its lines, and a table's rows as
{header: cell} dicts. Cells are stripped; `plain` also takes out HTML comments and bold marks and writes the
typographic minus as '-' (the docs' figures, compared with the report's)."""

from __future__ import annotations

import re


def cells(line: str, plain: bool = False) -> list[str]:
    if plain:
        line = re.sub(r"<!--.*?-->", "", line)
    found = [c.strip() for c in line.strip().strip("|").split("|")]
    return [c.replace("**", "").replace("−", "-") for c in found] if plain else found


def tables(text: str) -> list[list[str]]:
    """Each table of the text as its lines: the header, the alignment line, the rows (contiguous lines from '|')."""
    found: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("|"):
            if not inside:
                found.append([])
            found[-1].append(line)
        inside = line.startswith("|")
    return found


def rows(table: list[str], plain: bool = False) -> tuple[list[str], list[dict[str, str]]]:
    """The header's cells and each row as {header: cell} (the alignment line skipped)."""
    head = cells(table[0], plain)
    return head, [dict(zip(head, cells(line, plain))) for line in table[2:]]


def table_under(text: str, heading: str, plain: bool = False) -> tuple[list[str], list[dict[str, str]]]:
    """The first table after the line `heading` (e.g. '## Layers')."""
    lines = text.splitlines()
    return rows(tables("\n".join(lines[lines.index(heading):]))[0], plain)
