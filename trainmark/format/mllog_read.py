"""The hardened MLLOG reader: validated events out of untrusted bytes, every bad line reported.

mlperf-logging's own parser raises an uncaught ``KeyError`` (or ``TypeError``) on a
``:::MLLOG`` line whose JSON lacks ``time_ms``, ``key``, ``value`` or ``metadata`` or
is not an object, so every line is validated here first and only valid ones become
events. Line numbers are the file's (1-based).

Reading is linear in the file's size and bounds what a consumer gets (the compliance
engine is not linear: its ``strip_and_dedup`` runs ``re.sub(".*:::MLLOG ", ...)`` on every
record, quadratic in the record's length; one 300 KB value took 279 s). So a record longer
than its key's limit (``KEY_LIMITS``, a few times the longest real one), a file whose
records together exceed ``ENGINE_BUDGET`` (sum of squared lengths) or ``MAX_EVENTS``, a
repeated JSON key and a number outside ``NUMBER_RANGE`` are problems, and those records are
never returned.

A line that is not a valid record is handed to the caller's ``problem`` callback as a
``Problem`` (line, machine-readable ``kind``, message, expected, seen) as soon as it is met,
so that nothing but the caller decides what to keep of a file with a million bad lines; the
checker turns each kind into its finding code (trainmark.checker.read.mllog_read).
"""
from __future__ import annotations

import contextlib
import gc
import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from trainmark.format import mllog
from trainmark.format.text import clip

TOKEN = mllog.PREFIX
# Longest records seen (shared MLPerf Training v4.0 fixture and our submissions): trainmark_trial_result
# 924 characters, every other key <= 294.
DEFAULT_KEY_LIMIT = 2048
KEY_LIMITS = {mllog.TRIAL_RESULT: 8192, mllog.TELEMETRY: 4096}  # telemetry: about 2.5 KB on an 8-GPU node
MAX_LINE = max(DEFAULT_KEY_LIMIT, *KEY_LIMITS.values())  # checked before any JSON is parsed
# The engine's quadratic cost of a file is about sum(len(record)^2) character steps (~3 ns each, contended
# machine). Largest real files (every result_*.txt of mlcommons/training_results_v4.0 and v5.0, issue 31):
# v4.0 NVIDIA gpt3 (eos-dfw_n1452) 13,212 records and 5.6e8 squared characters, v5.0 NVIDIA llama31_405b
# (eos-dfw_n1024) 9,531 records and 3.4e8; both budgets leave 3.5x headroom over them and stay bounded per file
# (2e9 steps: a few seconds of engine regex at worst).
ENGINE_BUDGET = 2_000_000_000
MAX_EVENTS = 50_000
MAX_DEPTH = 32             # nesting of a record; deeper values would make repr() and the engine recurse
MAX_INT = 2 ** 64          # seeds are at most 64 bits; a larger integer overflows float() in scoring
TIME_MS_RANGE = (0.0, 1e15)  # milliseconds since 1970: up to the year 33658
EVENT_TYPES = ("POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END")

# Why a line is not an event (``Problem.kind``).
NOT_UTF8 = "not-utf8"                # strict files are UTF-8
NOT_A_RECORD = "not-a-record"        # a non-empty line of a strict file without the marker
MARKER_TWICE = "marker-twice"        # mlperf-logging would read from the second marker
LINE_TOO_LONG = "line-too-long"      # longer than MAX_LINE, rejected before parsing
INVALID_JSON = "invalid-json"        # not JSON, nested too deeply, not an object or missing a field
BAD_FIELD = "bad-field"              # time_ms, key, metadata or event_type of the wrong type
DUPLICATE_KEY = "duplicate-key"      # one JSON object names a key twice
BAD_NUMBER = "bad-number"            # an integer beyond 64 bits, or time_ms outside TIME_MS_RANGE
RECORD_TOO_LONG = "record-too-long"  # longer than its key's limit (KEY_LIMITS)
OVER_BUDGET = "over-budget"          # the file's records exceed MAX_EVENTS or ENGINE_BUDGET: the rest is unread
CRLF = "crlf"                        # strict files end lines with '\n' only
KINDS = (NOT_UTF8, NOT_A_RECORD, MARKER_TWICE, LINE_TOO_LONG, INVALID_JSON, BAD_FIELD, DUPLICATE_KEY, BAD_NUMBER,
         RECORD_TOO_LONG, OVER_BUDGET, CRLF)


@dataclass(frozen=True)
class Event:
    line: int           # 1-based line of the file
    text: str           # ':::MLLOG {...}' as the compliance engine reads it
    time_ms: float
    key: str
    value: Any
    metadata: dict
    event_type: str | None


def _event(line: int, text: str, time_ms: float, key: str, value: Any, metadata: dict, event_type: str | None) -> Event:
    """``Event(...)`` for a reader that builds a hundred thousand: the frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__``, twice the time of filling the new instance's ``__dict__`` at once. The same
    object: equal, hashed and shown alike, still frozen."""
    event = object.__new__(Event)
    event.__dict__.update(line=line, text=text, time_ms=time_ms, key=key, value=value, metadata=metadata,
                          event_type=event_type)
    return event


