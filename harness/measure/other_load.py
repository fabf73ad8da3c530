"""How much of the CPUs other processes used during a window: a noisy neighbour explained by data.

On a shared machine a busy neighbour slows every figure several-fold (docs/calibration.md);
``trainmark ops`` and every trial record this share so that a slow or noisy score is explained
by a measurement rather than guessed. Linux only (``/proc/stat``); elsewhere the share is None.
"""
from __future__ import annotations

import os
import time


class OtherLoad:
    """Share of the CPUs other processes used while we measured (from /proc/stat minus our own
    CPU time). On a shared machine a busy neighbour slows every figure; the report says so."""

    def __init__(self, stat: str = "/proc/stat"):
        self.stat = stat
        self.start = self._read()

    def _read(self):
        import resource

        try:
            with open(self.stat) as fh:
                fields = [int(x) for x in fh.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / hz   # all but idle and iowait; guest is in user
        own = sum(getattr(resource.getrusage(w), a) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                  for a in ("ru_utime", "ru_stime"))
        return time.monotonic(), busy, own

    def percent(self) -> float | None:
        end = self._read()
        if self.start is None or end is None or end[0] <= self.start[0]:
            return None
        wall = (end[0] - self.start[0]) * (os.cpu_count() or 1)
        other = (end[1] - self.start[1]) - (end[2] - self.start[2])
        return round(max(0.0, 100 * other / wall), 1)
