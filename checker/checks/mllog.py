"""Findings for one trainmark MLLOG file: the engine's messages, and what it cannot see.

The generated compliance rules (``trainmark.checker.mlperf.compliance_rules``) judge each file alone.
This module adds the checks that need the file's place in the tree (trial number,
folder names) or arithmetic over the whole file (time order, the logged summary).
"""
from __future__ import annotations

import math
import posixpath
import re
from typing import Any

from trainmark import RESULT_FORMAT_VERSION
from trainmark.checker.checks import compliance_words
from trainmark.checker.checks.judgement import Judgement
from trainmark.checker.mlperf.compliance_configs import refused_findings
from trainmark.checker.mlperf.engine import EngineResult
from trainmark.checker.read.evidence import Attempt, BenchmarkEvidence
from trainmark.checker.read.mllog_read import MLLOG_001
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.format import layout, mllog
from trainmark.format.mllog_read import Event
from trainmark.format.timeline_read import Replay

MLLOG_002 = rule(
    "MLLOG-002", ERROR, "a key occurs too few or too many times",
    fix="log each key as often as the compliance rules require (see the message)",
    why="The compliance rules require keys a fixed number of times (one run_start, one run_stop, one value per "
    "hyperparameter); too few or too many means the timeline cannot be read unambiguously. It cannot say which "
    "occurrence is the true one.",
    bad="two run_stop records",
    good="one run_start and one run_stop", module=__name__)
MLLOG_003 = rule(
    "MLLOG-003", ERROR, "a compliance check on a logged event failed",
    fix="log the event with the value, metadata and order the compliance rules require (see the failed test)",
    why="The generated compliance rules test each event's value, metadata and order (a finite metric in range, "
    "evaluation every epoch, init within its limit); a failed test means the event is not what the rules require. The "
    "message names the test and line; it cannot say why the run logged it.",
    bad="eval_accuracy with value NaN",
    good="eval_accuracy with a finite value inside the metric's range", module=__name__)
MLLOG_004 = rule(
    "MLLOG-004", ERROR, "trainmark_trial disagrees with the file's trial number",
    fix="result_<k>.txt must log trainmark_trial = k; each trial has one file",
    why="Each result_<k>.txt holds trial k; a file whose trainmark_trial is another number was renamed or copied. It "
    "proves the mismatch, not where the file came from.",
    bad="result_2.txt logging trainmark_trial 3",
    good="result_2.txt logging trainmark_trial 2", module=__name__)
MLLOG_005 = rule(
    "MLLOG-005", ERROR, "event times go back",
    fix="take time_ms of every event from one monotonic clock",
    why="Times are taken from one monotonic clock, so they never go back; a time that does was edited or spliced. It "
    "cannot tell which of the two records is wrong.",
    bad="eval_stop at 1000 ms after eval_start at 2000 ms",
    good="every time_ms at least the previous one", module=__name__)
MLLOG_006 = rule(
    "MLLOG-006", ERROR, "submission_* values disagree with the folder",
    fix="submission_benchmark, _division, _org and _platform must name the benchmark, division, submitter and system "
    "folders the file lies in",
    why="The submission_* values name the benchmark, division, submitter and system the run was made for; disagreeing "
    "with the folder means the file was moved. It proves the mismatch, not which name is right.",
    bad="submission_division 'open' in a file under closed/",
    good="submission_division 'closed' under closed/", module=__name__)
MLLOG_007 = rule(
    "MLLOG-007", ERROR, "trainmark_trial_result disagrees with the figures recomputed from the events",
    fix="do not edit result files; the summary must agree with the event times (0.05 s per trial)",
    why="The summary record (trainmark_trial_result) is recomputed from the event times; a different figure is an "
    "edited summary. Scores never use it, so this protects readers of the summary only.",
    bad="train_time_s 100.0 where the windows add up to 130.2 s",
    good="the summary as the harness computed it", module=__name__)
