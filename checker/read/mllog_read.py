"""The checker's reading of an MLLOG file: the hardened reader's events, one finding per bad line.

The reading itself (bounds, validation, line numbers) is trainmark.format.mllog_read's; here
each ``Problem`` it reports becomes the finding of its kind, in the order the lines come.
"""
from __future__ import annotations

from trainmark.checker.verdict.codes import LIMIT_002, MLLOG_001, MLLOG_010, MLLOG_011, MLLOG_012, NUMBER_001
from trainmark.checker.verdict.findings import Findings
from trainmark.format import mllog_read as reader
from trainmark.format.mllog_read import Event

RULE_OF_KIND = {
    reader.NOT_UTF8: MLLOG_001, reader.NOT_A_RECORD: MLLOG_001, reader.MARKER_TWICE: MLLOG_001,
    reader.INVALID_JSON: MLLOG_001, reader.BAD_FIELD: MLLOG_001, reader.LINE_TOO_LONG: MLLOG_010,
    reader.RECORD_TOO_LONG: MLLOG_010, reader.DUPLICATE_KEY: MLLOG_011, reader.BAD_NUMBER: NUMBER_001,
    reader.OVER_BUDGET: LIMIT_002, reader.CRLF: MLLOG_012,
}


def read_events(data: bytes, rel: str, findings: Findings, *, strict: bool) -> list[Event]:
    """Valid events of an MLLOG file; each invalid line becomes its finding (MLLOG-001 and kin)."""
    def add(problem: reader.Problem) -> None:
        findings.add(RULE_OF_KIND[problem.kind], rel, problem.message, line=problem.line,
                     expected=problem.expected, seen=problem.seen)

    return reader.read_records(data, strict=strict, problem=add)
