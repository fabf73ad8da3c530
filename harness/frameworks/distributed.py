"""torch.distributed under torchrun: gloo on CPU, NCCL on GPU; one process is a world of one.

Every collective here is a no-op in a world of one, so the trial loop reads the same
whichever way it is launched. torch.distributed is the collective library trainmark ships, so
it serves every framework: a TensorFlow trainer averages its gradients as a numpy vector
(``Dist.mean``) and the energy of several nodes is summed and gathered here too
(harness/measure/nodes.py); no caller outside harness/frameworks/ touches torch.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def sum(self, values: list[float], device: torch.device | str = "cpu") -> list[float]:
        """Element-wise sum over ranks (evaluation counts, samples), in float64 on ``device``."""
        if self.world == 1:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t.tolist()

    def any(self, flag: bool, device: torch.device | str = "cpu") -> bool:
        """True on every rank if it is true on any (divergence must stop all ranks together)."""
        if self.world == 1:
            return flag
        t = torch.tensor([1.0 if flag else 0.0], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def mean(self, flat: np.ndarray) -> np.ndarray:
        """The element-wise mean over the ranks of a numpy vector (every rank gets it), summed in place
        by the process group (gloo: host memory) and divided in the vector's own dtype."""
        if self.world == 1:
            return flat
        t = torch.from_numpy(flat)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        t /= self.world
        return t.numpy()

    def gather(self, value: Any) -> list[Any]:
        """Every rank's ``value`` (any picklable object), in rank order, on every rank."""
        if self.world == 1:
            return [value]
        gathered: list[Any] = [None] * self.world
        dist.all_gather_object(gathered, value)
        return gathered

    def broadcast_int(self, value: int) -> int:
        if self.world == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return int(box[0])

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()


def init(device: str) -> Dist:
    """Join the process group that torchrun describes in the environment, if any."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Dist()
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if device.startswith("cuda") else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=backend)
    return Dist(rank=rank, world=world, local_rank=local_rank)


def host_or(device: torch.device) -> torch.device:
    """Where a collective's tensor lives: ``device`` under NCCL (device tensors only), the host under gloo."""
    return device if dist.get_backend() == "nccl" else torch.device("cpu")


# what a collective raises when a rank stopped answering (torch.distributed.DistBackendError is one)
COLLECTIVE_FAILED = (RuntimeError,)


def shutdown() -> None:
    """Leave the process group together: a barrier first, so that no rank tears its connections down
    while a peer still talks on them (gloo then aborts the peer with SIGABRT, seen at 4 ranks on 2
    cores), then destroy it before the interpreter's own teardown does. Call it only on the path where
    every rank got here; after a crash the group is broken and a barrier would wait for the dead."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
