"""Read an MLLOG file into validated events, one finding per line that is not one.

mlperf-logging's own parser raises an uncaught ``KeyError`` (or ``TypeError``) on a
``:::MLLOG`` line whose JSON lacks ``time_ms``, ``key``, ``value`` or ``metadata`` or
is not an object, so every line is validated here first and only valid ones reach its
compliance engine. Line numbers are the file's (1-based), not the engine's index.

This pre-parse is linear in the file's size and bounds what the engine gets, because
the engine is not linear: its ``strip_and_dedup`` runs ``re.sub(".*:::MLLOG ", ...)``
on every record, quadratic in the record's length (one 300 KB value took 279 s). So a
record longer than its key's limit (``KEY_LIMITS``, a few times the longest real one),
a file whose records together exceed ``ENGINE_BUDGET`` (sum of squared lengths) or
``MAX_EVENTS``, a repeated JSON key and a number outside ``NUMBER_RANGE`` are findings,
and those records never reach the engine.
"""
from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from typing import Any

from trainmark.checker.verdict.codes import LIMIT_002, MLLOG_001, MLLOG_010, MLLOG_011, MLLOG_012, NUMBER_001
from trainmark.checker.verdict.findings import Findings, clip
from trainmark.format import mllog

TOKEN = ":::MLLOG "
# Longest records seen (shared MLPerf Training v4.0 fixture and our submissions, measured with
# benchmarks/checker_speed.py's fixture): trainmark_trial_result 924 characters, every other key <= 294.
DEFAULT_KEY_LIMIT = 2048
KEY_LIMITS = {mllog.TRIAL_RESULT: 8192}
MAX_LINE = max(DEFAULT_KEY_LIMIT, *KEY_LIMITS.values())  # checked before any JSON is parsed
# The engine's quadratic cost of a file is about sum(len(record)^2) character steps (~3 ns each, contended
# machine): the largest real file sums to 3e7; 2.5e8 is about a second of engine regex at worst.
ENGINE_BUDGET = 250_000_000
MAX_EVENTS = 20_000        # the largest real file has 499 records
MAX_DEPTH = 32             # nesting of a record; deeper values would make repr() and the engine recurse
MAX_INT = 2 ** 64          # seeds are at most 64 bits; a larger integer overflows float() in scoring
TIME_MS_RANGE = (0.0, 1e15)  # milliseconds since 1970: up to the year 33658
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


class DuplicateKey(Exception):
    pass


