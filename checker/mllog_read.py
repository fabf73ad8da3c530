"""Read an MLLOG file into validated events, one finding per line that is not one.

mlperf-logging's own parser raises an uncaught ``KeyError`` (or ``TypeError``) on a
``:::MLLOG`` line whose JSON lacks ``time_ms``, ``key``, ``value`` or ``metadata`` or
is not an object, so every line is validated here first and only valid ones reach its
compliance engine. Line numbers are the file's (1-based), not the engine's index.
"""
from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from typing import Any

from trainmark.checker.findings import Findings, clip

TOKEN = ":::MLLOG "
MAX_LINE = 1 << 20  # one MLLOG record is a few hundred bytes
MAX_DEPTH = 32      # nesting of a record; deeper values would make repr() and the engine recurse
EVENT_TYPES = ("POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END")


@dataclass(frozen=True)
class Event:
    line: int           # 1-based line of the file
    text: str           # ':::MLLOG {...}' as the compliance engine reads it
    time_ms: float
    key: str
    value: Any
    metadata: dict
    event_type: str | None


def nesting_depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed JSON value (iteratively: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_record(payload: str, strict: bool) -> tuple[dict | None, str]:
    """The JSON record of one line, or ``None`` and why it is not a valid one."""
    try:
        record = json.loads(payload)
    except RecursionError:
        return None, "JSON nested too deeply"
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
    if not isinstance(record, dict):
        return None, f"the JSON is a {type(record).__name__}, not an object"
    if nesting_depth(record) > MAX_DEPTH:
        return None, f"the JSON is nested more than {MAX_DEPTH} levels deep"
    for name in ("time_ms", "key", "value", "metadata"):
        if name not in record:
            return None, f"the record has no {name!r}"
    t = record["time_ms"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        return None, f"time_ms {clip(t, 60)} is not a finite number"
    if not isinstance(record["key"], str) or not record["key"]:
        return None, f"key {clip(record['key'], 60)} is not a non-empty string"
    if not isinstance(record["metadata"], dict):
        return None, "metadata is not an object"
    if strict and record.get("event_type") not in EVENT_TYPES:
        return None, f"event_type {clip(record.get('event_type'), 60)} is not one of {', '.join(EVENT_TYPES)}"
    return record, ""


def read_events(data: bytes, rel: str, findings: Findings, *, strict: bool) -> list[Event]:
    """Valid events of an MLLOG file; invalid lines become MLLOG-001 findings.

    ``strict`` (trainmark files): UTF-8, and every non-empty line is an MLLOG record.
    Otherwise (MLPerf files, which mix in shell output): decoded as Latin-1 like
    mlperf-logging does, and only lines containing ``:::MLLOG`` count, from its last
    occurrence on.
    """
    events: list[Event] = []
    for number, line in (_strict_lines(data, rel, findings) if strict else _mlperf_lines(data)):
        if len(line) > MAX_LINE:
            findings.add("MLLOG-001", rel, f"line {number} has {len(line)} characters (at most {MAX_LINE})",
                         line=number, expected=f"at most {MAX_LINE} characters", seen=f"{len(line)} characters")
            continue
        record, why = parse_record(line[len(TOKEN):], strict)
        if record is None:
            findings.add("MLLOG-001", rel, f"line {number}: {why}", line=number,
                         expected='":::MLLOG " + a JSON object with time_ms, key, value, metadata', seen=line)
            continue
        events.append(Event(number, line, float(record["time_ms"]), record["key"], record["value"],
                            record["metadata"], record.get("event_type")))
    return events


def _strict_lines(data: bytes, rel: str, findings: Findings):
    """(line number, text) of each non-empty line; every one must be an MLLOG record."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            findings.add("MLLOG-001", rel, f"line {number} is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                         line=number, expected="UTF-8 text", seen=raw[:80])
            continue
        if not line.strip():
            continue
        if not line.startswith(TOKEN):
            findings.add("MLLOG-001", rel, f"line {number} is not an MLLOG record", line=number,
                         expected=":::MLLOG {json}", seen=line)
            continue
        yield number, line


def _mlperf_lines(data: bytes):
    """(line number, record text) the way mlperf-logging's parser cuts them out of a file."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="latin-1")  # universal newlines, as open() does
    for number, line in enumerate(text, start=1):
        at = line.rfind(TOKEN)
        if at >= 0:
            yield number, line[at:].strip()
