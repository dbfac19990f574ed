"""`review --check`, cell by cell: each off-by-default report's tables made again from its run list by the report's
own functions, and every cell of the committed tables compared with them, so a column the report gains joins the
check by construction.

- beyond.md's ladder: reporting.table.markdown_table, the function the page is written with;
- catalogue.md's star: reporting.catalogue.star_table (the verdict, its look and the claim's words included);
- scale.md's table per size and its transfer table: reporting.scale.tables, each change at each size judged again.

What the report stage reads from the plan is read here from params.yaml with the report's overlay on top
(overlays.py's one merge), by the plan's own parser (pipeline.ladder_params): the rows, their order, labels and
configs, the catalogue's claims (changes/), the looks. Each run's numbers are its line in the run list. Torch-free,
as review must stay: a row's non-embedding parameters (the "≠" of Δ params, scale's N) are its line's parameters
less the embedding tables its config gives them (embedding_params; tests/test_review.py holds it to the model's own
count). Not recomputed, and said where: the learning-rate grid's spikes (a run's curve, which no run list holds),
and scale.md's r and transfer table without the generated corpus's floor (data/generated/floor.json and
data/tokenized/meta.json, which a clone has only after `dvc pull` or `dvc repro generate tokenize`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

from ..changes.builtin import declared
from ..config import ModelConfig
from ..config.params import parse_yaml
from ..config.sections import PARSERS, ReportConfig
from ..pipeline.families import CATALOGUE, SCALE
from ..pipeline.ladder import Row
from ..pipeline.ladder_params import parse
from ..records.inputs import CorpusMeta
from ..records.stages import Floor, LadderName, Size
from ..reporting import outputs as files_of
from ..reporting.catalogue import star_table
from ..reporting.results import Ladder, RowResult, ladder_results
from ..reporting.runs_csv import RunLine
from ..reporting.scale import csv_rows as scale_csv_rows, tables as scale_tables
from ..reporting.settings import Settings, report_settings
from ..reporting.table import markdown_table
from ..reporting.transfer import changes
from ..settling.looks import Design, ladder_design
from . import overlays
from .sides import REPORTS


def md_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each Markdown table of a report: (its header's cells, each row's cells), stripped; the alignment line skipped."""
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]
    tables: list[tuple[list[str], list[list[str]]]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            body = [cells(x) for x in itertools.takewhile(lambda x: x.startswith("|"), lines[i + 2:])]
            tables.append((cells(line), body))
    return tables


def with_overlay(root: Path, report: str) -> dict[str, Any]:
    """params.yaml with reports/overlays/<report>.yaml on top, as `modern-gpt reproduce <report>` writes it, read."""
    text = overlays.apply((root / "params.yaml").read_text(encoding="utf-8"), [overlays.read(report, root)])
    return parse_yaml(text, f"params.yaml with {overlays.FOLDER}/{report}.yaml")


def designs(raw: dict[str, Any]) -> dict[bool, Design]:
    """The looks a report's comparisons were judged at, as the plan makes them (settling.looks.design) from these
    params: {False: a ladder at model:'s size, True: a listed size's (up to settle.scale_cap)}."""
    settle = PARSERS["settle"](raw.get("settle"), "settle")
    seeds = PARSERS["seeds"](raw.get("seeds"), "seeds")
    aa_seeds = PARSERS["ablation"](raw.get("ablation"), "ablation").aa_seeds
    report = PARSERS["report"](raw.get("report"), "report")
    return {sized: ladder_design(tuple(settle.looks) if settle.on else (), seeds, aa_seeds, settle.added().values(),
                                 report.confidence, report.borderline, settle.scale_cap if sized else None)
            for sized in (False, True)}


def embedding_params(cfg: ModelConfig) -> int:
    """The parameters GPT.num_params(non_embedding=True) leaves out: the token table, the output head when untied,
    the learned position table."""
    return cfg.vocab_size * cfg.n_embd * (1 if cfg.tie_embeddings else 2) + (
        cfg.block_size * cfg.n_embd if cfg.pos == "learned" else 0)


@dataclasses.dataclass(frozen=True)
class ListedRun:
    """A run list's line as the report reads a run record (row_result): its numbers, and its non-embedding
    parameters from its row's config."""
    line: RunLine
    params_non_embedding: int

    def __getattr__(self, name: str) -> Any:
        return getattr(self.line, name)


def judged(rows: list[Row], lines: list[RunLine], design: Design, report: ReportConfig, star: bool = False
           ) -> list[RowResult]:
    """The rows judged as the report stage judges them (ladder_results, at report:'s rule), each on its runs in
    the list."""
    runs = [(r.slug, r.label, [ListedRun(x, x.params - embedding_params(r.config))
                               for x in sorted((x for x in lines if x.run == r.slug), key=lambda x: x.seed)])
            for r in rows]
    return ladder_results(runs, design, star=star, confidence=report.confidence,
                          param_tolerance=report.param_tolerance, band_sds=report.borderline)


def vocab(root: Path) -> int:
    """The tokenizer's vocabulary, as the committed configs (the main ladder's row 0) record it."""
    return json.loads((root / "configs" / "baseline.json").read_text(encoding="utf-8"))["model"]["vocab_size"]


def ladder_table(root: Path, report: str, lines: list[RunLine]) -> list[str]:
    """beyond.md's ladder table, or catalogue.md's star, as the report's function writes it from these runs."""
    raw = with_overlay(root, overlays.of(report))
    p, design, rule = parse(raw), designs(raw)[False], PARSERS["report"](raw.get("report"), "report")
    if report == files_of.CATALOGUE:
        rows = p.star_rows(vocab(root))
        claims = (None, *(declared(CATALOGUE.parse(r.slug)["flag"]).claim for r in rows[1:]))
        return [star_table(Ladder(LadderName.CATALOGUE, judged(rows, lines, design, rule, star=True), claims=claims))]
    results = judged(p.beyond_rows(vocab(root)), lines, design, rule)
    seeds = design.on or len({r.val.n for r in results}) > 1
    return [markdown_table([(str(i), r) for i, r in enumerate(results)], design.level, seeds=seeds)]


def settings(root: Path, raw: dict[str, Any]) -> Settings:
    """The report's settings as the report stage makes them: report:, and the generated corpus's floor and the
    validation split's characters per token where their files are at hand (else no floor)."""
    floor, meta = root / "data" / "generated" / "floor.json", root / "data" / "tokenized" / "meta.json"
    if not (floor.is_file() and meta.is_file()):
        return report_settings(raw.get("report"))
    val = CorpusMeta.from_dict(json.loads(meta.read_text(encoding="utf-8")), str(meta)).val
    entropy = Floor.from_dict(json.loads(floor.read_text(encoding="utf-8")), str(floor)).nats_per_char
    return report_settings(raw.get("report"), val_chars_per_token=val.chars / val.tokens, floor=entropy)


def scale_ladders(raw: dict[str, Any], lines: list[RunLine], n_vocab: int, rule: ReportConfig
                  ) -> list[tuple[Size, list]]:
    """(size, its rows judged) for model:'s size and every listed one, smallest N first, as by_size() gives them.
    The params are parsed with scale.sizes set aside: the plan's check of each size counts its parameters with the
    model's own code (torch), and the plan stage has made that check already."""
    sizes = PARSERS["scale"](raw.get("scale"), "scale").sizes
    p = parse({**raw, "scale": {**(raw.get("scale") or {}), "sizes": {}}})
    at = designs(raw)
    ladders = []
    for name in [None, *sizes]:
        model = p.model if name is None else p.model.replace(head_dim=None, **sizes[name].given())
        rows = dataclasses.replace(p, model=model).rows(n_vocab)
        if name is not None:
            rows = [dataclasses.replace(r, slug=SCALE.slug(size=name, row=r.slug)) for r in rows]
        results = judged(rows, lines, at[name is not None], rule)
        full, run = rows[-1].config, results[-1].runs[0]
        size = Size(name, full.n_layer, full.n_embd, full.n_head, full.n_kv_head, full.head_dim,
                    run.params_non_embedding, run.steps, run.steps * p.train.batch_size * full.block_size)
        ladders.append((size, results))
    return sorted(ladders, key=lambda x: x[0].non_embedding)


def scale_table(root: Path, lines: list[RunLine]) -> tuple[list[str], list[dict[str, Any]], str]:
    """scale.md's tables and scale.csv's rows as reporting.scale writes them from these runs, and what they leave
    out: without the floor, the mean r of each size's table, the transfer table and the CSV's r columns."""
    raw = with_overlay(root, overlays.of(files_of.SCALE))
    s = settings(root, raw)
    floor = s.floor_per_token
    found = changes(scale_ladders(raw, lines, vocab(root), s), floor, s.confidence, s.borderline)
    made, rows = scale_tables(found, floor is not None), scale_csv_rows(found, floor is not None)
    if floor is not None:
        return made, rows, ""
    return made[:-1], rows, ("its mean r, transfer table and scale.csv's r columns need the generated corpus's floor "
                             "(data/generated/floor.json and data/tokenized/meta.json, not here): not recomputed")


def compare_tables(report: str, path: str, page: str, made: list[str], skip: tuple[str, ...] = ()) -> list[str]:
    """Each table `made` against the committed page's table with the same first two headers, every cell but those
    of a column whose header starts with one of `skip`: one line per table missing or of another length, and per
    cell that differs, naming the report, the row and the column."""
    committed = {tuple(head[:2]): (head, body) for head, body in md_tables(page)}
    problems = []
    for head, body in (t for text in made for t in md_tables(text)):
        kept = [h for h in head if not h.startswith(skip)]
        shown_head, shown = committed.get(tuple(head[:2]), ([], []))
        if [h for h in shown_head if not h.startswith(skip)] != kept:
            problems.append(f"{REPORTS}/{report}: no table with the columns {' | '.join(kept)}, which its runs in "
                            f"{path} give")
            continue
        if len(shown) != len(body):
            problems.append(f"{REPORTS}/{report}: its table of {head[1]} has {len(shown)} rows, its runs in {path} "
                            f"give {len(body)}")
            continue
        for cells, expected in zip(shown, body):
            want = dict(zip(head, expected))
            row = (f"row {expected[0]} ({expected[1]})" if head[0] in ("#", "") else
                   f"{expected[0]} in the table of {head[1]}")          # named as the runs give it
            problems += [f"{REPORTS}/{report}: {row} {column or '#'} is {cell!r}, its runs in {path} give "
                         f"{want[column]!r}" for column, cell in zip(shown_head, cells)
                         if not column.startswith(skip) and not agrees(column, cell, want[column])]
    return problems


# the tables a run list cannot give, by their first two headers: what each is made from
NOT_FROM_RUNS = {("", ""): "the provenance table (the corpus, the code, the machine: the plan's and the run records' "
                           "files)",
                 ("variant", "lr"): "the learning-rate grid's table (its spikes: each run's curve)",
                 ("variant", "K/V heads"): "the serving table (the serve stage's records)"}


def not_from_runs(page: str, made: list[str]) -> list[str]:
    """The committed page's tables that no table made from the run list covers, each said with what it needs."""
    covered = {tuple(head[:2]) for text in made for head, _ in md_tables(text)}
    return [NOT_FROM_RUNS.get(key, f"the table headed {' | '.join(key)}") for key in
            (tuple(head[:2]) for head, _ in md_tables(page)) if key not in covered]


WITHIN = {"secs": 1.0}     # a run list holds each run's seconds to 0.1 s: a row's mean, rounded, may move by one


def agrees(column: str, shown: str, made: str) -> bool:
    """A cell as made, or for a column of WITHIN a number that close to it."""
    if shown == made:
        return True
    try:
        return column in WITHIN and abs(float(shown) - float(made)) <= WITHIN[column]
    except ValueError:
        return False
