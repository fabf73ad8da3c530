"""Do ``epochs.log`` and the MLLOG files tell the same story?

Same trials, same evaluated epochs, the same metric to the 4 decimals the text log
keeps, and each text timestamp (UTC, whole seconds, the end of the evaluation) within
``TIME_TOLERANCE_S`` of the MLLOG ``eval_stop`` of that epoch.
"""
from __future__ import annotations

import datetime as dt
import math

from trainmark.checker.checks.epochs import LoggedEpoch
from trainmark.checker.read.mllog_read import MLLOG_001
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import layout

AGREE_001 = rule(
    "AGREE-001", ERROR, "a trial is in one log but not in the other",
    fix="epochs.log and result_<k>.txt must describe the same trials",
    why="epochs.log and the MLLOG files are two records of the same trials; a trial in one only means a file was added "
    "or dropped. It cannot say which log is complete.",
    bad="epochs.log lists trial 5, no result_5.txt",
    good="trials 1..5 in both", module=__name__)
AGREE_002 = rule(
    "AGREE-002", ERROR, "a trial's evaluated epochs differ between the logs",
    fix="epochs.log must have one line for each eval_accuracy of the MLLOG",
    why="Each eval_accuracy of the MLLOG has one line in epochs.log; different epochs mean one log was edited. It "
    "proves the disagreement, not which log is true.",
    bad="MLLOG evaluates epochs 1..5, epochs.log lists 1..4",
    good="the same epochs in both", module=__name__)
AGREE_003 = rule(
    "AGREE-003", ERROR, "a metric value differs between the logs (4 decimals)",
    fix="log the same evaluation result in both files; never edit a log",
    why="Both logs record the same evaluation result; a value that differs at 4 decimals was edited in one of them. "
    "Agreement does not prove the value is the measured one (--reevaluate does).",
    bad="epochs.log 0.9200 where the MLLOG says 0.9134",
    good="0.9134 in both", module=__name__)
AGREE_004 = rule(
    "AGREE-004", ERROR, "a timestamp differs from the MLLOG eval_stop by more than the tolerance",
    fix="stamp each epochs.log line in UTC when its evaluation finished",
    why="Each epochs.log line is stamped (UTC, whole seconds) when its evaluation ended, so it lies within 2 s of the "
    "MLLOG's eval_stop; further off means one clock or log was edited. It cannot say which.",
    bad="a line stamped 10 minutes after its eval_stop",
    good="a line within 2 s of it", module=__name__)

TIME_TOLERANCE_S = 2.0


def check_agreement(text_lines: list[LoggedEpoch], text_rel: str, records: dict[int, TrialRecord],
                    findings: Findings, unreadable: list[int] = ()) -> None:
    """The two logs of each trial agree. ``unreadable``: the numbers of epochs.log's malformed lines (EPOCHLOG-001
    said so); a trial missing as many epochs as it has such lines beside its own is not AGREE-002 again."""
    by_trial: dict[int, list[LoggedEpoch]] = {}
    for item in text_lines:
        by_trial.setdefault(item.entry.trial, []).append(item)
    for trial in sorted(by_trial.keys() - records.keys()):
        first = by_trial[trial][0]
        name = layout.result_file(trial)
        findings.add(AGREE_001, text_rel, f"line {first.line}: trial {trial} has no readable {name}",
                     line=first.line, expected=name, seen=f"trial {trial} in {layout.EPOCHS_LOG} only")
    for trial in sorted(records.keys() - by_trial.keys()):
        rec = records[trial]
        findings.add(AGREE_001, rec.rel, f"trial {trial} has no line in epochs.log", line=rec.first_line,
                     expected=f"lines of trial {trial} in epochs.log", seen="none")
    trials = sorted(by_trial)
    for trial in sorted(records.keys() & by_trial.keys()):
        i = trials.index(trial)
        lo = by_trial[trials[i - 1]][-1].line if i else 0
        hi = by_trial[trials[i + 1]][0].line if i + 1 < len(trials) else float("inf")
        near = sum(lo < n < hi for n in unreadable)  # malformed lines between its neighbours' lines
        _compare_trial(by_trial[trial], records[trial], text_rel, findings, near)


def _compare_trial(lines: list[LoggedEpoch], record: TrialRecord, text_rel: str, findings: Findings,
                   unreadable_near: int = 0) -> None:
    text_epochs = [item.entry.epoch for item in lines]
    log_epochs = [ev.epoch for ev in record.evals]
    torn = sum(f.rule == MLLOG_001 and f.file == record.rel for f in findings)  # its MLLOG's unreadable lines
    explained = (unreadable_near and set(text_epochs) <= set(log_epochs)
                 and len(log_epochs) - len(text_epochs) <= unreadable_near) or \
        (torn and set(log_epochs) <= set(text_epochs) and len(text_epochs) - len(log_epochs) <= torn)
    if text_epochs != log_epochs and not explained:
        at = next((i for i, (a, b) in enumerate(zip(text_epochs, log_epochs)) if a != b),
                  min(len(text_epochs), len(log_epochs)))
        line = lines[min(at, len(lines) - 1)].line
        findings.add(AGREE_002, text_rel, f"line {line}: trial {record.trial} evaluated epochs {text_epochs} in "
                     f"epochs.log but {log_epochs} in {record.rel}", line=line, expected=log_epochs, seen=text_epochs)
    evals = {}
    for ev in record.evals:
        if type(ev.epoch) is int:
            evals.setdefault(ev.epoch, ev)
    for item in lines:
        ev = evals.get(item.entry.epoch)
        if ev is None:
            continue
        n = item.line
        acc = ev.accuracy
        if isinstance(acc, (int, float)) and not isinstance(acc, bool) and math.isfinite(acc):
            if f"{acc:.4f}" != f"{item.entry.metric:.4f}":
                findings.add(AGREE_003, text_rel, f"line {n}: trial {record.trial} epoch {item.entry.epoch} metric "
                             f"{item.entry.metric:.4f}, but {record.rel} line {ev.accuracy_line} has {acc!r}",
                             line=n, expected=f"{acc:.4f}", seen=f"{item.entry.metric:.4f}")
        if ev.stop_ms is not None:
            logged = math.floor(ev.stop_ms / 1000)
            text = item.entry.time.timestamp()
            if abs(text - logged) > TIME_TOLERANCE_S:
                findings.add(AGREE_004, text_rel, f"line {n}: trial {record.trial} epoch {item.entry.epoch} stamped "
                             f"{text - logged:+.0f} s from eval_stop on {record.rel} line {ev.stop_line} "
                             f"(tolerance {TIME_TOLERANCE_S:g} s, UTC)", line=n,
                             expected=_utc(logged), seen=f"{item.entry.time:%Y:%m:%d %H:%M:%S}")


def _utc(seconds: float) -> str:
    try:
        return dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc).strftime("%Y:%m:%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return f"{seconds:.0f} s since 1970"
