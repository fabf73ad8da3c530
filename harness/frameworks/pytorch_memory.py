"""PyTorch's side of the sweep's out-of-memory handling (harness/throughput/oom.py): its allocator's
out-of-memory error, emptying the accelerator's cache, its allocator's peak and cap (through the device seam,
pytorch_device.py), and a fake allocator limit.
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from trainmark.harness.frameworks import pytorch_device as _device


def is_oom(exc: BaseException) -> bool:
    """The CUDA/ROCm caching allocator's out-of-memory error (``torch.OutOfMemoryError``)."""
    return isinstance(exc, torch.OutOfMemoryError)


def release(device) -> None:
    """Wait for the accelerator and hand its cached blocks back (nothing on a CPU)."""
    _device.release(device)


def peak_begin(device) -> bool:
    """Reset the accelerator allocator's peak (after its queued work); False where its type keeps none."""
    return _device.peak_memory_begin(device)


def peak_end(device) -> int | None:
    """The bytes the accelerator's allocator held at most in tensors since ``peak_begin``."""
    return _device.peak_memory_end(device)


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


memory_limit = _device.memory_limit  # a real allocator cap where the device type has one
