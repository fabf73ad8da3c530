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

from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import epochlog
from trainmark.rules.ruleset import BenchmarkRules

EPOCHLOG_001 = rule(
    "EPOCHLOG-001", ERROR, "a line of epochs.log is malformed",
    fix="each line is '[yyyy:MM:dd HH:mm:ss] – [trial] – [epoch] – [metric]', UTF-8, '\\n' ends; write it with "
    "trainmark.format.epochlog.format_line",
    why="epochs.log is the human-readable twin of the MLLOG; a malformed line cannot be compared with it. It proves "
    "the line's form is wrong, not its content.",
    bad="[2026:01:02 10:00:00] - [1] - [1] - [0.91] (hyphens)",
    good="[2026:01:02 10:00:00] – [1] – [1] – [0.9100] (en dashes)", module=__name__)
EPOCHLOG_002 = rule(
    "EPOCHLOG-002", ERROR, "trial numbers are not positive, contiguous and in order",
    fix="log trials 1, 2, 3, ... one after the other, each trial's lines together",
    why="Trials are run 1, 2, 3, ... and each trial's lines are written together; any other order means lines were "
    "moved or merged. It cannot say which trial a stray line came from.",
    bad="trial 2's lines before trial 1's",
    good="trial 1's lines, then trial 2's", module=__name__)
EPOCHLOG_003 = rule(
    "EPOCHLOG-003", ERROR, "epoch numbers within a trial are not 1, 2, 3, ...",
    fix="log every evaluated epoch once, counting from 1",
    why="Each trial evaluates epochs 1, 2, 3, ...; a gap or repeat means a line was removed or copied. It proves the "
    "sequence is broken, not which line is missing.",
    bad="epochs 1, 2, 4 of trial 1",
    good="epochs 1, 2, 3", module=__name__)
EPOCHLOG_004 = rule(
    "EPOCHLOG-004", ERROR, "a timestamp goes back within a trial",
    fix="log each line when its evaluation finished, from one UTC clock",
    why="Lines are stamped when their evaluation ends, from one clock, so within a trial time only goes forward; going "
    "back means an edited stamp. It cannot tell which of the two stamps is wrong.",
    bad="epoch 2 stamped before epoch 1",
    good="stamps in order", module=__name__)
EPOCHLOG_005 = rule(
    "EPOCHLOG-005", ERROR, "a metric is not a finite number in the metric's range",
    fix="log the metric the rules name, as a finite number inside its range",
    why="The metric must be a finite number inside the rules' range (0..1 for accuracy); anything else cannot be a "
    "real evaluation. It cannot prove an in-range value is the measured one (AGREE-003 and --reevaluate do).",
    bad="[nan] or [1.7] for top1_accuracy",
    good="[0.9134]", module=__name__)
EPOCHLOG_006 = rule(
    "EPOCHLOG-006", ERROR, "epochs.log is empty or truncated",
    fix="copy the complete file; every line ends with '\\n'",
    why="An empty file or one without its final '\\n' was cut short (a partial copy); the trials after the cut are "
    "missing. It proves truncation, not what was lost.",
    bad="epochs.log of 0 bytes",
    good="every line ending with '\\n'", module=__name__)
EPOCHLOG_007 = rule(
    "EPOCHLOG-007", ERROR, "epochs.log has more lines, or more malformed lines, than the checker reads (the rest is "
    "not read)",
    fix="submit the file the harness wrote: one line per evaluated epoch, a few hundred lines at most",
    why="The file is read in bounded time: at most a fixed number of lines and malformed lines; the rest is not read, "
    "so nothing in it is verified. A real log has a few hundred lines at most.",
    bad="a 64 MiB epochs.log of empty lines",
    good="one line per evaluated epoch", module=__name__)

MAX_LINE = 4096  # a valid line has under 60 characters
MAX_LINES = 10_000    # the largest rules allow 10 trials of 90 epochs: 900 lines
MAX_MALFORMED = 100   # after this many malformed lines the file is not a log the harness wrote


@dataclass(frozen=True)
class LoggedEpoch:
    line: int
    entry: epochlog.EpochLine


def check_epochs_log(data: bytes, rel: str, rules: BenchmarkRules | None, findings: Findings,
                     unreadable: list[int] | None = None) -> list[LoggedEpoch]:
    """The parsed lines of ``epochs.log`` (also those out of order); problems become findings.

    One fault, one finding: a malformed line (EPOCHLOG-001) leaves its epoch out of its trial, and the gap it
    leaves is not reported again (EPOCHLOG-003 here, AGREE-002 by the agreement check, which is handed the
    malformed lines' numbers through ``unreadable``)."""
    if not data:
        findings.add(EPOCHLOG_006, rel, "epochs.log is empty", expected="one line per evaluated epoch",
                     seen="0 bytes")
        return []
    total = data.count(b"\n") + (not data.endswith(b"\n"))
    if not data.endswith(b"\n"):
        findings.add(EPOCHLOG_006, rel, f"the last line ({total}) has no newline: truncated file?",
                     line=total, expected="every line ends with '\\n'", seen=data[-60:].rpartition(b"\n")[2])
    parsed: list[LoggedEpoch] = []
    skipped = unreadable if unreadable is not None else []
    malformed = read = 0
    for number, raw in _lines(data):
        if number > MAX_LINES or malformed >= MAX_MALFORMED:
            break
        read = number
        entry = _parse(raw, number, rel, rules, findings)
        if entry is None:
            malformed += 1
            skipped.append(number)
        else:
            parsed.append(LoggedEpoch(number, entry))
    if read < total:
        _report_unread(rel, read, total, malformed, findings)
    _check_order(parsed, rel, rules, findings, set(skipped))
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
        then = "" if rule == EPOCHLOG_005 else (" (its epoch is then missing from its trial; the gap is not "
                                                 "reported again)")
        findings.add(rule, rel, f"line {number}: {exc}{then}", line=number, expected=expected, seen=text)
        return None
    if rules is not None:
        lo, hi = rules.metric["range"]
        if (lo is not None and entry.metric < lo) or (hi is not None and entry.metric > hi):
            findings.add(EPOCHLOG_005, rel, f"line {number}: {rules.metric['name']} {entry.metric} outside "
                         f"its range", line=number, expected=f"within [{lo}, {hi}]", seen=entry.metric)
    return entry


def _check_order(parsed: list[LoggedEpoch], rel: str, rules: BenchmarkRules | None, findings: Findings,
                 skipped: set[int] = frozenset()) -> None:
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
        after = last.line if last is not None else 0
        if e.epoch != want and not any(after < s < n for s in skipped):  # a malformed line's gap: said once
            findings.add(EPOCHLOG_003, rel, f"line {n}: trial {e.trial} epoch {e.epoch} where epoch {want} belongs",
                         line=n, expected=f"epoch {want}", seen=f"epoch {e.epoch}")
        if last is not None and e.time < last.entry.time:
            findings.add(EPOCHLOG_004, rel, f"line {n}: time goes back within trial {e.trial} "
                         f"(line {last.line} has {last.entry.time:%Y:%m:%d %H:%M:%S})", line=n,
                         expected=f">= {last.entry.time:%Y:%m:%d %H:%M:%S}", seen=f"{e.time:%Y:%m:%d %H:%M:%S}")
        last = item