@dataclass(frozen=True)
class Problem:
    """One line that is not an event (or, for ``CRLF``, the first of the lines that end in CR LF)."""
    line: int
    kind: str           # one of KINDS
    message: str        # a sentence naming the line
    expected: str = ""
    seen: Any = ""      # the submitted text (clip it before showing it)


ProblemSink = Callable[[Problem], None]


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
    if len(text) < 20:  # at most 19 digits: below 10**19 < 2**64 (the common case, decided by one len)
        return int(text)
    digits = text.lstrip("-")
    value = int(text) if len(digits) <= 20 else None
    if value is None or abs(value) > MAX_INT:
        raise BadNumber(f"the integer {clip(text, 40)} ({len(digits)} digits) is beyond 64 bits")
    return value


STRICT_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_bounded_int)  # one, not one per line
BOUNDED_JSON = json.JSONDecoder(parse_int=_bounded_int)  # the short path's: repeated keys ruled out by counting


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


def _decode(payload: str) -> tuple[Any, str, str]:
    """(JSON value, why not, problem kind) of one record's text.

    ``raw_decode`` from the first character is what ``decode`` does for a record that neither starts nor ends with
    whitespace (the reader strips MLPerf lines), without the two whitespace matches and the wrapper around them
    (a quarter of a record's decoding time, measured). Anything else, an error included, goes through ``decode``,
    which names what is wrong as before. Both run the same scanner with the same hooks."""
    try:
        value, end = STRICT_JSON.raw_decode(payload)
        if end == len(payload):
            return value, "", ""
    except (ValueError, RecursionError, DuplicateKey, BadNumber):
        pass
    return _decode_strictly(payload)


def _decode_strictly(payload: str) -> tuple[Any, str, str]:
    """(JSON value, why not, problem kind) by ``JSONDecoder.decode``: the reason a record is not JSON."""
    try:
        return STRICT_JSON.decode(payload), "", ""
    except RecursionError:
        return None, "JSON nested too deeply", INVALID_JSON
    except DuplicateKey as exc:
        return None, str(exc), DUPLICATE_KEY
    except BadNumber as exc:
        return None, str(exc), BAD_NUMBER
    except ValueError as exc:
        if "integer string conversion" in str(exc) or "Exceeds the limit" in str(exc):
            return None, f"an integer with more digits than Python converts ({exc})", BAD_NUMBER
        return None, f"not valid JSON ({exc})", INVALID_JSON


def _shape(record: dict, payload: str, strict: bool) -> tuple[str, str]:
    """(why not, problem kind) when a decoded object is not a record; ("", "") when it is."""
    # integers were bounded while parsing; the walk is only needed where the text could nest too deep
    if payload.count("{") + payload.count("[") > MAX_DEPTH and nesting_depth(record) > MAX_DEPTH:
        return f"the JSON is nested more than {MAX_DEPTH} levels deep", INVALID_JSON
    for name in ("time_ms", "key", "value", "metadata"):
        if name not in record:
            return f"the record has no {name!r}", INVALID_JSON
    t = record["time_ms"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        return f"time_ms {clip(t, 60)} is not a finite number", BAD_FIELD
    low, high = TIME_MS_RANGE
    if not low <= t <= high:
        return f"time_ms {clip(t, 60)} is outside {low:.0f}..{high:.0e} (milliseconds since 1970)", BAD_NUMBER
    if not isinstance(record["key"], str) or not record["key"]:
        return f"key {clip(record['key'], 60)} is not a non-empty string", BAD_FIELD
    if not isinstance(record["metadata"], dict):
        return "metadata is not an object", BAD_FIELD
    if strict and record.get("event_type") not in EVENT_TYPES:
        return f"event_type {clip(record.get('event_type'), 60)} is not one of {', '.join(EVENT_TYPES)}", BAD_FIELD
    limit = KEY_LIMITS.get(record["key"], DEFAULT_KEY_LIMIT)
    if len(payload) + len(TOKEN) > limit:
        return (f"the {clip(record['key'], 60)} record has {len(payload) + len(TOKEN)} characters "
                f"(at most {limit} for this key)"), RECORD_TOO_LONG
    return "", ""


def _parse(payload: str, strict: bool) -> tuple[dict | None, str, str]:
    """(record, why not, problem kind) for one record's JSON text."""
    record, why, kind = _decode(payload)
    if kind:
        return None, why, kind
    if not isinstance(record, dict):
        return None, f"the JSON is a {type(record).__name__}, not an object", INVALID_JSON
    why, kind = _shape(record, payload, strict)
    return (None, why, kind) if kind else (record, "", "")


def _well_formed(payload: str, strict: bool) -> dict | None:
    """The record of a well-formed line by the shortest path, or None: then ``_parse`` decides and words it.

    Returns only a record ``_parse`` returns, equal to it: every test ``_shape`` makes, inlined for the common line
    (a third of the reader's time went to the calls). A float in TIME_MS_RANGE is finite.

    Decoded without the duplicate-key hook (a fifth of the reader's time): a repeated key is ruled out by counting.
    Every ``:`` in the text is an object's pair or sits inside a string, and a repeated key loses at least its own
    pair in decoding; so a text with exactly as many ``:`` as the pairs of the record, its metadata and its value
    (when that is an object) has no repeated key anywhere. Any other count (a colon inside a string, an object
    nested deeper) goes to ``_parse``, which decodes with the hook."""
    try:
        record, end = BOUNDED_JSON.raw_decode(payload)
    except (ValueError, RecursionError, BadNumber):
        return None
    if end != len(payload) or type(record) is not dict:
        return None
    t, key, metadata = record.get("time_ms"), record.get("key"), record.get("metadata")
    if not ((type(t) is float or type(t) is int) and TIME_MS_RANGE[0] <= t <= TIME_MS_RANGE[1]
            and type(key) is str and key and type(metadata) is dict and "value" in record
            and (not strict or record.get("event_type") in EVENT_TYPES)
            and len(payload) + len(TOKEN) <= KEY_LIMITS.get(key, DEFAULT_KEY_LIMIT)):
        return None
    value = record["value"]
    pairs = len(record) + len(metadata) + (len(value) if type(value) is dict else 0)
    if payload.count(":") == pairs and ("[" not in payload or payload.count("{") + payload.count("[") <= MAX_DEPTH):
        return record
    return None


def _ignore(problem: Problem) -> None:
    pass


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a file's records are built (or checked), then as it was.

    A file's records are up to MAX_EVENTS x a few small containers that live until the file is checked: the
    collector would walk them again and again, a tenth of ``trainmark check``'s CPU on an MLPerf round (measured
    with ``gc.callbacks``), and could free none of them, since a parsed record holds no cycle. Reference counting
    frees them as always; a cycle made meanwhile is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@collector_paused()
