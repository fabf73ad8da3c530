"""The compliance engine's failed tests, said in words with the line that proves them (issue 42).

The engine reports a failed test as its Python expression (``not s['reached']``); a reviewer needs what it
means and where: "the target was reached at epoch 4 (line 59) and the run went on". Each test of our
generated rules (mlperf/compliance_rules.py) that reads the engine's state is translated here, the state
itself replayed from the events (format/timeline_read.py); a test not listed keeps the engine's words.
"""
from __future__ import annotations

from trainmark.checker.mlperf.compliance_rules import TARGET_005
from trainmark.checker.mlperf.engine import EngineMessage
from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.format.timeline_read import Replay

NO_OPEN_WINDOW = "not s['in_epoch'] and not s['in_eval']"


def _open_at(replay: Replay, line: int) -> list[tuple[str, int]]:
    """(window, line it opened) of every epoch or eval window still open at ``line``."""
    return [(name, s.start.line) for name in ("epoch", "eval") for s in replay.spans[name]
            if s.start.line < line and (s.stop is None or s.stop.line > line)]


def _reached_line(messages: list[EngineMessage], events: list[Event]) -> Event | None:
    """The evaluation that reached the target: the one before the first evaluation the engine flags."""
    flagged = [m.line for m in messages if m.rule == TARGET_005 and m.line]
    if not flagged:
        return None
    before = [e for e in events if e.key == mllog.EVAL_ACCURACY and e.line < min(flagged)]
    return before[-1] if before else None


def explain(m: EngineMessage, events: list[Event], replay: Replay, messages: list[EngineMessage]
            ) -> tuple[str, str] | None:
    """(what failed, in words; what was expected, in words) for a tagged or state test, else None."""
    key, line = m.key or "log", m.line
    if m.test == "not s['reached']" and line:
        reached = _reached_line(messages, events)
        if reached is None:
            return None
        epoch = reached.metadata.get(mllog.EPOCH_NUM)
        return (f"the target was reached at epoch {epoch} (line {reached.line}) and the run went on: another "
                f"evaluation at line {line}", "the run stops at the first evaluation that reaches the target")
    if m.test == NO_OPEN_WINDOW and line:
        opened = _open_at(replay, line)
        if not opened:
            return None
        windows = ", ".join(f"{name} window opened at line {at}" for name, at in opened)
        return (f"{key} at line {line} inside an open {'/'.join(n for n, _ in opened)} window ({windows})",
                f"{key} after every epoch and evaluation window is closed")
    if m.test in ("s['in_eval']", "s['in_epoch']") and line:
        window = "evaluation" if "eval" in m.test else "epoch"
        return (f"{key} at line {line} outside an open {window} window",
                f"{key} only between its {window}'s start and stop")
    return None
