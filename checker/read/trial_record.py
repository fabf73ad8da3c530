"""One trial's figures, recomputed from its MLLOG events (never from a summary file).

train time = (run_stop - run_start) - sum of (eval_stop - eval_start), from ``time_ms``;
train energy the same way from the meter's cumulative readings, metadata ``trainmark_energy_j`` of
run_start, run_stop, eval_start and eval_stop. A figure that cannot be computed is ``None`` with
the reason, never 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from trainmark.format import mllog  # the MLLOG keys, spelled once
from trainmark.format.mllog_read import Event
from trainmark.rules.ruleset import BenchmarkRules


@dataclass
class Logged:
    value: Any
    line: int


@dataclass
class EvalRecord:
    epoch: Any
    accuracy: Any
    accuracy_line: int
    stop_ms: float | None = None
    stop_line: int | None = None


@dataclass
class TrialRecord:
    trial: int                      # k of result_<k>.txt
    rel: str                        # the result file, relative to the checked folder
    first_line: int = 1
    points: dict[str, Logged] = field(default_factory=dict)   # first occurrence of each key
    evals: list[EvalRecord] = field(default_factory=list)
    epochs_trained: int = 0         # epoch_stop events (a diverged or every-k schedule evaluates fewer)
    run_start_ms: float | None = None
    run_stop: Event | None = None
    init_time_s: float | None = None
    train_time_s: float | None = None
    total_time_s: float | None = None
    eval_time_s: float | None = None
    time_reason: str = ""
    train_energy_j: float | None = None
    total_energy_j: float | None = None
    energy_reason: str = ""
    final_metric: float | None = None
    converged: bool = False

    def value(self, key: str, default: Any = None) -> Any:
        logged = self.points.get(key)
        return default if logged is None else logged.value

    def line_of(self, key: str) -> int | None:
        logged = self.points.get(key)
        return None if logged is None else logged.line

    @property
    def status(self) -> str | None:
        status = self.run_stop.metadata.get(mllog.STATUS) if self.run_stop else None
        return status if isinstance(status, str) else None

    @property
    def evaluations(self) -> int:
        """Evaluations logged: fewer than the epochs when the rules evaluate every k epochs."""
        return len(self.evals)


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


@dataclass
class _Windows:
    """The init and evaluation windows while a trial's events are read."""
    init_start: float | None = None
    init_stop: float | None = None
    eval_open: float | None = None     # time_ms of an eval_start not yet closed
    eval_ms: float = 0.0
    unmatched: int = 0                 # eval_start/eval_stop events without their pair


def extract_trial(events: list[Event], trial: int, rel: str, rules: BenchmarkRules | None) -> TrialRecord:
    record = TrialRecord(trial, rel, first_line=events[0].line if events else 1)
    windows = _Windows()
    readings: dict[str, list[tuple[Any, int]]] = {mllog.RUN_START: [], mllog.RUN_STOP: [],
                                                  mllog.EVAL_START: [], mllog.EVAL_STOP: []}
    for e in events:
        record.points.setdefault(e.key, Logged(e.value, e.line))
        if e.key in readings:
            readings[e.key].append((e.metadata.get(mllog.ENERGY_J), e.line))
        _take(record, windows, e)
    windows.unmatched += windows.eval_open is not None
    if windows.init_start is not None and windows.init_stop is not None:
        record.init_time_s = (windows.init_stop - windows.init_start) / 1000
    _times(record, windows.eval_ms, windows.unmatched)
    _energies(record, readings)
    if record.evals:
        record.final_metric = _number(record.evals[-1].accuracy)
    record.converged = bool(rules is not None and record.final_metric is not None
                            and rules.reached(record.final_metric))
    return record


def _take(record: TrialRecord, windows: _Windows, e: Event) -> None:
    """What one event adds to the trial: a window boundary, an epoch, an evaluation."""
    if e.key == mllog.INIT_START and windows.init_start is None:
        windows.init_start = e.time_ms
    elif e.key == mllog.INIT_STOP and windows.init_stop is None:
        windows.init_stop = e.time_ms
    elif e.key == mllog.RUN_START and record.run_start_ms is None:
        record.run_start_ms = e.time_ms
    elif e.key == mllog.RUN_STOP and record.run_stop is None:
        record.run_stop = e
    elif e.key == mllog.EPOCH_STOP:
        record.epochs_trained += 1
    elif e.key == mllog.EVAL_START:
        windows.unmatched += windows.eval_open is not None
        windows.eval_open = e.time_ms
    elif e.key == mllog.EVAL_ACCURACY:
        record.evals.append(EvalRecord(e.metadata.get(mllog.EPOCH_NUM), e.value, e.line))
    elif e.key == mllog.EVAL_STOP:
        _eval_stop(record, windows, e)


def _eval_stop(record: TrialRecord, windows: _Windows, e: Event) -> None:
    if windows.eval_open is None:
        windows.unmatched += 1
    else:
        windows.eval_ms += e.time_ms - windows.eval_open
        windows.eval_open = None
    for ev in record.evals:
        if ev.epoch == e.metadata.get(mllog.EPOCH_NUM) and ev.stop_ms is None:
            ev.stop_ms, ev.stop_line = e.time_ms, e.line


def _times(record: TrialRecord, eval_ms: float, unmatched: int) -> None:
    if record.run_start_ms is None or record.run_stop is None:
        record.time_reason = "no run_start" if record.run_start_ms is None else "no run_stop"
        return
    if unmatched:
        record.time_reason = f"{unmatched} eval_start/eval_stop event(s) without their pair"
        return
    total_ms = record.run_stop.time_ms - record.run_start_ms
    record.total_time_s = total_ms / 1000
    record.eval_time_s = eval_ms / 1000
    record.train_time_s = (total_ms - eval_ms) / 1000


def _energies(record: TrialRecord, readings: dict[str, list[tuple[Any, int]]]) -> None:
    """Train and total energy from the cumulative meter readings, exactly as time from time_ms."""
    if not record.evals:
        record.energy_reason = "no epoch was logged"
        return
    for key, values in readings.items():
        for value, line in values:
            if _number(value) is None:
                summary = record.value(mllog.TRIAL_RESULT)
                said = summary.get("energy_reason") if isinstance(summary, dict) else None
                record.energy_reason = (f"{key}'s trainmark_energy_j is {value!r} (line {line}, energy method "
                                        f"{record.value(mllog.ENERGY_METHOD)!r})"
                                        + (f"; the harness says: {said}" if isinstance(said, str) and said else ""))
                return
    if len(readings[mllog.RUN_START]) != 1 or len(readings[mllog.RUN_STOP]) != 1 or \
            len(readings[mllog.EVAL_START]) != len(readings[mllog.EVAL_STOP]):
        record.energy_reason = "run or eval windows without their pair: energy not known"
        return
    total = float(readings[mllog.RUN_STOP][0][0]) - float(readings[mllog.RUN_START][0][0])
    evals = sum(float(b[0]) - float(a[0]) for a, b in zip(readings[mllog.EVAL_START], readings[mllog.EVAL_STOP]))
    record.total_energy_j = total
    record.train_energy_j = total - evals
