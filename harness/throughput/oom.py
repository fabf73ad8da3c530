"""Out-of-memory handling for sweeps: recognise an OOM, recover, search the largest batch, cap memory.

The search assumes what holds for training steps: if a batch size runs out of memory, every
larger one does too. ``FakeAllocatorLimit`` lets a test (or a CPU-only machine) stand in for a
device allocator: it raises the same ``torch.OutOfMemoryError`` the CUDA caching allocator raises.
"""
from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["is_oom", "release_memory", "SearchResult", "largest_fitting", "FakeAllocatorLimit",
           "cuda_memory_limit", "PeakMemory"]


def is_oom(exc: BaseException) -> bool:
    """CUDA/ROCm allocator OOM (``torch.OutOfMemoryError``) or the CPU allocator's failure."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        "out of memory" in text.lower() or "can't allocate memory" in text or isinstance(exc, MemoryError))


def release_memory(device: torch.device) -> None:
    """Drop what a failed step left behind, so the next probe starts from the same state."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


@dataclass
class SearchResult:
    """``max_fit``: the largest batch size that fit (None: not even 1); ``probes`` in the order run."""

    max_fit: int | None
    probes: list[tuple[int, bool]] = field(default_factory=list)
    capped: bool = False            # the limit fit: the true maximum may be larger

    def as_dict(self) -> dict:
        return {"max_batch_size": self.max_fit, "capped_at_limit": self.capped,
                "probes": [{"batch_size": b, "fits": f} for b, f in self.probes]}


def largest_fitting(fits: Callable[[int], bool], start: int = 1, limit: int = 1 << 16,
                    known: dict[int, bool] | None = None) -> SearchResult:
    """Largest ``b`` in [1, limit] with ``fits(b)``: doubling from ``start``, then bisection.

    ``known`` holds outcomes already seen (grid points), which are not probed again.
    """
    if start < 1 or limit < 1:
        raise ValueError("start and limit must be >= 1")
    seen = dict(known or {})
    result = SearchResult(None)

    def probe(b: int) -> bool:
        if b not in seen:
            seen[b] = bool(fits(b))
            result.probes.append((b, seen[b]))
        return seen[b]

    lo, hi = 0, None                  # lo fits (0: nothing known to fit), hi does not
    b = min(start, limit)
    while True:
        if probe(b):
            lo = b
            if b >= limit:
                result.max_fit, result.capped = b, True
                return result
            b = min(b * 2, limit)
        else:
            hi = b
            break
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe(mid):
            lo = mid
        else:
            hi = mid
    result.max_fit = lo or None
    return result


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


class PeakMemory:
    """Peak memory of one measurement window.

    CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` (tensors only,
    not the allocator's cache). CPU: the process's peak resident set (``VmHWM``), reset by writing
    5 to ``/proc/self/clear_refs`` (Linux >= 4.0): the whole process, Python and libraries included.
    """

    def __init__(self, device: torch.device, proc: str = "/proc/self"):
        self.device, self.proc = device, proc
        self.method: str | None = None
        self.reason: str | None = None

    def begin(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.method = "cuda-max-memory-allocated"
            return
        try:
            with open(f"{self.proc}/clear_refs", "w") as fh:
                fh.write("5")
            self.method = "process-peak-rss"
        except OSError as exc:
            self.method, self.reason = None, f"cannot reset the peak RSS: {exc.strerror or exc}"

    def end(self) -> int | None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return int(torch.cuda.max_memory_allocated(self.device))
        if self.method is None:
            return None
        try:
            with open(f"{self.proc}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError as exc:
            self.reason = f"cannot read the peak RSS: {exc.strerror or exc}"
        self.method = None
        self.reason = self.reason or "no VmHWM line in /proc/self/status"
        return None
