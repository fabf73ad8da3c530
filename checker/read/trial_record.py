"""One trial's figures, recomputed from its MLLOG events (never from a summary file).

train time = (run_stop - run_start) - sum of (eval_stop - eval_start), from ``time_ms``, as
trainmark.format.timeline_read replays the windows;
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
from trainmark.format.timeline_read import Replay
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


def extract_trial(events: list[Event], trial: int, rel: str, rules: BenchmarkRules | None) -> TrialRecord:
    record = TrialRecord(trial, rel, first_line=events[0].line if events else 1)
    for e in events:
        record.points.setdefault(e.key, Logged(e.value, e.line))
        if e.key == mllog.EVAL_ACCURACY:
            record.evals.append(EvalRecord(e.metadata.get(mllog.EPOCH_NUM), e.value, e.line))
    replay = Replay(events)
    record.run_start_ms = None if (start := replay.first("run")[0]) is None else start.time_ms
    record.run_stop = replay.first("run")[1]
    record.epochs_trained = replay.count("epoch")[1]
    record.init_time_s = replay.init_seconds()
    times = replay.run_time()
    record.total_time_s, record.eval_time_s, record.train_time_s = times.total_s, times.eval_s, times.train_s
    record.time_reason = times.reason
    _stops_of_evaluations(record, replay)
    _energies(record, replay)
    if record.evals:
        record.final_metric = _number(record.evals[-1].accuracy)
    record.converged = bool(rules is not None and record.final_metric is not None
                            and rules.reached(record.final_metric))
    return record


def _stops_of_evaluations(record: TrialRecord, replay: Replay) -> None:
    """Each eval_stop closes the evaluations of its epoch logged before it and not yet closed."""
    for e in replay.split("eval")[1]:
        for ev in record.evals:
            if ev.accuracy_line > e.line:
                break
            if ev.epoch == e.metadata.get(mllog.EPOCH_NUM) and ev.stop_ms is None:
                ev.stop_ms, ev.stop_line = e.time_ms, e.line


def _energies(record: TrialRecord, replay: Replay) -> None:
    """Train and total energy from the cumulative meter readings, exactly as time from time_ms."""
    if not record.evals:
        record.energy_reason = "no epoch was logged"
        return
    for group in (*replay.split("run"), *replay.split("eval")):
        for e in group:
            value = e.metadata.get(mllog.ENERGY_J)
            if _number(value) is None:
                summary = record.value(mllog.TRIAL_RESULT)
                said = summary.get("energy_reason") if isinstance(summary, dict) else None
                record.energy_reason = (f"{e.key}'s trainmark_energy_j is {value!r} (line {e.line}, energy method "
                                        f"{record.value(mllog.ENERGY_METHOD)!r})"
                                        + (f"; the harness says: {said}" if isinstance(said, str) and said else ""))
                return
    record.total_energy_j, record.train_energy_j = replay.run_energy()
    if record.total_energy_j is None:
        record.energy_reason = "run or eval windows without their pair: energy not known"
