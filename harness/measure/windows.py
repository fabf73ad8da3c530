"""Measurement windows over one clock and one energy meter (after Zeus's begin/end_window).

A trial opens ``run``, ``epoch`` and ``eval`` windows; the time and energy excluding
evaluation is the run window minus the eval windows, so nothing between epochs (logging,
checkpoints) is hidden. Window boundaries call ``sync`` (``torch.cuda.synchronize``) so the
clock measures finished work, and the same instants are written to the MLLOG as ``time_ms``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Mark:
    """One window boundary: clock seconds and the meter's cumulative joules (None if unmeasured)."""

    s: float
    j: float | None
    domains_j: dict | None = None  # each energy domain's cumulative joules (None: the meter has no domains)


@dataclass(frozen=True)
class Window:
    name: str
    start_s: float      # monotonic clock
    end_s: float
    start_j: float | None
    end_j: float | None
    start_domains_j: dict | None = None
    end_domains_j: dict | None = None

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    @property
    def joules(self) -> float | None:
        if self.start_j is None or self.end_j is None:
            return None
        return self.end_j - self.start_j

    def domain_joules(self) -> dict[str, float | None] | None:
        """Joules of this window per energy domain; a domain unmeasured at either end is None."""
        if self.start_domains_j is None or self.end_domains_j is None:
            return None
        return {name: None if end is None or self.start_domains_j.get(name) is None
                else end - self.start_domains_j[name] for name, end in self.end_domains_j.items()}


class Monitor:
    """Opens and closes named windows; ``wall_ms`` maps a clock reading to MLLOG time."""

    def __init__(self, meter, clock: Callable[[], float] = time.perf_counter,
                 sync: Callable[[], None] | None = None, wall: Callable[[], float] = time.time,
                 telemetry=None):
        self.meter, self.clock, self.sync = meter, clock, sync or (lambda: None)
        self.telemetry = telemetry  # a trainmark.harness.measure.telemetry.Sampler, or None
        self._open: dict[str, tuple[float, float | None, dict | None]] = {}
        # One anchor: MLLOG times are wall-clock-shaped but differences are monotonic.
        self._anchor_clock, self._anchor_wall = clock(), wall()

    def wall_s(self, clock_s: float) -> float:
        return self._anchor_wall + (clock_s - self._anchor_clock)

    def wall_ms(self, clock_s: float) -> int:
        return int(round(self.wall_s(clock_s) * 1000))

    def _now(self) -> tuple[float, float | None, dict | None]:
        self.sync()
        now, reading = self.clock(), self.meter.readings()  # the total and every domain from one read
        return now, reading.total, dict(reading.domains) if reading.domains else None

    def begin_window(self, name: str) -> Mark:
        if name in self._open:
            raise RuntimeError(f"window {name!r} is already open")
        self._open[name] = self._now()
        return Mark(*self._open[name])

    def end_window(self, name: str) -> Window:
        if name not in self._open:
            raise RuntimeError(f"window {name!r} was never opened")
        start_s, start_j, start_domains = self._open.pop(name)
        end_s, end_j, end_domains = self._now()
        return Window(name, start_s, end_s, start_j, end_j, start_domains, end_domains)
