"""The checker's reading of an MLLOG file: the hardened reader's events, one finding per bad line.

The reading itself (bounds, validation, line numbers) is trainmark.format.mllog_read's; here
each ``Problem`` it reports becomes the finding of its kind, in the order the lines come.
"""
from __future__ import annotations

from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.format import mllog_read as reader
from trainmark.format.mllog_read import Event

LIMIT_002 = rule(
    "LIMIT-002", ERROR, "an MLLOG file too large in total for the compliance engine (not evaluated)",
    fix="submit the file the harness wrote: its records are a few hundred characters each",
    why="mlperf-logging's compliance engine holds a whole file in memory and its time grows with the file; a file too "
    "large for it is not evaluated at all, so nothing in it is proven compliant. The cap is far above what a real run "
    "writes.",
    bad="a result_1.txt of millions of repeated records",
    good="the result_1.txt the harness wrote", module=__name__)
MLLOG_001 = rule(
    "MLLOG-001", ERROR, "a line is not a valid MLLOG record",
    fix="every line is ':::MLLOG {json}' with time_ms, key, value and metadata, as mlperf_logging.mllog writes it",
    why="Every event the score is computed from comes from a ':::MLLOG {json}' line; a line that is not one cannot be "
    "read, and the timeline around it is incomplete. It proves the line is malformed, not what it should have said.",
    bad=":::MLLOG {\"key\": \"run_start\", \"time_ms\": 17",
    good=":::MLLOG {\"namespace\": \"\", \"time_ms\": 1700000000000, \"event_type\": \"INTERVAL_START\", \"key\": "
    "\"run_start\", \"value\": null, \"metadata\": {...}}", module=__name__)
MLLOG_010 = rule(
    "MLLOG-010", ERROR, "an MLLOG record is longer than the checker accepts (not evaluated)",
    fix="log values of the size the harness writes; long records make mlperf-logging's parser quadratic",
    why="mlperf-logging's parser is quadratic in a record's length, so an overlong record could stall the check; it is "
    "refused unevaluated. It proves only the length.",
    bad="a record whose value is a 5 MB string",
    good="records of a few hundred characters", module=__name__)
MLLOG_011 = rule(
    "MLLOG-011", ERROR, "an MLLOG record repeats a JSON key",
    fix="write each record with mlperf_logging.mllog: one value per key",
    why="JSON with a repeated key is ambiguous (parsers keep the first or the last value), so two readers could see "
    "two different runs; such a record is refused. It cannot say which value was logged first.",
    bad="{\"key\": \"run_stop\", \"value\": null, \"value\": 3}",
    good="each key once per record", module=__name__)
MLLOG_012 = rule(
    "MLLOG-012", WARNING, "an MLLOG line ends with CR LF",
    fix="write the file with '\\n' line ends, as mlperf_logging.mllog does",
    why="mllog writes '\\n' line ends; CR LF means the file went through another tool (an editor, a Windows copy), so "
    "it may have been edited. A warning: the records are still read.",
    bad="result_1.txt saved with CR LF line ends",
    good="result_1.txt as the harness wrote it ('\\n')", module=__name__)
NUMBER_001 = rule(
    "NUMBER-001", ERROR, "a number outside the range the checker accepts (record not evaluated)",
    fix="log time_ms as milliseconds since the epoch and integers within 64 bits",
    why="Times and counts outside the accepted range (not milliseconds since the epoch, integers beyond 64 bits) would "
    "overflow or distort the recomputed figures; such a record is not evaluated. It proves the number is implausible, "
    "not what the real one was.",
    bad="\"time_ms\": 1e300",
    good="\"time_ms\": 1700000000000", module=__name__)

RULE_OF_KIND = {
    reader.NOT_UTF8: MLLOG_001, reader.NOT_A_RECORD: MLLOG_001, reader.MARKER_TWICE: MLLOG_001,
    reader.INVALID_JSON: MLLOG_001, reader.BAD_FIELD: MLLOG_001, reader.LINE_TOO_LONG: MLLOG_010,
    reader.RECORD_TOO_LONG: MLLOG_010, reader.DUPLICATE_KEY: MLLOG_011, reader.BAD_NUMBER: NUMBER_001,
    reader.OVER_BUDGET: LIMIT_002, reader.CRLF: MLLOG_012,
}


def read_events(data: bytes, rel: str, findings: Findings, *, strict: bool) -> list[Event]:
    """Valid events of an MLLOG file; each invalid line becomes its finding (MLLOG-001 and kin)."""
    def add(problem: reader.Problem) -> None:
        then = " (its record is then missing: a key count it breaks is not reported again)" \
            if problem.kind == reader.INVALID_JSON else ""
        findings.add(RULE_OF_KIND[problem.kind], rel, problem.message + then, line=problem.line,
                     expected=problem.expected, seen=problem.seen)

    return reader.read_records(data, strict=strict, problem=add)