MLLOG_008 = rule(
    "MLLOG-008", WARNING, "the logged energy summary disagrees with the meter readings",
    fix="train_energy_j must equal (E[run_stop] - E[run_start]) - sum(E[eval_stop] - E[eval_start]), E being the "
    "trainmark_energy_j readings",
    why="The energy summary must equal what the cumulative meter readings give; a difference is an edited or "
    "miscomputed summary. A warning: it cannot tell whether the readings themselves are true.",
    bad="train_energy_j 500 where the readings give 812",
    good="the summary computed from the readings", module=__name__)
MLLOG_009 = rule(
    "MLLOG-009", ERROR, "the compliance engine could not evaluate the file",
    fix="fix the lines reported with it; the file is treated as failing compliance",
    why="When the compliance engine fails on a file, no compliance rule was verified for it, so the file counts as "
    "failing. It proves the file could not be evaluated, not a particular fault.",
    bad="a file whose records make the engine raise",
    good="a file the engine evaluates to the end", module=__name__)
MLLOG_013 = rule(
    "MLLOG-013", ERROR, "trainmark_format_version is missing (rules 1.1 and later) or not a result format the checker "
    "knows",
    fix="log the result format version as trainmark run does; trial.json's format_version must agree",
    why="The result format version decides which files and keys are required; without it (rules 1.1 and later) a "
    "submitter could pick the lenient older format. It proves only the version is missing or unknown.",
    bad="no trainmark_format_version record",
    good="trainmark_format_version 2, and trial.json format_version 2", module=__name__)
TRIAL_004 = rule(
    "TRIAL-004", ERROR, "an interrupted attempt the MLLOG names (trainmark_interrupted_attempts) is missing from "
    "interrupted/",
    fix="submit the benchmark folder's interrupted/ as `trainmark run --resume` left it: every started trial stays "
    "visible",
    why="`--resume` keeps every started attempt under interrupted/ so that a bad trial cannot be rerun quietly until a "
    "good one comes; an attempt the MLLOG names but the folder lacks was removed. It cannot say what the removed "
    "attempt showed.",
    bad="trainmark_interrupted_attempts 1, interrupted/ empty",
    good="interrupted/ holding the attempt the MLLOG names", module=__name__)

TIME_TOLERANCE_S = 0.05  # docs/result-format.md: the summary agrees within 0.05 s per trial


def engine_findings(result: EngineResult, events: list[Event], rel: str, key_rules: dict[str, str],
                    findings: Findings) -> None:
    """Turn the compliance engine's messages into findings with the tagged rule ids."""
    value_at = {e.line: e.value for e in events}
    replay = Replay(events)
    torn = unreadable_keys(findings, rel)
    for m in result.messages:
        if m.kind == "required":
            if any(k and (m.key or "").startswith(k) for k in torn):
                continue  # one fault, one finding: the unreadable line's MLLOG-001 names its missing record
            rule = key_rules.get(m.key or "", MLLOG_002)
            findings.add(rule, rel, m.text, line=m.line, expected=m.test, seen=m.text.rsplit("but ", 1)[-1])
            continue
        words = compliance_words.explain(m, events, replay, result.messages)
        where = f"line {m.line}: " if m.line else ""
        message, expected = words or (f"{where}{m.key or 'log'}: compliance check failed: {m.test}", m.test)
        findings.add(m.rule or MLLOG_003, rel, message, line=m.line, expected=expected,
                     seen=value_at.get(m.line, m.text))
    refused_findings(result, rel, findings)
    if result.crashed:
        findings.add(MLLOG_009, rel, f"the compliance engine stopped: {result.crashed}",
                     expected="a file the engine can evaluate", seen=result.crashed)


TORN_KEY = re.compile(r'"key"\s*:\s*"([A-Za-z0-9_]+)')


def unreadable_keys(findings: Findings, rel: str) -> set[str]:
    """The keys (or their beginnings, where the line was cut inside) of ``rel``'s lines that are no record
    (MLLOG-001): the engine then counts one record too few of each, which is that finding's consequence."""
    keys = set()
    for f in findings:
        if f.rule == MLLOG_001 and f.file == rel:
            m = TORN_KEY.search(str(f.seen))
            if m:
                keys.add(m.group(1))
    return keys


