"""Out-of-memory handling for sweeps: recognise an OOM, recover, search the largest batch, cap memory.

The search assumes what holds for training steps: if a batch size runs out of memory, every
larger one does too. ``FakeAllocatorLimit`` lets a test (or a CPU-only machine) stand in for a
device allocator: it raises the same ``torch.OutOfMemoryError`` the CUDA caching allocator raises.
What is PyTorch's (its allocator's error, cache, peak and cap) is in harness/frameworks/pytorch_memory.py.
"""
from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Callable

from trainmark.harness.frameworks import pytorch_memory
from trainmark.harness.frameworks.pytorch_memory import FakeAllocatorLimit, memory_limit

__all__ = ["is_oom", "release_memory", "SearchResult", "largest_fitting", "FakeAllocatorLimit",
           "memory_limit", "PeakMemory"]


def is_oom(exc: BaseException) -> bool:
    """CUDA/ROCm allocator OOM (``torch.OutOfMemoryError``) or the CPU allocator's failure."""
    if pytorch_memory.is_oom(exc):
        return True
    text = str(exc)
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        "out of memory" in text.lower() or "can't allocate memory" in text or isinstance(exc, MemoryError))


def release_memory(device) -> None:
    """Drop what a failed step left behind, so the next probe starts from the same state."""
    gc.collect()
    pytorch_memory.release(device)


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


class PeakMemory:
    """Peak memory of one measurement window.

    An accelerator: its device module's ``max_memory_allocated`` after ``reset_peak_memory_stats`` (tensors only,
    not the allocator's cache). CPU: the process's peak resident set (``VmHWM``), reset by writing
    5 to ``/proc/self/clear_refs`` (Linux >= 4.0): the whole process, Python and libraries included.
    """

    def __init__(self, device, proc: str = "/proc/self"):
        self.device, self.proc = device, proc
        self.method: str | None = None
        self.reason: str | None = None

    def begin(self) -> None:
        if self.device.type != "cpu" and pytorch_memory.peak_begin(self.device):
            self.method = f"{self.device.type}-max-memory-allocated"
            return
        try:
            with open(f"{self.proc}/clear_refs", "w") as fh:
                fh.write("5")
            self.method = "process-peak-rss"
        except OSError as exc:
            self.method, self.reason = None, f"cannot reset the peak RSS: {exc.strerror or exc}"

    def end(self) -> int | None:
        if self.device.type != "cpu" and self.method and self.method.endswith("-max-memory-allocated"):
            return pytorch_memory.peak_end(self.device)
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
