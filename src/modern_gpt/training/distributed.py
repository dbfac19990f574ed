"""One run over several processes: torchrun's environment, honoured by the training loop.

Under `torchrun --nproc_per_node=N` every process trains the same model (DistributedDataParallel averages
the gradients), each on its 1/N slice of the same global batch: the batch the single-process run draws
from its seed. So N processes train what one process trains, to rounding. A plain `python` process is
world size 1 and nothing here changes what it does.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import torch
import torch.distributed as dist

from ..core.errors import ConfigError


@dataclass(frozen=True)
class Ranks:
    """This process among torchrun's: rank of world processes; local: its device index on this machine."""
    rank: int = 0
    world: int = 1
    local: int = 0

    def rows(self, batch_size: int) -> slice:
        """This process's rows of a global batch of batch_size (a multiple of world)."""
        share = batch_size // self.world
        return slice(self.rank * share, (self.rank + 1) * share)


def ranks() -> Ranks:
    """From torchrun's environment variables (RANK, WORLD_SIZE, LOCAL_RANK); a plain process is rank 0 of 1."""
    env = os.environ
    return Ranks(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)))


@contextmanager
def process_group(device: torch.device, batch_size: int) -> Iterator[tuple[Ranks, torch.device]]:
    """Join torchrun's processes for one run (gloo on CPU, nccl on CUDA, one GPU per process), and leave
    them at the end. Yields this process's ranks and the device it trains on. Outside torchrun: (Ranks(),
    device), and no process group."""
    here = ranks()
    if here.world == 1:
        yield here, device
        return
    if batch_size % here.world:
        raise ConfigError(f"train.batch_size={batch_size}: torchrun runs {here.world} processes, each training "
                          f"an equal slice of the batch: use a multiple of {here.world}")
    if device.type == "cuda":
        device = torch.device("cuda", here.local)
        torch.cuda.set_device(device)
    owned = not dist.is_initialized()
    if owned:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        yield here, device
    finally:
        if owned:
            dist.destroy_process_group()


def wrap(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """The module the optimiser steps through: DistributedDataParallel (gradients averaged over the
    processes in backward) under torchrun, the module itself in a plain process."""
    if not dist.is_initialized():
        return model
    from torch.nn.parallel import DistributedDataParallel
    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)


def global_mean(loss: torch.Tensor) -> float:
    """The batch loss over every process's slice (the slices are equal, so the mean of their means): what
    the single-process run computes, and the same number on every process, so all of them take the same
    decision on divergence."""
    if not dist.is_initialized():
        return loss.item()
    total = loss.detach().float().clone()
    dist.all_reduce(total)          # a sum: gloo has no average
    return total.item() / dist.get_world_size()
