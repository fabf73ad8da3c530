"""PyTorch's side of a ``trainmark scale`` rank (harness/scale/worker.py): the rank's device in the process
group, its synchronisation, the flat gradient buffer that the communication-alone block all-reduces, the
message sizes' all-reduces, and every rank's figures gathered.
"""
from __future__ import annotations

import statistics
from typing import Callable

import torch
import torch.distributed as tdist

from trainmark.harness.frameworks import distributed, pytorch_device


def join(device_name: str) -> tuple[torch.device, distributed.Dist]:
    """This rank's device and its place in the process group torchrun describes (a CUDA rank: its local GPU)."""
    device = torch.device(device_name)
    dist = distributed.init(str(device))
    return pytorch_device.local(device, dist.local_rank), dist


def synchronizer(device: torch.device) -> Callable[[], None]:
    """Wait for ``device``'s queued work (nothing on a CPU)."""
    return pytorch_device.synchronizer(device)


def group_facts(dist: distributed.Dist) -> dict:
    """The result's ``torch_threads`` and ``backend`` (the process group's: gloo or nccl; None for one rank)."""
    return {"torch_threads": torch.get_num_threads(), "backend": tdist.get_backend() if dist.world > 1 else None}


def gradient_allreduce(model, device: torch.device, dist: distributed.Dist) -> tuple[Callable[[], None], int, int]:
    """(an all-reduce of one flat buffer of the trainable gradients' size, their count, their bytes)."""
    params = [p for p in model.parameters() if p.requires_grad]
    grad_numel = sum(p.numel() for p in params)
    grad_bytes = sum(p.numel() * p.element_size() for p in params)
    flat = torch.zeros(grad_numel, dtype=params[0].dtype if params else torch.float32, device=device)

    def allreduce():
        if dist.world > 1:
            torch.distributed.all_reduce(flat)
    return allreduce, grad_numel, grad_bytes


def gather(values: list[float], dist: distributed.Dist, device: torch.device) -> list[list[float]]:
    """Every rank's values, in rank order (a world of one: just ours)."""
    if dist.world == 1:
        return [values]
    t = torch.tensor(values, dtype=torch.float64, device=device)
    out = [torch.zeros_like(t) for _ in range(dist.world)]
    torch.distributed.all_gather(out, t)
    return [o.tolist() for o in out]


def measure_allreduce(sizes: list[int], steps: int, repeats: int, dist: distributed.Dist, device: torch.device,
                      sync, barrier, block) -> list[dict]:
    """Per message size: the slowest rank's median seconds of one all-reduce (``block`` times ``steps`` calls)."""
    rows = []
    for nbytes in sizes:
        buf = torch.zeros(max(1, nbytes // 4), dtype=torch.float32, device=device)
        for _ in range(2):
            tdist.all_reduce(buf)
        times = [block(lambda: tdist.all_reduce(buf), steps, sync, barrier) for _ in range(repeats)]
        slowest = gather([statistics.median(times)], dist, device)
        rows.append({"bytes": buf.numel() * 4, "seconds": max(r[0] for r in slowest)})
    return rows
