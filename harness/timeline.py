"""One trial's clock, energy meter and MLLOG together, so that a window boundary is one statement.

    with timeline.window("eval", epoch=e) as w:
        metric = trainer.evaluate()
        end = w.close()                      # optional: the stop instant, to log events at it
        timeline.eval_accuracy(metric, e, at=end.end_s)
    w.window.seconds, w.window.joules        # the closed window

Entering a window reads the clock and the meter (after a device sync) and writes its start
boundary; leaving it writes the stop boundary at the instant the window closed, with the
window's own fields (docs/result-format.md): ``epoch_stop`` its training joules and samples,
``eval_stop`` its evaluation joules, ``run_stop`` the status the body set. A window left by an
exception writes no stop boundary: the log shows where the trial broke off, and the windows
around it still close. ``init`` boundaries carry no energy (initialisation is untimed).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from trainmark.format import mllog
from trainmark.harness.measure.windows import Mark, Monitor, Window


class OpenWindow:
    """A window being timed: its start, the fields its stop boundary will carry, then its result."""

    def __init__(self, timeline: "Timeline", name: str, start: Mark, epoch: int | None):
        self._timeline, self.name, self.start, self.epoch = timeline, name, start, epoch
        self.fields: dict[str, Any] = {}     # extra metadata for the stop boundary (epoch: trainmark_samples)
        self.status: str | None = None       # run: the run_stop status (success | aborted)
        self.window: Window | None = None    # set when closed

    @property
    def start_ms(self) -> int:
        return self._timeline.ms(self.start.s)

    def close(self) -> Window:
        """Stop the clock and meter now (idempotent); the stop boundary is written when the block ends."""
        if self.window is None:
            self.window = self._timeline.monitor.end_window(self.name)
        return self.window


class Timeline:
    """Windows over one ``Monitor`` whose boundaries are written to one trial's MLLOG."""

    def __init__(self, monitor: Monitor, log: mllog.TrialLogWriter,
                 nodes: Callable[[], dict] = dict):
        self.monitor, self.log = monitor, log
        self._nodes = nodes  # per-node fields of run_start/run_stop (several nodes; {} on one)

    @property
    def meter(self):
        return self.monitor.meter

    def ms(self, clock_s: float) -> int:
        """MLLOG time of a clock reading."""
        return self.monitor.wall_ms(clock_s)

    def wall_s(self, clock_s: float) -> float:
        return self.monitor.wall_s(clock_s)

    def event(self, key: str, value: Any, *, at: float, **metadata) -> None:
        """A point event at clock instant ``at`` (a window's start or end)."""
        self.log.event(key, value, self.ms(at), **metadata)

    def settings(self, pairs: Iterable[tuple[str, Any]], *, at: float) -> None:
        self.log.settings(pairs, self.ms(at))

    def eval_accuracy(self, value: float, epoch: int, *, at: float) -> None:
        self.log.eval_accuracy(self.ms(at), epoch, value)

    @property
    def telemetry(self):
        """The trial's telemetry sampler (trainmark.harness.measure.telemetry), or None."""
        return self.monitor.telemetry

    @contextmanager
    def window(self, name: str, epoch: int | None = None, *,
               header: dict[str, Any] | None = None) -> Iterator[OpenWindow]:
        """Time window ``name`` (init, run, epoch, eval); ``header``: the submission's identity,
        logged at the window's start before its start boundary (the first window of a trial)."""
        start_key, stop_key = mllog.WINDOWS[name]
        metered = name != "init"
        mark = self.monitor.begin_window(name)
        w = OpenWindow(self, name, mark, epoch)
        if header is not None:
            self.log.header(w.start_ms, **header)
        self.log.boundary(start_key, w.start_ms, epoch=epoch, metered=metered, energy_j=mark.j,
                          domains_j=mark.domains_j if metered else None, nodes=self._nodes() if name == "run" else None)
        yield w  # an exception propagates: no stop boundary (the log shows where the trial broke off)
        end = w.close()
        fields = {mllog.TRAIN_ENERGY_J: end.joules} if name == "epoch" else \
            {mllog.EVAL_ENERGY_J: end.joules} if name == "eval" else {}
        self.log.boundary(stop_key, self.ms(end.end_s), epoch=epoch, status=w.status, metered=metered,
                          energy_j=end.end_j, fields={**fields, **w.fields},
                          domains_j=end.end_domains_j if metered else None,
                          nodes=self._nodes() if name == "run" else None)