def check_time_order(events: list[Event], rel: str, findings: Findings) -> None:
    last: Event | None = None
    for e in events:
        if last is not None and e.time_ms < last.time_ms:
            findings.add(MLLOG_005, rel, f"line {e.line}: {e.key} at time_ms {e.time_ms:.0f} is earlier than "
                         f"{last.key} on line {last.line}", line=e.line, expected=f">= {last.time_ms:.0f}",
                         seen=f"{e.time_ms:.0f}")
        last = e


def check_trial_number(record: TrialRecord, judged: Judgement, findings: Findings) -> None:
    logged = record.value(mllog.TRIAL)
    if mllog.TRIAL in record.points and logged != record.trial:
        findings.add(MLLOG_004, record.rel, f"{layout.result_file(record.trial)} logs trainmark_trial {logged!r}",
                     line=record.line_of(mllog.TRIAL), expected=record.trial, seen=logged)


def check_folder_names(record: TrialRecord, judged: Judgement, findings: Findings) -> None:
    """The submission_* keys against the folder names they must equal (``judged.folder_names``; None: unknown)."""
    expected = judged.folder_names
    for key, want in expected.items():
        if want is None or key not in record.points:
            continue
        got = record.value(key)
        if got != want:
            findings.add(MLLOG_006, record.rel, f"{key} is {got!r} but the file lies in the folder {want!r}",
                         line=record.line_of(key), expected=want, seen=got)


def check_summary(record: TrialRecord, judged: Judgement, findings: Findings) -> None:
    """The logged trainmark_trial_result against the recomputed figures."""
    summary = record.value(mllog.TRIAL_RESULT)
    if not isinstance(summary, dict):
        return
    line = record.line_of(mllog.TRIAL_RESULT)
    for name, recomputed in (("train_time_s", record.train_time_s), ("total_time_s", record.total_time_s),
                             ("eval_time_s", record.eval_time_s)):
        logged = summary.get(name)
        if recomputed is None or name not in summary:
            continue
        if not _close(logged, recomputed, TIME_TOLERANCE_S):
            findings.add(MLLOG_007, record.rel, f"trainmark_trial_result {name} is {logged!r}, the events give "
                         f"{recomputed:.3f} s", line=line, expected=f"{recomputed:.3f} \u00b1 {TIME_TOLERANCE_S}",
                         seen=logged)
    if "epochs" in summary and summary["epochs"] != record.epochs_trained:
        findings.add(MLLOG_007, record.rel, f"trainmark_trial_result epochs is {summary['epochs']!r}, "
                     f"the file has {record.epochs_trained} epoch_stop events", line=line,
                     expected=record.epochs_trained,
                     seen=summary["epochs"])
    if record.final_metric is not None and "final_metric" in summary and not _close(
            summary["final_metric"], record.final_metric, 1e-9):
        findings.add(MLLOG_007, record.rel, "trainmark_trial_result final_metric differs from the last "
                     "eval_accuracy", line=line, expected=record.final_metric, seen=summary["final_metric"])
    if "status" in summary and (summary["status"] == "converged") != record.converged:
        findings.add(MLLOG_007, record.rel, f"trainmark_trial_result status is {summary['status']!r} but the "
                     f"last metric {record.final_metric!r} {'reaches' if record.converged else 'misses'} the target",
                     line=line, expected="converged" if record.converged else "not converged", seen=summary["status"])
    logged_energy = summary.get("train_energy_j")
    if "train_energy_j" in summary and not _same_energy(logged_energy, record.train_energy_j):
        findings.add(MLLOG_008, record.rel, f"trainmark_trial_result train_energy_j is {logged_energy!r}, the "
                     f"meter readings give {record.train_energy_j!r}" + (f" ({record.energy_reason})"
                                                                     if record.train_energy_j is None else ""),
                     line=line, expected=record.train_energy_j, seen=logged_energy)


def _close(logged: Any, value: float, tolerance: float) -> bool:
    return (not isinstance(logged, bool) and isinstance(logged, (int, float)) and math.isfinite(logged)
            and abs(logged - value) <= tolerance)


