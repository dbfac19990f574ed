"""The tests' one reader of a Markdown table: the rows of the first table after a heading (or in a text), each a
{header: cell} dict, with HTML comments, bold marks and the typographic minus taken out of the cells."""

from __future__ import annotations

import re


def cells(line: str) -> list[str]:
    line = re.sub(r"<!--.*?-->", "", line)
    return [c.strip().replace("**", "").replace("−", "-") for c in line.strip().strip("|").split("|")]


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


def rows(table: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    """The header's cells and each row as {header: cell} (the alignment line skipped)."""
    head = cells(table[0])
    return head, [dict(zip(head, cells(line))) for line in table[2:]]


def table_under(text: str, heading: str) -> tuple[list[str], list[dict[str, str]]]:
    """The first table after the line `heading` (e.g. '## Layers')."""
    lines = text.splitlines()
    return rows(tables("\n".join(lines[lines.index(heading):]))[0])
