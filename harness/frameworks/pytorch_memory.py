"""PyTorch's side of the sweep's out-of-memory handling (harness/throughput/oom.py): its allocator's
out-of-memory error, emptying the CUDA cache, the CUDA allocator's peak and cap, and a fake allocator limit.
"""
from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def is_oom(exc: BaseException) -> bool:
    """The CUDA/ROCm caching allocator's out-of-memory error (``torch.OutOfMemoryError``)."""
    return isinstance(exc, torch.OutOfMemoryError)


def release_cuda(device) -> None:
    """Wait for the CUDA device and hand its cached blocks back (nothing on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def cuda_peak_begin(device) -> None:
    """Reset the CUDA allocator's peak (after the device's queued work)."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)


def cuda_peak_end(device) -> int:
    """The bytes the CUDA allocator held at most in tensors since ``cuda_peak_begin``."""
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device))


class FakeAllocatorLimit(TorchDispatchMode):
    """Raises ``torch.OutOfMemoryError`` once the bytes allocated inside the context exceed ``limit``.

    Entered around one training step, it counts every new tensor an operator returns (views
    and in-place results excluded) and never subtracts frees: a deterministic upper bound of
    what the step allocates, which grows with the batch size as a real allocator's peak does
    and does not depend on how many steps ran before. For tests and CPU dry runs only.
    """

    def __init__(self, limit_bytes: int):
        super().__init__()
        self.limit = int(limit_bytes)
        self.allocated = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = {t.data_ptr() for t in _flat_tensors((args, kwargs)) if t.device.type != "meta"}
        for t in _flat_tensors(out):
            if t.device.type == "meta" or t._is_view() or t.data_ptr() in inputs:
                continue
            self.allocated += t.numel() * t.element_size()
        if self.allocated > self.limit:
            raise torch.OutOfMemoryError(
                f"fake allocator: {self.allocated} bytes allocated, limit {self.limit} bytes")
        return out


def _flat_tensors(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _flat_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _flat_tensors(o)]
    return []


@contextlib.contextmanager
def cuda_memory_limit(limit_bytes: int, device: torch.device):
    """Cap the CUDA caching allocator at ``limit_bytes`` (a real allocator limit), restored after."""
    total = torch.cuda.get_device_properties(device).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, limit_bytes / total), device)
    try:
        yield
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, device)