def _same_energy(logged: Any, value: float | None) -> bool:
    if value is None or logged is None:
        return value is None and logged is None
    return _close(logged, value, max(0.5, 1e-3 * abs(value)))


def _version_tuple(version: str) -> tuple[int, ...]:
    """``"1.10"`` -> (1, 10); a version that is not dotted numbers sorts after every numbered one."""
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return (1 << 30,)


def check_format_version(record: TrialRecord, judged: Judgement, findings: Findings) -> None:
    """The result format version is logged beside trial.json's (rules 1.1 on) and is one we read (MLLOG-013).

    Logged, it cannot be declined by editing trial.json alone: trial_json compares the two."""
    rules_version = judged.rules.version
    if mllog.FORMAT_VERSION not in record.points:
        if _version_tuple(rules_version) >= _version_tuple(mllog.FORMAT_VERSION_SINCE_RULES):
            findings.add(MLLOG_013, record.rel, f"{mllog.FORMAT_VERSION} is missing: results of rules "
                         f"{rules_version} log their result format version", line=record.first_line,
                         expected=f"an integer 1..{RESULT_FORMAT_VERSION}", seen="missing")
        return
    value = record.value(mllog.FORMAT_VERSION)
    if type(value) is not int or not 1 <= value <= RESULT_FORMAT_VERSION:
        findings.add(MLLOG_013, record.rel, f"{mllog.FORMAT_VERSION} is {value!r}, not a result format this "
                     "checker knows", line=record.line_of(mllog.FORMAT_VERSION),
                     expected=f"an integer 1..{RESULT_FORMAT_VERSION}", seen=value)


def check_interrupted_attempts(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """Every interrupted attempt a trial's MLLOG names is still in ``interrupted/`` (TRIAL-004): a trial
    restarted until it was fast enough leaves a trace a reviewer sees."""
    records, interrupted, bench_rel = judged.records, ev.interrupted, ev.folder.rel
    for k, record in sorted(records.items()):
        attempts = record.value(mllog.INTERRUPTED_ATTEMPTS)
        if attempts is None and mllog.INTERRUPTED_ATTEMPTS not in record.points:
            continue
        line = record.line_of(mllog.INTERRUPTED_ATTEMPTS)
        if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
            findings.add(TRIAL_004, record.rel, f"{mllog.INTERRUPTED_ATTEMPTS} is not a list of attempts",
                         line=line, expected="[{folder, seed, status}, ...]", seen=attempts)
            continue
        for attempt in attempts:
            _check_attempt(attempt, k, interrupted, bench_rel, line, findings)


def _check_attempt(attempt: dict, k: int, interrupted: dict[str, Attempt], bench_rel: str, line: int | None,
                   findings: Findings) -> None:
    name = attempt.get("folder")
    valid = isinstance(name, str) and name.startswith(f"{layout.trial_dir(k)}-") and \
        not layout.name_refusal(name, max_len=200)
    where = posixpath.join(bench_rel, layout.INTERRUPTED_DIR, name) if valid else \
        posixpath.join(bench_rel, layout.INTERRUPTED_DIR)
    present = valid and name in interrupted and interrupted[name].holds_entries
    if present and not interrupted[name].logged:
        findings.add(TRIAL_004, where, f"trial {k}'s interrupted attempt {name!r} (seed {attempt.get('seed')!r}) "
                     f"holds no {layout.result_file(k)} with its MLLOG records: the attempt was emptied", line=line,
                     expected=f"{layout.result_file(k)} as the interrupted run left it", seen="no records")
    elif not present:
        findings.add(TRIAL_004, where, f"trial {k}'s MLLOG names the interrupted attempt {name!r} (seed "
                     f"{attempt.get('seed')!r}, {attempt.get('status')!r}), which is not in "
                     f"{layout.INTERRUPTED_DIR}/: a started trial was removed", line=line,
                     expected=f"{layout.INTERRUPTED_DIR}/{layout.trial_dir(k)}-<time>/ with its files", seen="missing")
