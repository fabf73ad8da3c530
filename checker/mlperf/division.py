"""The division of an MLPerf result is the system description's, never the log's (MLPERF-018, issue 38).

mlperf-logging's compliance checker chooses the closed or the open rules from the ``submission_division``
a result file logs, so a closed submission whose logs say "open" would have its closed-division checks
(hyperparameters, seeds, RCP) switched off by a word the submitter writes. The system description
(``systems/<system>.json``'s ``division``) is what the submission is filed under; a run that logs another
division is an error.

What this cannot prove: a system description that itself says "open" for a closed-division claim; the
folder's path (``closed/`` or ``open/``) is then what a reviewer reads.
"""
from __future__ import annotations

from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog
from trainmark.format.mllog_read import Event

KEYS = frozenset({mllog.SUBMISSION_DIVISION})  # all it reads

MLPERF_018 = rule(
    "MLPERF-018", ERROR, "a run logs a submission_division other than its system description's",
    why="mlperf-logging's compliance checker picks the closed or open rules from the log's submission_division, "
    "so a closed system whose logs say 'open' would escape the closed-division checks; the division is the "
    "system description's. It cannot tell a system description that names the wrong division itself.",
    fix="log submission_division as systems/<system>.json's division (mllog's constants, as the reference "
    "implementations do), or file the system under the division it ran",
    bad="systems/<system>.json says closed, the runs log submission_division 'open'",
    good="both say closed",
    module=__name__)


def check_logged_division(parsed: list[tuple[str, list[Event] | None]], division: str | None,
                          findings: Findings) -> None:
    """MLPERF-018 for every run whose ``submission_division`` differs from the system's ``division``."""
    if division not in ("closed", "open"):
        return  # the system description is unreadable or names none: the system checks say so
    for rel, events in parsed:
        for e in events or ():
            if e.key == mllog.SUBMISSION_DIVISION and e.value != division:
                findings.add(MLPERF_018, rel, f"the run logs submission_division {e.value!r}; its system "
                             f"description files it under {division!r}, whose rules apply", line=e.line,
                             expected=division, seen=e.value)
                break
