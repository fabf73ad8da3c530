"""A trial's windows read back from its MLLOG events: the reader's twin of harness/timeline.py.

The harness writes every window (init, run, epoch, eval, and MLPerf's block) as a ``*_start`` and a
``*_stop`` event; this module is the only code outside that writer that pairs them again, and the one
place the headline figure is computed: training time = (run_stop - run_start) - the evaluation windows.
The checker, the report and the scale reader all replay a trial through ``Replay``.

Pairing is by order of the log: a start while a window of its kind is open leaves the first one open
for ever (``Span.stop`` None); a stop with no window open is an orphan. Both are counted
(``unmatched``), so a reader can refuse a figure instead of guessing. Nothing here trusts the log:
a window whose epoch is not an integer is paired but has ``epoch`` None.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from trainmark.format import mllog
from trainmark.format.mllog_read import Event

WINDOW_KEYS = {**mllog.WINDOWS, "block": (mllog.BLOCK_START, mllog.BLOCK_STOP)}
_KIND = {key: (name, i) for name, keys in WINDOW_KEYS.items() for i, key in enumerate(keys)}  # key -> (window, stop?)


def _epoch(e: Event) -> int | None:
    epoch = e.metadata.get(mllog.EPOCH_NUM)
    return epoch if type(epoch) is int else None


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or x in (float("inf"), float("-inf")):
        return None
    return float(x)


@dataclass
class Span:
    """One window as the log paired it: its start event and its stop event (None: never closed)."""
    name: str
    start: Event
    stop: Event | None = None

    @property
    def epoch(self) -> int | None:
        return _epoch(self.start)

    @property
    def ms(self) -> float | None:
        return None if self.stop is None else self.stop.time_ms - self.start.time_ms

    @property
    def seconds(self) -> float | None:
        return None if self.stop is None else (self.stop.time_ms - self.start.time_ms) / 1000


@dataclass(frozen=True)
class RunTime:
    """The headline figures of a trial, in seconds; None with ``reason`` when they cannot be computed."""
    total_s: float | None = None
    eval_s: float | None = None
    train_s: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class EvalPoint:
    """One evaluation inside an open eval window: its metric event and the training before it."""
    accuracy: Event
    span: Span
    train_s: float            # training time before the window opened (run_start on, evaluations excluded)
    train_j: float | None     # the same for energy (None where a reading is missing)


class Replay:
    """Every window boundary of one trial's events, paired once in one pass."""

    def __init__(self, events: Iterable[Event]):
        self.boundaries: dict[str, list[Event]] = {name: [] for name in WINDOW_KEYS}  # in log order
        self.spans: dict[str, list[Span]] = {name: [] for name in WINDOW_KEYS}        # in order of start
        self.orphan_stops: dict[str, int] = {name: 0 for name in WINDOW_KEYS}
        self.accuracies: list[tuple[Event, Span | None]] = []  # eval_accuracy with the eval window open at it
        open_: dict[str, Span] = {}
        for e in events:
            kind = _KIND.get(e.key)
            if kind is None:
                if e.key == mllog.EVAL_ACCURACY:
                    self.accuracies.append((e, open_.get("eval")))
                continue
            name, stop = kind
            self.boundaries[name].append(e)
            if not stop:
                open_[name] = Span(name, e)
                self.spans[name].append(open_[name])
            elif name in open_:
                open_.pop(name).stop = e
            else:
                self.orphan_stops[name] += 1

    def first(self, name: str) -> tuple[Event | None, Event | None]:
        """The first start and the first stop of a window kind (each may be None)."""
        start_key, stop_key = WINDOW_KEYS[name]
        found = self.boundaries[name]
        return (next((e for e in found if e.key == start_key), None),
                next((e for e in found if e.key == stop_key), None))

    def last(self, name: str) -> tuple[Event | None, Event | None]:
        """The last start and the last stop of a window kind (each may be None)."""
        start_key, stop_key = WINDOW_KEYS[name]
        found = self.boundaries[name][::-1]
        return (next((e for e in found if e.key == start_key), None),
                next((e for e in found if e.key == stop_key), None))

    def count(self, name: str) -> tuple[int, int]:
        """(starts, stops) of a window kind."""
        starts = sum(1 for e in self.boundaries[name] if e.key == WINDOW_KEYS[name][0])
        return starts, len(self.boundaries[name]) - starts

    def split(self, name: str) -> tuple[list[Event], list[Event]]:
        """(starts, stops) of a window kind, each in log order."""
        start_key = WINDOW_KEYS[name][0]
        found = self.boundaries[name]
        return [e for e in found if e.key == start_key], [e for e in found if e.key != start_key]

    def closed(self, name: str) -> list[Span]:
        return [s for s in self.spans[name] if s.stop is not None]

    def unmatched(self, name: str) -> int:
        """Boundaries without their pair: windows never closed plus stops with no window open."""
        return sum(1 for s in self.spans[name] if s.stop is None) + self.orphan_stops[name]

    def ordered(self, name: str) -> list[tuple[float, float]]:
        """(start, stop) times of the closed windows that run forward and follow the previous one."""
        out: list[tuple[float, float]] = []
        for s in self.closed(name):
            if s.stop.time_ms >= s.start.time_ms and (not out or s.start.time_ms >= out[-1][1]):
                out.append((s.start.time_ms, s.stop.time_ms))
        return out

    def first_per_epoch(self, name: str) -> dict[int, Span]:
        """Per epoch number: its first start and the first stop of that epoch after it."""
        start_key = WINDOW_KEYS[name][0]
        opened: dict[int, Event] = {}
        closed: dict[int, Span] = {}
        for e in self.boundaries[name]:
            epoch = _epoch(e)
            if epoch is None:
                continue
            if e.key == start_key:
                opened.setdefault(epoch, e)
            elif epoch in opened and epoch not in closed:
                closed[epoch] = Span(name, opened[epoch], e)
        return closed

    def last_per_epoch(self, name: str) -> dict[int, list[Event | None]]:
        """Per epoch number: [its last start, its last stop] (either may be None)."""
        out: dict[int, list[Event | None]] = {}
        for e in self.boundaries[name]:
            epoch = _epoch(e)
            if epoch is not None:
                out.setdefault(epoch, [None, None])[e.key == WINDOW_KEYS[name][1]] = e
        return out

    def run_time(self) -> RunTime:
        """The headline: training time = (first run_stop - first run_start) - the closed eval windows."""
        start, stop = self.first("run")
        if start is None or stop is None:
            return RunTime(reason="no run_start" if start is None else "no run_stop")
        unmatched = self.unmatched("eval")
        if unmatched:
            return RunTime(reason=f"{unmatched} eval_start/eval_stop event(s) without their pair")
        total_ms = stop.time_ms - start.time_ms
        eval_ms = sum(s.ms for s in self.closed("eval"))
        return RunTime(total_ms / 1000, eval_ms / 1000, (total_ms - eval_ms) / 1000)

    def run_energy(self) -> tuple[float | None, float | None]:
        """(total, train) joules from the cumulative meter readings, as ``run_time`` from time_ms: the run's
        one start and stop, minus the k-th eval_start to the k-th eval_stop; None where a count differs or a
        reading is not a number."""
        run_starts, run_stops = self.split("run")
        eval_starts, eval_stops = self.split("eval")
        readings = [[_number(e.metadata.get(mllog.ENERGY_J)) for e in group]
                    for group in (run_starts, run_stops, eval_starts, eval_stops)]
        if len(run_starts) != 1 or len(run_stops) != 1 or len(eval_starts) != len(eval_stops) or \
                None in sum(readings, []):
            return None, None
        total = readings[1][0] - readings[0][0]
        return total, total - sum(b - a for a, b in zip(readings[2], readings[3]))

    def init_seconds(self) -> float | None:
        start, stop = self.first("init")
        return None if start is None or stop is None else (stop.time_ms - start.time_ms) / 1000

    def eval_points(self) -> list[EvalPoint]:
        """Each evaluation logged inside an eval window opened after run_start, with the training time
        (and energy) before that window: the headline figure cut at each evaluation."""
        run_start = self.first("run")[0]
        if run_start is None:
            return []
        run_j = _number(run_start.metadata.get(mllog.ENERGY_J))
        before: dict[int, tuple[float, float | None]] = {}  # id(span) -> (eval ms, eval J) before it
        eval_ms, eval_j = 0.0, 0.0
        for s in self.spans["eval"]:
            if s.start.line < run_start.line:
                continue
            before[id(s)] = (eval_ms, eval_j)
            if s.stop is not None:
                eval_ms += s.ms
                a, b = _number(s.start.metadata.get(mllog.ENERGY_J)), _number(s.stop.metadata.get(mllog.ENERGY_J))
                eval_j = None if None in (eval_j, a, b) else eval_j + b - a
        points: list[EvalPoint] = []
        inside = [(acc, s) for acc, s in self.accuracies if s is not None and id(s) in before]
        for acc, s in inside:
            ms, joules = before[id(s)]
            open_j = _number(s.start.metadata.get(mllog.ENERGY_J))
            energy = None if None in (run_j, open_j, joules) else open_j - run_j - joules
            points.append(EvalPoint(acc, s, (s.start.time_ms - run_start.time_ms - ms) / 1000, energy))
        return points
