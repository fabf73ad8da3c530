"""Check ``epochs.log`` line by line: format, trial and epoch order, time, metric range.

The format itself belongs to ``trainmark.format.epochlog`` (the harness writes with
it); this module only adds what one line cannot know: the order of the lines and the
rules' metric range. A hostile file is read in bounded time: at most ``MAX_LINES`` lines,
and nothing after the ``MAX_MALFORMED``-th malformed one (EPOCHLOG-007 counts the rest),
found one at a time so that a 64 MiB file of empty lines is never split into 32 million
pieces.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from trainmark.checker.verdict.codes import (
    EPOCHLOG_001,
    EPOCHLOG_002,
    EPOCHLOG_003,
    EPOCHLOG_004,
    EPOCHLOG_005,
    EPOCHLOG_006,
    EPOCHLOG_007,
)
from trainmark.checker.verdict.findings import Findings
from trainmark.format import epochlog
from trainmark.rules.ruleset import BenchmarkRules

MAX_LINE = 4096  # a valid line has under 60 characters
MAX_LINES = 10_000    # the largest rules allow 10 trials of 90 epochs: 900 lines
MAX_MALFORMED = 100   # after this many malformed lines the file is not a log the harness wrote


@dataclass(frozen=True)
class LoggedEpoch:
    line: int
    entry: epochlog.EpochLine


def check_epochs_log(data: bytes, rel: str, rules: BenchmarkRules | None, findings: Findings) -> list[LoggedEpoch]:
    """The parsed lines of ``epochs.log`` (also those out of order); problems become findings."""
    if not data:
        findings.add(EPOCHLOG_006, rel, "epochs.log is empty", expected="one line per evaluated epoch",
                     seen="0 bytes")
        return []
    total = data.count(b"\n") + (not data.endswith(b"\n"))
    if not data.endswith(b"\n"):
        findings.add(EPOCHLOG_006, rel, f"the last line ({total}) has no newline: truncated file?",
                     line=total, expected="every line ends with '\\n'", seen=data[-60:].rpartition(b"\n")[2])
    parsed: list[LoggedEpoch] = []
    malformed = read = 0
    for number, raw in _lines(data):
        if number > MAX_LINES or malformed >= MAX_MALFORMED:
            break
        read = number
        entry = _parse(raw, number, rel, rules, findings)
        if entry is None:
            malformed += 1
        else:
            parsed.append(LoggedEpoch(number, entry))
    if read < total:
        _report_unread(rel, read, total, malformed, findings)
    _check_order(parsed, rel, rules, findings)
    return parsed


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based number, bytes without the newline) of each line, found one at a time (linear, lazy)."""
    start, number, end = 0, 0, len(data)
    while start < end:
        newline = data.find(b"\n", start)
        stop = end if newline < 0 else newline
        number += 1
        yield number, data[start:stop]
        start = stop + 1


def _report_unread(rel: str, read: int, total: int, malformed: int, findings: Findings) -> None:
    why = (f"{malformed} malformed lines" if malformed >= MAX_MALFORMED else f"the first {MAX_LINES} lines")
    limit = f"at most {MAX_MALFORMED} malformed lines" if malformed >= MAX_MALFORMED else f"at most {MAX_LINES} lines"
    findings.add(EPOCHLOG_007, rel, f"stopped after line {read} ({why}): {total - read} more line(s) not read",
                 line=read + 1, expected=limit, seen=f"{total} lines")


def _parse(raw: bytes, number: int, rel: str, rules: BenchmarkRules | None, findings: Findings):
    expected = "[yyyy:MM:dd HH:mm:ss] \u2013 [trial] \u2013 [epoch] \u2013 [metric]"
    if len(raw) > MAX_LINE:
        findings.add(EPOCHLOG_001, rel, f"line {number} has {len(raw)} bytes", line=number,
                     expected=f"at most {MAX_LINE} bytes", seen=raw[:80])
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        findings.add(EPOCHLOG_001, rel, f"line {number} is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                     line=number, expected="UTF-8", seen=raw[:80])
        return None
    try:
        entry = epochlog.parse_line(text)
    except ValueError as exc:
        rule = EPOCHLOG_005 if "finite" in str(exc) else EPOCHLOG_001
        findings.add(rule, rel, f"line {number}: {exc}", line=number, expected=expected, seen=text)
        return None
    if rules is not None:
        lo, hi = rules.metric["range"]
        if (lo is not None and entry.metric < lo) or (hi is not None and entry.metric > hi):
            findings.add(EPOCHLOG_005, rel, f"line {number}: {rules.metric['name']} {entry.metric} outside "
                         f"its range", line=number, expected=f"within [{lo}, {hi}]", seen=entry.metric)
    return entry


def _check_order(parsed: list[LoggedEpoch], rel: str, rules: BenchmarkRules | None, findings: Findings) -> None:
    every = int(rules.evaluation["every_epochs"]) if rules is not None else 1
    last_epoch = int(rules.max_epochs) if rules is not None else None  # always evaluated, as the harness does
    finished: set[int] = set()
    current: int | None = None
    last: LoggedEpoch | None = None
    for item in parsed:
        e, n = item.entry, item.line
        if e.trial != current:
            if e.trial < 1:
                findings.add(EPOCHLOG_002, rel, f"line {n}: trial {e.trial} (trials count from 1)", line=n,
                             expected="trial >= 1", seen=e.trial)
            elif e.trial in finished:
                findings.add(EPOCHLOG_002, rel, f"line {n}: trial {e.trial} appears again after trial {current}",
                             line=n, expected="each trial's lines together, once", seen=f"trial {e.trial} again")
            elif e.trial != (current or 0) + 1:
                findings.add(EPOCHLOG_002, rel, f"line {n}: trial {e.trial} follows trial {current or 'none'}",
                             line=n, expected=f"trial {(current or 0) + 1}", seen=f"trial {e.trial}")
            if current is not None:
                finished.add(current)
            current, last = e.trial, None
        want = every if last is None else last.entry.epoch + every
        if last_epoch is not None and (last is None or last.entry.epoch < last_epoch):
            want = min(want, last_epoch)
        if e.epoch != want:
            findings.add(EPOCHLOG_003, rel, f"line {n}: trial {e.trial} epoch {e.epoch} where epoch {want} belongs",
                         line=n, expected=f"epoch {want}", seen=f"epoch {e.epoch}")
        if last is not None and e.time < last.entry.time:
            findings.add(EPOCHLOG_004, rel, f"line {n}: time goes back within trial {e.trial} "
                         f"(line {last.line} has {last.entry.time:%Y:%m:%d %H:%M:%S})", line=n,
                         expected=f">= {last.entry.time:%Y:%m:%d %H:%M:%S}", seen=f"{e.time:%Y:%m:%d %H:%M:%S}")
        last = item
