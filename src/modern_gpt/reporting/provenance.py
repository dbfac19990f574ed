"""The report's provenance table: what made these numbers, read from the stages' outputs (not from params)."""

from __future__ import annotations

import math

from ..records.inputs import CorpusMeta
from ..records.stages import Floor
from .results import RowResult


CHANGES = "src/modern_gpt/changes/"       # a change's own file: a row that switches it on imports it too


def change_files(run) -> tuple[str, ...]:
    """The change files a run imported besides every run's code (the registry, changes/__init__.py, is every run's)."""
    return tuple(f for f in run.code_files if f.startswith(CHANGES) and f != CHANGES + "__init__.py")


def code_line(rows: list[RowResult]) -> str:
    """The md5 each run recorded over the code it imported, and which files those were: one version of the code
    every run imports, and each row whose change files it imported too (their md5 then differs by design). Runs of
    the same files with different md5s were made by different code."""
    runs = [run for r in rows for run in r.runs]
    md5s = sorted({run.code_md5 for run in runs if run.code_md5})
    missing = sum(not run.code_md5 for run in runs)
    if not md5s:
        return "not recorded"
    extra = {f for run in runs for f in change_files(run)}
    files = sorted({f for run in runs for f in run.code_files} - extra)
    package = "src/modern_gpt/"
    modules = [f[len(package):] for f in files if f.startswith(package)]
    parts = sorted({m.split("/")[0] + ("/" if "/" in m else "") for m in modules})
    where = ", ".join(f"`{f}`" for f in files if not f.startswith(package))
    where += (" and " if where else "") + f"{len(modules)} modules in `{package}{{{','.join(parts)}}}`"
    unrecorded = f"; {missing} of {len(runs)} runs recorded none" if missing else ""
    by_files: dict[tuple[str, ...], set[str]] = {}
    for run in runs:
        if run.code_md5:
            by_files.setdefault(change_files(run), set()).add(run.code_md5)
    if any(len(v) > 1 for v in by_files.values()):
        return (f"**{len(md5s)} different versions** (md5 {', '.join(f'`{m}`' for m in md5s)}): runs of the same "
                f"files were made by different code; rerun them (`dvc repro`). Files: {where}{unrecorded}")
    plain = by_files.get(())
    head = (f"md5 `{next(iter(plain))}` over the {len(files)} files the runs imported: {where}" if plain else
            f"the {len(files)} files every run imported: {where}")
    own = []
    for r in rows:
        mine = change_files(r.runs[0]) if r.runs else ()
        if mine and r.runs[0].code_md5:
            own.append(f"{r.label}: {', '.join(f'`{f[len(package):]}`' for f in mine)} too, md5 "
                       f"`{r.runs[0].code_md5}`")
    return head + ("; rows with change files of their own: " + "; ".join(own) if own else "") + unrecorded


def hf_line(classes: list[tuple[str, str | None]]) -> str:
    """Which rows a Hugging Face class computes exactly (`modern-gpt export` writes them), from the plan."""
    groups: dict[str, list[str]] = {}
    for label, cls in classes:
        groups.setdefault(cls or "none", []).append(label)
    parts = [f"{', '.join(labels)}: {cls}" for cls, labels in groups.items() if cls != "none"]
    if "none" in groups:
        parts.append(f"{', '.join(groups['none'])}: no class (`modern-gpt export` says which flag)")
    return "; ".join(parts)


def speed_line(runs: list) -> str:
    """How the runs computed: precision and compile mode (each a setting of train:, the same for every run)."""
    settings = sorted({(run.train.dtype, run.train.compile) for run in runs})
    parts = []
    for dtype, mode in settings:
        part = f"{dtype}{' autocast' if dtype != 'float32' else ''} (TF32 matmuls on CUDA), "
        part += "eager (train.compile: none)" if mode == "none" else f"torch.compile mode {mode!r}"
        parts.append(part)
    compiled, cached = sum(run.compiled_graphs for run in runs), sum(run.cached_graphs for run in runs)
    if compiled or cached:
        parts.append(f"{compiled} graphs compiled, {cached} loaded from the kernel cache (`.cache/`)")
    return "; ".join(parts) if len(settings) == 1 else "**runs differ**: " + "; ".join(parts)


