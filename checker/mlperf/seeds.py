"""MLPerf's seed rules for closed-division results, in our own code.

Specification: ``mlperf_logging.package_checker.seed_checker.SeedChecker``: every result
file parses and logs at least one ``seed`` record; each seed is an integer (``int()`` of the
value) with ``metadata.file`` and ``metadata.lineno``; no two runs log the same seed from the
same source line. A run logging more than one seed is only a warning there, and here.
"""
from __future__ import annotations

from dataclasses import dataclass

from trainmark.format.mllog_read import Event


@dataclass(frozen=True)
class SeedProblem:
    file: str
    line: int | None
    message: str
    error: bool = True


def _seed_records(events: list[Event]) -> tuple[list[tuple[object, object, int, int]], str]:
    """(source file, source line, seed, log line) of every seed record, or why one is unreadable."""
    found = []
    for event in events:
        if event.key != "seed":
            continue
        source, lineno = event.metadata.get("file"), event.metadata.get("lineno")
        if source is None or lineno is None:
            return [], f"line {event.line}: the seed record has no metadata.file and metadata.lineno"
        try:
            seed = int(event.value)
            hash((source, lineno))
        except (TypeError, ValueError, OverflowError):
            return [], f"line {event.line}: seed {event.value!r} from {source!r}:{lineno!r} is not an integer"
        found.append((source, lineno, seed, event.line))
    return found, ""


def seed_problems(runs: list[tuple[str, list[Event] | None]]) -> list[SeedProblem]:
    """What MLPerf's seed checker rejects in one benchmark folder's runs (``None``: the file did not parse)."""
    problems: list[SeedProblem] = []
    first_logged: dict[tuple, str] = {}
    for rel, events in runs:
        if events is None:
            problems.append(SeedProblem(rel, None, "the file does not parse, so its seeds cannot be read"))
            continue
        records, why = _seed_records(events)
        if why:
            problems.append(SeedProblem(rel, None, why))
            continue
        if not records:
            problems.append(SeedProblem(rel, None, "the run logs no seed"))
        if len(records) > 1:
            problems.append(SeedProblem(rel, records[1][3], f"the run logs {len(records)} seeds", error=False))
        for source, lineno, seed, line in records:  # a repeat within one run counts too, as in MLPerf
            key = (source, lineno, seed)
            if key in first_logged:
                problems.append(SeedProblem(rel, line, f"seed {seed} from {source}:{lineno} is the seed "
                                                       f"{first_logged[key]} already logs from the same line: "
                                                       f"each run needs its own seed"))
            else:
                first_logged[key] = f"{rel} (line {line})"
    return problems