def read_records(data: bytes, *, strict: bool, problem: ProblemSink | None = None) -> list[Event]:
    """Valid events of an MLLOG file; every line that is not one goes to ``problem`` (dropped without one).

    ``strict`` (trainmark files): UTF-8, and every non-empty line is an MLLOG record.
    Otherwise (MLPerf files, which mix in shell output): decoded as Latin-1 like
    mlperf-logging does, and only lines containing ``:::MLLOG`` count, from its last
    occurrence on.
    """
    report = problem or _ignore
    events: list[Event] = []
    cost = 0
    for number, line in (_strict_lines(data, report) if strict else _mlperf_lines(data)):
        if len(line) > MAX_LINE:
            report(Problem(number, LINE_TOO_LONG, f"line {number} has {len(line)} characters (at most {MAX_LINE})",
                           f"at most {MAX_LINE} characters", f"{len(line)} characters"))
            continue
        payload = line[len(TOKEN):]
        record = _well_formed(payload, strict)
        if record is None:
            record, why, kind = _parse(payload, strict)
        if record is None:
            report(Problem(number, kind, f"line {number}: {why}",
                           '":::MLLOG " + a JSON object with time_ms, key, value, metadata', line))
            continue
        cost += len(line) ** 2
        if cost > ENGINE_BUDGET or len(events) >= MAX_EVENTS:
            report(Problem(number, OVER_BUDGET, f"records from line {number} on were not evaluated: the file's "
                           f"records exceed what the compliance engine is given ({MAX_EVENTS} records, "
                           f"{ENGINE_BUDGET:.1e} squared characters)",
                           f"at most {MAX_EVENTS} records of a few hundred characters", f"line {number}"))
            break
        events.append(_event(number, line, float(record["time_ms"]), record["key"], record["value"],
                             record["metadata"], record.get("event_type")))
    if strict and b"\r\n" in data:
        first, crlf = data[: data.index(b"\r\n")].count(b"\n") + 1, data.count(b"\r\n")
        report(Problem(first, CRLF, f"{crlf} line(s) end with CR LF (the first: line {first})",
                       "'\\n' line ends", "'\\r\\n'"))
    return events


def _strict_lines(data: bytes, report: ProblemSink) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-empty line; every one must be an MLLOG record."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            report(Problem(number, NOT_UTF8, f"line {number} is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                           "UTF-8 text", raw[:80]))
            continue
        if not line.strip():
            continue
        if not line.startswith(TOKEN):
            report(Problem(number, NOT_A_RECORD, f"line {number} is not an MLLOG record", ":::MLLOG {json}", line))
            continue
        if TOKEN in line[len(TOKEN):]:  # mlperf-logging would parse from the last one: a record inside a value
            report(Problem(number, MARKER_TWICE, f"line {number} holds ':::MLLOG ' twice; mlperf-logging would "
                           f"read the second as the record", "one ':::MLLOG ' per line", line))
            continue
        yield number, line


def _mlperf_lines(data: bytes) -> Iterator[tuple[int, str]]:
    """(line number, record text) the way mlperf-logging's parser cuts them out of a file."""
    text = data.decode("latin-1")
    if "\r" in text:  # universal newlines, as open() reads the file: '\r\n' and a lone '\r' end a line too
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    for number, line in enumerate(text.split("\n"), start=1):
        at = line.rfind(TOKEN)
        if at >= 0:
            yield number, line[at:].strip()