class BadNumber(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """``json.loads`` hook: a repeated key is an error (Python would silently keep the last value)."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise DuplicateKey(f"the key {clip(repeated, 60)!r} appears more than once in one object")
    return record


def _bounded_int(text: str) -> int:
    """``json.loads`` hook for integer literals: beyond 64 bits is a finding, decided before converting."""
    digits = text.lstrip("-")
    value = int(text) if len(digits) <= 20 else None
    if value is None or abs(value) > MAX_INT:
        raise BadNumber(f"the integer {clip(text, 40)} ({len(digits)} digits) is beyond 64 bits")
    return value


STRICT_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_bounded_int)  # one, not one per line


def nesting_depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed JSON value (iteratively: no recursion).

    Also raises ``BadNumber`` for an integer beyond 64 bits anywhere in the value.
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INT:
            raise BadNumber(f"the integer {clip(str(item), 40)} ({len(str(abs(item)))} digits) is beyond 64 bits")
    return deepest


def parse_record(payload: str, strict: bool) -> tuple[dict | None, str]:
    """The JSON record of one line, or ``None`` and why it is not a valid one."""
    record, why, _ = _parse(payload, strict)
    return record, why


def _parse(payload: str, strict: bool) -> tuple[dict | None, str, str]:
    """(record, why not, rule of the finding) for one record's JSON text."""
    try:
        record = STRICT_JSON.decode(payload)
    except RecursionError:
        return None, "JSON nested too deeply", MLLOG_001
    except DuplicateKey as exc:
        return None, str(exc), MLLOG_011
    except BadNumber as exc:
        return None, str(exc), NUMBER_001
    except ValueError as exc:
        if "integer string conversion" in str(exc) or "Exceeds the limit" in str(exc):
            return None, f"an integer with more digits than Python converts ({exc})", NUMBER_001
        return None, f"not valid JSON ({exc})", MLLOG_001
    if not isinstance(record, dict):
        return None, f"the JSON is a {type(record).__name__}, not an object", MLLOG_001
    # integers were bounded while parsing; the walk is only needed where the text could nest too deep
    if payload.count("{") + payload.count("[") > MAX_DEPTH and nesting_depth(record) > MAX_DEPTH:
        return None, f"the JSON is nested more than {MAX_DEPTH} levels deep", MLLOG_001
    for name in ("time_ms", "key", "value", "metadata"):
        if name not in record:
            return None, f"the record has no {name!r}", MLLOG_001
    t = record["time_ms"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        return None, f"time_ms {clip(t, 60)} is not a finite number", MLLOG_001
    low, high = TIME_MS_RANGE
    if not low <= t <= high:
        return None, f"time_ms {clip(t, 60)} is outside {low:.0f}..{high:.0e} (milliseconds since 1970)", NUMBER_001
    if not isinstance(record["key"], str) or not record["key"]:
        return None, f"key {clip(record['key'], 60)} is not a non-empty string", MLLOG_001
    if not isinstance(record["metadata"], dict):
        return None, "metadata is not an object", MLLOG_001
    if strict and record.get("event_type") not in EVENT_TYPES:
        return None, (f"event_type {clip(record.get('event_type'), 60)} is not one of "
                      f"{', '.join(EVENT_TYPES)}"), MLLOG_001
    limit = KEY_LIMITS.get(record["key"], DEFAULT_KEY_LIMIT)
    if len(payload) + len(TOKEN) > limit:
        return None, (f"the {clip(record['key'], 60)} record has {len(payload) + len(TOKEN)} characters "
                      f"(at most {limit} for this key)"), MLLOG_010
    return record, "", ""


def read_events(data: bytes, rel: str, findings: Findings, *, strict: bool) -> list[Event]:
    """Valid events of an MLLOG file; invalid lines become MLLOG-001 findings.

    ``strict`` (trainmark files): UTF-8, and every non-empty line is an MLLOG record.
    Otherwise (MLPerf files, which mix in shell output): decoded as Latin-1 like
    mlperf-logging does, and only lines containing ``:::MLLOG`` count, from its last
    occurrence on.
    """
    events: list[Event] = []
    cost = 0
    for number, line in (_strict_lines(data, rel, findings) if strict else _mlperf_lines(data)):
        if len(line) > MAX_LINE:
            findings.add(MLLOG_010, rel, f"line {number} has {len(line)} characters (at most {MAX_LINE})",
                         line=number, expected=f"at most {MAX_LINE} characters", seen=f"{len(line)} characters")
            continue
        record, why, rule = _parse(line[len(TOKEN):], strict)
        if record is None:
            findings.add(rule, rel, f"line {number}: {why}", line=number,
                         expected='":::MLLOG " + a JSON object with time_ms, key, value, metadata', seen=line)
            continue
        cost += len(line) ** 2
        if cost > ENGINE_BUDGET or len(events) >= MAX_EVENTS:
            findings.add(LIMIT_002, rel, f"records from line {number} on were not evaluated: the file's records "
                         f"exceed what the compliance engine is given ({MAX_EVENTS} records, "
                         f"{ENGINE_BUDGET:.1e} squared characters)", line=number,
                         expected=f"at most {MAX_EVENTS} records of a few hundred characters",
                         seen=f"line {number}")
            break
        events.append(Event(number, line, float(record["time_ms"]), record["key"], record["value"],
                            record["metadata"], record.get("event_type")))
    if strict and b"\r\n" in data:
        first, crlf = data[: data.index(b"\r\n")].count(b"\n") + 1, data.count(b"\r\n")
        findings.add(MLLOG_012, rel, f"{crlf} line(s) end with CR LF (the first: line {first})",
                     line=first, expected="'\\n' line ends", seen="'\\r\\n'")
    return events


def _strict_lines(data: bytes, rel: str, findings: Findings):
    """(line number, text) of each non-empty line; every one must be an MLLOG record."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            findings.add(MLLOG_001, rel, f"line {number} is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                         line=number, expected="UTF-8 text", seen=raw[:80])
            continue
        if not line.strip():
            continue
        if not line.startswith(TOKEN):
            findings.add(MLLOG_001, rel, f"line {number} is not an MLLOG record", line=number,
                         expected=":::MLLOG {json}", seen=line)
            continue
        if TOKEN in line[len(TOKEN):]:  # mlperf-logging would parse from the last one: a record inside a value
            findings.add(MLLOG_001, rel, f"line {number} holds ':::MLLOG ' twice; mlperf-logging would read the "
                         f"second as the record", line=number, expected="one ':::MLLOG ' per line", seen=line)
            continue
        yield number, line


def _mlperf_lines(data: bytes):
    """(line number, record text) the way mlperf-logging's parser cuts them out of a file."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="latin-1")  # universal newlines, as open() does
    for number, line in enumerate(text, start=1):
        at = line.rfind(TOKEN)
        if at >= 0:
            yield number, line[at:].strip()
