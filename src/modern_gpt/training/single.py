"""One run: train a config on a seed, evaluate the trained weights, and return the run record (run); the run
stage's whole work around it: slots, threads, ranks, the code's md5, the files it writes (train_stage).

The pipeline's run stage and the quick command both go through here, so both report the same numbers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import platform
import re
import time
from functools import lru_cache
from pathlib import Path

import torch

from ..config import ModelConfig, TrainConfig
from ..core.files import read_json, write_json
from ..core.slots import hold_cores, run_gpus
from ..core.stage import code_files, code_md5
from ..records.inputs import CorpusMeta, RowConfig
from ..records.run_record import RunRecord
from ..nn import GPT
from .batches import load_tokens
from .distributed import ranks
from .evaluate import bits_per_char
from .loop import Trained, train


def run(slug: str, model_cfg: ModelConfig, train_cfg: TrainConfig, train_data: torch.Tensor,
        val_data: torch.Tensor, seed: int, *, val_chars: int, label: str | None = None,
        progress: bool = True) -> tuple[GPT, RunRecord]:
    """Train, then score the final weights on the fixed windows (None when the run diverged)."""
    t0 = time.perf_counter()
    model, trained = train(model_cfg, train_cfg, train_data, val_data, seed, label=label or f"{slug} seed {seed}",
                           progress=progress)
    return model, record(slug, seed, model_cfg, train_cfg, model, trained, len(val_data), val_chars,
                         time.perf_counter() - t0)


def train_stage(slug: str, seed: int, configs: Path, data: Path, out: Path, script: Path, root: Path) -> None:
    """The run stage: trains <configs>/<slug>.json on `seed` over the tokenized corpus in `data`, and writes
    <out>/<slug>/<seed>/model.pt and run.json, the record carrying the md5 of the code this process imported (the
    stage's `script` and the package's modules, paths relative to `root`)."""
    config = configs / f"{slug}.json"
    spec = RowConfig.from_dict(read_json(config), str(config))
    meta = CorpusMeta.from_dict(read_json(data / "meta.json"), str(data / "meta.json"))
    # The GPU slot first (on CUDA; before CUDA starts, which then shows this process that GPU only), then one core
    # slot per thread (core/slots.py), waiting for them while other runs of this project hold them, and never more
    # threads than cores. Under torchrun the processes of one run must start together, so they take no core slots
    # (torchrun gives each process 1 thread); their local rank 0 takes the run's GPUs together.
    cores = hold_cores(torch.get_num_threads()) if ranks().world == 1 else contextlib.nullcontext()
    with run_gpus(spec.train.device) as gpus, cores as threads:
        if threads:
            torch.set_num_threads(threads)
        model, rec = run(slug, spec.model, spec.train, load_tokens(data / "train.bin"), load_tokens(data / "val.bin"),
                         seed, val_chars=meta.val.chars)
    if ranks().rank != 0:          # under torchrun every process holds the same result: the first one writes it
        return
    files = code_files(script, root)
    rec = dataclasses.replace(rec, code_md5=code_md5(files, root), code_files=tuple(files), device_index=",".join(gpus))
    folder = out / slug / str(seed)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / "model.pt")
    write_json(folder / "run.json", rec.to_dict())


def record(slug: str, seed: int, model_cfg: ModelConfig, train_cfg: TrainConfig, model: GPT, trained: Trained,
           val_tokens: int, val_chars: int, secs: float) -> RunRecord:
    """The run record. The loop's last loss-curve point is the score of the final weights (the same fixed
    windows evaluate.score uses), so nothing is evaluated twice."""
    scores = {"train_loss": None, "val_loss": None, "val_bpc": None}
    if not trained.diverged:
        last = trained.curve[-1]
        scores = {"train_loss": last.train, "val_loss": last.val,
                  "val_bpc": bits_per_char(last.val, val_tokens, val_chars)}
    return RunRecord(
        slug=slug, seed=seed, model=model_cfg, train=train_cfg,
        diverged=trained.diverged, steps=trained.steps, curve=trained.curve, losses=trained.losses, **scores,
        params=model.num_params(), params_non_embedding=model.num_params(non_embedding=True),
        secs=secs, tokens_per_sec=trained.tokens_per_sec, device=trained.device,
        torch=torch.__version__, machine=machine(trained.device), threads=torch.get_num_threads(),
        python=platform.python_version(), processes=trained.processes, compiled_graphs=trained.graphs[0], cached_graphs=trained.graphs[1],
    )


@lru_cache(maxsize=None)
def machine(device: str) -> str:
    """What computed a run, as far as it changes the numbers: the GPU's name ('NVIDIA H200'), or the CPU's
    model with its family numbers and the vector instructions torch's kernels use ('AMD EPYC (family 25,
    model 17; AVX512)'). Two machines that print the same text run the same kernels."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    info = {}
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    name = re.sub(r"\s+", " ", info.get("model name") or platform.processor() or platform.machine() or "unknown CPU")
    family = f"family {info['cpu family']}, model {info['model']}; " if "cpu family" in info and "model" in info else ""
    return f"{name} ({family}{torch.backends.cpu.get_cpu_capability()})"
