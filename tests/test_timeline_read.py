"""format/timeline_read.py is the one replay of a trial's windows (issue 42): what it pairs, and that no
other module of the package pairs eval_start with eval_stop."""
from __future__ import annotations

import ast

from test_architecture import ROOT, _package_files

from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.format.timeline_read import Replay

# Modules that may name both ends of the evaluation window: the keys' owner (mllog.WINDOWS is the writer's
# table), the writer, the replay, and the generator of the compliance engine's rule file (it states the
# order rules the engine enforces and reads no events).
ALLOWED = {"trainmark/format/mllog.py", "harness/timeline.py", "trainmark/format/timeline_read.py",
           "checker/mlperf/compliance_rules.py"}
ENDS = {"EVAL_START": "start", "EVAL_STOP": "stop", "eval_start": "start", "eval_stop": "stop"}


def _ends(node: ast.AST) -> set[str]:
    """Which ends of the eval window a scope names: the MLLOG key constants or their strings (docstrings
    and messages that mention both inside a longer text are not pairing)."""
    found = set()
    for n in ast.walk(node):
        name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else \
            n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else None
        if name in ENDS:
            found.add(ENDS[name])
    return found


def pairing_scopes(source: str) -> list[str]:
    """Functions (and module-level statements) that name both ends, or use the writer's window table."""
    tree = ast.parse(source)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    found = [f"{s.name}:{s.lineno}" for s in scopes if _ends(s) == {"start", "stop"}]
    found += [f"module:{n.lineno}" for n in top if _ends(n) == {"start", "stop"}]
    found += [f"WINDOWS:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "WINDOWS"]
    return found


def test_eval_windows_are_paired_only_by_the_replay_and_the_writer():
    offenders = []
    for path in _package_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel not in ALLOWED and (found := pairing_scopes(path.read_text(encoding="utf-8"))):
            offenders.append(f"{rel}: {', '.join(found)}")
    assert not offenders, "pair windows through trainmark.format.timeline_read.Replay:\n" + "\n".join(offenders)


def test_the_search_finds_a_second_pairing():
    """The old checks' shapes, each caught (so the test above could fail)."""
    by_constants = ("def windows(events):\n    for e in events:\n        if e.key == mllog.EVAL_START: a = e\n"
                    "        elif e.key == mllog.EVAL_STOP: yield a, e\n")
    by_table = "KEYS = {mllog.EVAL_START: 0, mllog.EVAL_STOP: 1}\n"
    by_writer_table = "def f(name):\n    return mllog.WINDOWS[name]\n"
    assert pairing_scopes(by_constants) == ["windows:1"]
    assert pairing_scopes(by_table) == ["module:1"]
    assert pairing_scopes(by_writer_table) == ["WINDOWS:2"]
    assert pairing_scopes('"""eval_start/eval_stop in a docstring"""\nx = 1\n') == []


def _event(line: int, key: str, t: float, epoch: int | None = None, value=None, energy: float | None = None):
    metadata = {} if epoch is None else {mllog.EPOCH_NUM: epoch}
    if energy is not None:
        metadata[mllog.ENERGY_J] = energy
    return Event(line, "", t, key, value, metadata, None)


def _trial(*windows: tuple[str, float, float, int]) -> list[Event]:
    """run_start at 0 ms and run_stop at 10,000 ms around the given (name, start, stop, epoch) windows."""
    events = [_event(1, mllog.RUN_START, 0, energy=0.0)]
    for name, start, stop, epoch in windows:
        start_key, stop_key = mllog.WINDOWS[name]
        events.append(_event(len(events) + 1, start_key, start, epoch, energy=start))
        if name == "eval":
            events.append(_event(len(events) + 1, mllog.EVAL_ACCURACY, stop, epoch, value=0.5 + epoch / 10))
        events.append(_event(len(events) + 1, stop_key, stop, epoch, energy=stop))
    return events + [_event(len(events) + 1, mllog.RUN_STOP, 10_000, energy=10_000.0)]


def test_the_headline_is_the_run_less_its_evaluations():
    replay = Replay(_trial(("epoch", 0, 4000, 1), ("eval", 4000, 5000, 1), ("epoch", 5000, 9000, 2),
                           ("eval", 9000, 9500, 2)))
    times = replay.run_time()
    assert (times.total_s, times.eval_s, times.train_s, times.reason) == (10.0, 1.5, 8.5, "")
    assert replay.run_energy() == (10_000.0, 8_500.0)
    assert [(p.span.epoch, p.train_s, p.train_j) for p in replay.eval_points()] == [(1, 4.0, 4000.0),
                                                                                    (2, 8.0, 8000.0)]


def test_an_eval_window_without_its_pair_refuses_the_headline():
    events = _trial(("eval", 4000, 5000, 1))
    events.insert(2, _event(2, mllog.EVAL_START, 3000, 1))  # opened twice: the first never closes
    replay = Replay(events)
    assert replay.unmatched("eval") == 1 and len(replay.closed("eval")) == 1
    assert replay.run_time().train_s is None
    assert replay.run_time().reason == "1 eval_start/eval_stop event(s) without their pair"
    orphan = Replay([*_trial(), _event(99, mllog.EVAL_STOP, 9999, 3)])
    assert orphan.unmatched("eval") == 1 and orphan.closed("eval") == []


def test_windows_by_epoch_keep_the_first_or_the_last():
    events = _trial(("epoch", 0, 4000, 1), ("epoch", 4000, 4100, 1), ("epoch", 5000, 9000, 2))
    replay = Replay(events)
    assert {e: s.seconds for e, s in replay.first_per_epoch("epoch").items()} == {1: 4.0, 2: 4.0}
    last = replay.last_per_epoch("epoch")
    assert [(e, a.time_ms, b.time_ms) for e, (a, b) in sorted(last.items())] == [(1, 4000, 4100), (2, 5000, 9000)]


def test_backwards_and_overlapping_windows_are_not_ordered():
    replay = Replay(_trial(("eval", 4000, 3000, 1), ("eval", 5000, 6000, 2), ("eval", 5500, 7000, 3)))
    assert replay.ordered("eval") == [(5000, 6000)]