def optimizer_line(rows: list[RowResult]) -> str:
    """Which optimiser trained the rows: fused AdamW, and where train.optimizer is muon, Muon on the blocks'
    matrices (naming the rows that use it when not all do)."""
    labels = [r.label for r in rows]
    muon = [r.label for r in rows if r.runs[0].train.optimizer == "muon"]
    text = ("Muon on the blocks' matrices (torch.optim.Muon, each step scaled to AdamW's RMS, so the same lr "
            "means the same), fused AdamW on the rest")
    if not muon:
        return "fused AdamW"
    if muon == labels:
        return text
    where = f"from {muon[0]} on" if labels[-len(muon):] == muon else f"in {', '.join(muon)}"
    return f"fused AdamW; {where}: {text}"


def machine_line(rows: list[RowResult]) -> str:
    """What computed the runs, from their records: processor, device, threads (x torchrun's processes), torch
    build, Python. Runs from more than one machine are grouped, each with the rows it trained, and the line
    says what that means."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        for run in r.runs:
            key = (f"{run.machine or 'machine not recorded'}, {run.device}"
                   + (f", {run.threads} thread{'s' if run.threads > 1 else ''}" if run.threads else "")
                   + (f" x {run.processes} processes (torchrun)" if run.processes > 1 else "")
                   + f", torch {run.torch}" + (f", Python {run.python}" if run.python else ""))
            groups.setdefault(key, [])
            if r.label not in groups[key]:
                groups[key].append(r.label)
    if len(groups) == 1:
        return next(iter(groups))
    parts = [f"{key} ({', '.join(labels)})" for key, labels in sorted(groups.items())]
    return (f"**{len(groups)} machines or thread counts**: " + "; ".join(parts) + ". Rows trained on different "
            "machines, or with different thread counts, differ by rounding as well as by their changes (training amplifies it to the 3rd or 4th decimal): trust the "
            "verdicts, not the last digits, and treat borderline rows as open.")


def provenance(meta: CorpusMeta, rows: list[RowResult], floor: Floor | None, match_params: bool = False,
               hf_classes: list[tuple[str, str | None]] = (), others: list[RowResult] = ()) -> dict[str, str]:
    """One line per fact: corpus, split, tokenizer, shape, seeds, training, evaluation, code, machine. Every
    fact comes from the stages' outputs (the run records for the machine), so the report stage measures nothing;
    `others`: the report's further rows (A/A, leave one out, rerun), whose machines count too."""
    first = rows[0].runs[0]
    m, t = first.model, first.train
    runs = [run for r in rows for run in r.runs]
    tokens = t.iters * t.batch_size * m.block_size
    c = meta.corpus
    info = {
        "corpus": f"`{c.path}`: {c.chars:,} characters, {c.bytes:,} bytes, md5 `{c.md5}`",
        "split": f"contiguous; the last {meta.val_fraction:.0%} validates ({meta.val.chars:,} characters, "
                 f"{meta.val.tokens:,} tokens; train {meta.train.tokens:,} tokens)",
        "tokenizer": f"{meta.tokenizer}, vocabulary {meta.vocab_size:,}",
        "model shape": f"{m.n_layer} layers, {m.n_head} heads, {m.n_embd} wide, context {m.block_size}, "
                       f"dropout {m.dropout}",
        "seeds": ", ".join(str(run.seed) for run in rows[0].runs),
        "training": f"{t.iters:,} steps × {t.batch_size} sequences × {m.block_size} tokens = {tokens:,} "
                    f"tokens per run ({tokens / meta.train.tokens:.2f} passes over the train split); "
                    f"lr {t.lr:g} → {t.min_lr:g} (warm-up {t.warmup_iters}, cosine), weight decay "
                    f"{t.weight_decay:g}, clip {t.grad_clip:g}",
        "optimizer": optimizer_line(rows),
        "speed": speed_line(runs),
        "evaluation": f"{t.eval_iters * t.batch_size} fixed windows of {m.block_size} tokens per split, "
                      f"every {t.eval_interval} steps and at the end",
        "training code": code_line(rows),
        "machine": machine_line([*rows, *others]),
    }
    if hf_classes:
        info["Hugging Face"] = hf_line(list(hf_classes))
    if match_params:
        info["parameter matching"] = "on: MLP hidden sizes " + ", ".join(
            f"{r.label} {r.runs[0].model.mlp_hidden or 'default'}" for r in rows)
    if floor is not None:
        info["floor"] = (f"{floor.nats_per_char:.4f} ± {floor.se:.4f} nats per character "
                         f"({floor.nats_per_char / math.log(2):.3f} bpc): the entropy of the process that "
                         "generated the corpus, the lowest loss any model can reach")
    return info
