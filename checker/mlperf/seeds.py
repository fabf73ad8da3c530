"""MLPerf's seed rules for closed-division results, in our own code.

Specification: ``mlperf_logging.package_checker.seed_checker.SeedChecker``: every result
file parses and logs at least one ``seed`` record; each seed is an integer (``int()`` of the
value) with ``metadata.file`` and ``metadata.lineno``; no two runs log the same seed from the
same source line. A run logging more than one seed is only a warning there, and here.

Before Training 4.1.0 a folder in which no run logs a seed passed: mlperf-logging required a
seed in every run only from its 4.1.0 release (commit ac0096c, 2024-09-13, first in tag
4.1.0-rc4; 4.1.68 applies it to every ruleset). The checkers of the v3.1 and v4.0 rounds
required seeds in every run only once one run logged one, and that is the rule here for
rulesets before 4.1.0: the closed dlrm_dcnv2 folders of both rounds (HugeCTR logs its seed
as text, not through mllog) were published that way, with no seed-checker-bypass. (Their
code also skipped unseeded runs sorted before the first seeded one; here every unseeded run
counts once any run logs a seed.)
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


KEYS = frozenset({"seed"})  # all it reads
EVERY_RUN_FROM = (4, 1, 0)   # the ruleset from which every run must log a seed (see above)


def seed_problems(runs: list[tuple[str, list[Event] | None]], ruleset: str | None = None) -> list[SeedProblem]:
    """What MLPerf's seed checker rejects in one benchmark folder's runs (``None``: the file did not parse)
    under the Training ``ruleset`` (None: the newest rules)."""
    problems: list[SeedProblem] = []
    first_logged: dict[tuple, str] = {}
    read = [(rel, None if events is None else _seed_records(events)) for rel, events in runs]
    every_run = ruleset is None or tuple(int(x) for x in ruleset.split(".")) >= EVERY_RUN_FROM
    some_run = any(found is not None and found[0] for _, found in read)
    if not every_run and not some_run and read and all(found is not None and not found[1] for _, found in read):
        return [SeedProblem(read[0][0], None, f"no run logs a seed: accepted before MLPerf Training 4.1.0 "
                                              f"(ruleset {ruleset})", error=False)]
    for rel, found in read:
        if found is None:
            problems.append(SeedProblem(rel, None, "the file does not parse, so its seeds cannot be read"))
            continue
        records, why = found
        if why:
            problems.append(SeedProblem(rel, None, why))
            continue
        if not records and (every_run or some_run):
            problems.append(SeedProblem(rel, None, "the run logs no seed" if every_run else
                                        f"the run logs no seed while other runs do (ruleset {ruleset})"))
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
