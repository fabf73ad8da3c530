"""Derive, don't ask: the result format and the telemetry record a rules version implies (issue 38).

The checks of a trial's telemetry hinge on two figures a submitter could rewrite: the result format version
(from format 2 on every trial must hold ``telemetry.csv``, TELEMETRY-004) and the sampling period (the row
count TELEMETRY-006 allows). Neither is taken from ``trial.json``:

- The result format comes from the rules version the logs declare. Format 2 added the implementation record
  and required telemetry; a rules version whose release ships the hashes of its code
  (``rules/<version>/reference-code.json``: 1.0 and 1.1) requires that record whatever format is claimed
  (CODE-013), so its results are format 2 or later. ``format_version`` in trial.json (or
  ``trainmark_format_version`` in the MLLOG) below that, or not an integer, is TRIALJSON-004; a claim above it
  can only add requirements.
- The period is one the harness writes: ``--telemetry-hz`` 1 to 100, so 0.01 s to 1 s. A trial of format 2 or
  later whose trial.json has no ``telemetry`` record, or a period outside that range, is TELEMETRY-008, and the
  checks then count rows at the slowest period (1 s: the fewest rows, the strictest bound). A claimed period
  shorter than the rows' is TELEMETRY-006 (checks/evidence_timeline.py).

What this cannot prove: the rules do not fix the period, so a forger who thins the rows and claims a longer
period alike is left to the MLLOG clock (TELEMETRY-006/007).
"""
from __future__ import annotations

from trainmark import RESULT_FORMAT_VERSION
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.format.telemetry import MAX_PERIOD_S, MIN_PERIOD_S
from trainmark.rules import reference_code
from trainmark.rules.ruleset import BenchmarkRules

FORMAT_WITH_TELEMETRY = 2   # the result format that added the implementation record and required telemetry.csv
FORMAT_WITH_EXACT_EPOCH_ROWS = 3  # the result format whose telemetry has a row at each epoch_stop's very millisecond

TRIALJSON_004 = rule(
    "TRIALJSON-004", ERROR, "the result format version claimed (trial.json's format_version or the logged "
    "trainmark_format_version) is not one the harness of the logged rules version writes",
    why="Which files a trial must hold (telemetry.csv from format 2 on) follows from its result format, and the "
    "format follows from the rules version: a release that ships its code hashes (rules 1.0, 1.1) requires the "
    "implementation record, which format 2 introduced. A claim of format 1, of 2.0 or none at all was edited to "
    "switch checks off. It cannot tell which harness wrote a folder of rules without released hashes.",
    fix="submit the trial.json and result file the harness wrote (format_version 2 or later for rules 1.0 and 1.1)",
    bad='"format_version": 1 in trial.json under rules 1.0, every telemetry.csv deleted',
    good='"format_version": 2 with each trial\'s telemetry.csv', module=__name__)
TELEMETRY_008 = rule(
    "TELEMETRY-008", ERROR, "trial.json lacks the telemetry record the harness writes, or states a period the "
    "harness never samples at (1 to 100 Hz)",
    why="From result format 2 on the harness records in trial.json the telemetry file it wrote and its period "
    "(--telemetry-hz 1 to 100: 0.01 to 1 s); the row-count check (TELEMETRY-006) depends on it. A record deleted or "
    "a period outside that range was edited to loosen the check; the rows are then counted at 1 s.",
    fix="submit the trial.json the harness wrote, with its telemetry record",
    bad='trial.json without "telemetry", or "period_s": 5',
    good='"telemetry": {"period_s": 1.0, ...} naming the trial\'s telemetry file', module=__name__)


def expected_format(rules: BenchmarkRules) -> int:
    """The lowest result format a harness of ``rules``' version writes: 2 where the release ships its code hashes
    (the record CODE-013 requires is format 2's), else 1 (rules folders without a release, as test copies)."""
    shipped = reference_code.hash_file(rules.version, rules.path.parent.parent).is_file()
    return FORMAT_WITH_TELEMETRY if shipped else 1


def check_format(trial: dict | None, events: list[Event], derived: int, trial_json_rel: str, result_rel: str,
                 findings: Findings) -> None:
    """TRIALJSON-004: each claimed format version (trial.json's, the logged one) an integer, from ``derived`` on."""
    claims = [(trial_json_rel, None, (trial or {}).get("format_version", "missing"))] if trial is not None else []
    logged = next((e for e in events if e.key == mllog.FORMAT_VERSION), None)
    if logged is not None:
        claims.append((result_rel, logged.line, logged.value))
    for rel, line, value in claims:
        if type(value) is not int or not derived <= value <= RESULT_FORMAT_VERSION:
            where = "the format_version of trial.json" if line is None else f"the logged {mllog.FORMAT_VERSION}"
            findings.add(TRIALJSON_004, rel, f"{where} is {value!r}; results of these rules are written in "
                         f"result format {derived} or later (the rules version the logs declare ships its code "
                         "hashes, so its results carry format 2's implementation record and telemetry)", line=line,
                         expected=f"an integer {derived}..{RESULT_FORMAT_VERSION}", seen=value)


def period(trial: dict | None, required: bool, trial_json_rel: str, findings: Findings) -> float | None:
    """The telemetry period the checks count rows at: trial.json's, where it is one the harness samples at; else
    (TELEMETRY-008 where the format requires telemetry) the slowest the harness allows, or None when no telemetry
    is required and none is claimed."""
    record = (trial or {}).get("telemetry") if isinstance(trial, dict) else None
    claimed = record.get("period_s") if isinstance(record, dict) else None
    if type(claimed) in (int, float) and MIN_PERIOD_S <= claimed <= MAX_PERIOD_S:
        return float(claimed)
    if not required:
        return None
    if trial is not None:
        said = "no telemetry record" if not isinstance(record, dict) else f"telemetry.period_s {claimed!r}"
        allowed = f"{MIN_PERIOD_S:g}..{MAX_PERIOD_S:g} s"
        findings.add(TELEMETRY_008, trial_json_rel, f"trial.json has {said}: a trial of result format 2 or later "
                     f"records its telemetry file and a period of {allowed} (1 to 100 Hz); the rows are counted at "
                     f"{MAX_PERIOD_S:g} s", expected=f"period_s {allowed}", seen=said)
    return MAX_PERIOD_S
