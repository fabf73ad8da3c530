"""Score MLPerf Training result folders the way MLPerf's result summarizer does.

Specification: ``mlperf_logging.result_summarizer`` (``_compute_strong_score_standalone``,
``_compute_olympic_average``, ``_get_scaling_factor``), which cannot be called on
untrusted folders itself (it opens paths freely and crashes on some inputs). Per run:
the file passes MLPerf's own compliance rules for the ruleset (``training_<v>/common.yaml``
shipped inside mlperf-logging, never a file from the submission), and the time is
``run_stop - run_start`` in minutes. A run that fails compliance, or has no run_start
or no run_stop with status ``success``, is dropped; at most 1 dropped run (4 for
unet3d), which count as the slowest of the olympic mean; a review's ``scaling.json``
multiplies the score.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mlperf_logging import benchmark_meta
from mlperf_logging.compliance_checker import mlp_compliance

from trainmark.checker.checks.mllog import refused_findings
from trainmark.checker.mlperf.compliance_configs import choosing_value_problems
from trainmark.checker.mlperf.engine import run_engine
from trainmark.checker.read.levels import BenchmarkFolder
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.read.safefs import JSON_CAP, LOG_CAP, Missing, SafeTree, UnsafeEntry
from trainmark.checker.verdict.codes import (
    HOSTILE_007,
    MLPERF_001,
    MLPERF_002,
    MLPERF_003,
    MLPERF_004,
    MLPERF_005,
    SECURITY_001,
)
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.scoring import olympic_mean
from trainmark.errors import UserError
from trainmark.format import layout, mllog


@dataclass
class MLPerfRun:
    file: str
    minutes: float | None
    dropped: bool
    reason: str = ""


@dataclass
class MLPerfScore:
    ruleset: str
    runs: list[MLPerfRun] = field(default_factory=list)
    required_runs: int | None = None
    dropped: int = 0
    max_dropped: int = 1
    olympic_minutes: float | None = None
    scaling_factor: float = 1.0
    score_minutes: float | None = None      # what MLPerf publishes: olympic mean x scaling factor
    score_reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def known_rulesets() -> list[str]:
    return sorted((v for v in mlp_compliance.rule_choices()
                   if Path(mlp_compliance.__file__).with_name(f"training_{v}").is_dir()),
                  key=lambda v: tuple(int(x) for x in v.split(".")))


def ruleset_from_path(path: Path) -> tuple[str, str] | None:
    """The training ruleset a folder name gives ('training_results_v4.0' -> '4.0.0') and that part; None."""
    known = known_rulesets()
    for part in reversed(Path(path).resolve().parts):
        m = re.search(r"v(\d+)\.(\d+)(?:\.(\d+))?", part)
        if m and f"{m[1]}.{m[2]}.{m[3] or 0}" in known:
            return f"{m[1]}.{m[2]}.{m[3] or 0}", part
    return None


def infer_ruleset(path: Path) -> str | None:
    """The training ruleset the path names, else None (never a guess)."""
    found = ruleset_from_path(path)
    return found[0] if found else None


def in_ruleset(benchmark: str, ruleset: str) -> bool:
    """Is ``benchmark`` part of MLPerf Training ``ruleset`` (mlperf-logging ships its closed config)?"""
    name = "maskrcnn" if benchmark == "mask" else benchmark
    return Path(mlp_compliance.__file__).with_name(f"training_{ruleset}").joinpath(f"closed_{name}.yaml").is_file()


def choose_ruleset(path: Path, chosen: str | None, benchmarks: set[str]) -> tuple[str, str]:
    """The MLPerf Training ruleset for the MLPerf folders ``benchmarks`` under ``path``, and a note that says
    where it came from: ``--mlperf-ruleset``, the path, or the benchmarks present when exactly one ruleset
    holds them all. Otherwise ``UserError`` (exit 2) naming the candidates: a wrong ruleset fails legitimate
    folders (a v5.0 folder judged by 6.1.0 rules), so it is never assumed."""
    if chosen:
        return chosen, f"MLPerf Training ruleset in force: {chosen} (from --mlperf-ruleset)"
    found = ruleset_from_path(path)
    if found:
        return found[0], f"MLPerf Training ruleset in force: {found[0]} (from the folder name {found[1]!r})"
    candidates = [v for v in known_rulesets() if all(in_ruleset(b, v) for b in benchmarks)]
    if len(candidates) == 1:
        return candidates[0], (f"MLPerf Training ruleset in force: {candidates[0]} (the only ruleset with every "
                               f"benchmark present: {', '.join(sorted(benchmarks))})")
    raise UserError(f"{path}: which MLPerf Training ruleset judges these results? The path names no round "
                    f"(such as 'training_results_v5.0') and {len(candidates) or 'no'} rulesets hold every "
                    f"benchmark present ({', '.join(sorted(benchmarks))}): pass --mlperf-ruleset X.Y.Z "
                    f"(candidates: {', '.join(candidates or known_rulesets())})")


def is_mlperf_benchmark(name: str) -> bool:
    return name in benchmark_meta.get_result_file_counts("training") or name == "mask"


def score_mlperf_benchmark(folder: BenchmarkFolder, tree: SafeTree, ruleset: str, findings: Findings) -> MLPerfScore:
    benchmark = "maskrcnn" if folder.benchmark == "mask" else folder.benchmark  # the summarizer's alias
    score = MLPerfScore(ruleset, max_dropped=4 if benchmark == "unet3d" else 1,
                        required_runs=benchmark_meta.get_result_file_counts("training").get(benchmark))
    names = sorted(e.name for e in folder.entries if e.kind == "file" and layout.is_result_name(e.name))
    for name in names:
        run = _score_run(tree, f"{folder.rel}/{name}".lstrip("/"), ruleset, findings)
        score.runs.append(run)
    score.dropped = sum(r.dropped for r in score.runs)
    if score.required_runs is not None and len(names) < score.required_runs:
        findings.add(MLPERF_004, folder.rel, f"{len(names)} result files; MLPerf requires {score.required_runs} "
                     f"for {benchmark}", expected=score.required_runs, seen=len(names))
    score.olympic_minutes, score.score_reason = olympic_mean(
        [None if r.dropped else r.minutes for r in score.runs], score.max_dropped, score.max_dropped)
    if score.dropped > score.max_dropped:
        findings.add(MLPERF_003, folder.rel, f"{score.dropped} runs dropped; MLPerf allows {score.max_dropped} "
                     f"for {benchmark}: no score", expected=f"at most {score.max_dropped}", seen=score.dropped)
    score.scaling_factor = _scaling_factor(tree, f"{folder.rel}/{layout.SCALING_JSON}".lstrip("/"), folder, findings)
    if score.olympic_minutes is not None:
        score.score_minutes = score.olympic_minutes * score.scaling_factor
    return score


def _score_run(tree: SafeTree, rel: str, ruleset: str, findings: Findings) -> MLPerfRun:
    try:
        data = tree.read_bytes(rel, LOG_CAP)
    except (UnsafeEntry, Missing) as exc:
        rule = exc.rule if isinstance(exc, UnsafeEntry) else HOSTILE_007
        findings.add(rule, rel, getattr(exc, "message", str(exc)), seen=getattr(exc, "seen", ""))
        return MLPerfRun(rel, None, True, "unreadable")
    line_problems = Findings()
    events = read_events(data, rel, line_problems, strict=False)
    if len(line_problems):
        first = next(iter(line_problems))
        findings.add(MLPERF_001, rel, f"{first.message} (mlperf-logging cannot parse it)", line=first.line,
                     expected=first.expected, seen=first.seen)
        return MLPerfRun(rel, None, True, "malformed MLLOG line")
    problems = choosing_value_problems(events, ruleset)
    for event, want in problems:
        findings.add(SECURITY_001, rel, f"{event.key} {event.value!r} is not {want}: this file is not run through "
                     f"MLPerf's compliance rules (MLPerf's configs would take the value as a file name)",
                     line=event.line, expected=want, seen=event.value)
    if problems:
        return MLPerfRun(rel, None, True, "a logged value names a config file")
    result = run_engine(events, f"training_{ruleset}/common.yaml", ruleset)
    refused_findings(result, rel, findings)
    if not result.valid:
        first = result.messages[0] if result.messages else None
        text = first.text if first else result.crashed
        test = first.test if first else ""
        findings.add(MLPERF_001, rel, f"fails MLPerf {ruleset} compliance: {text}",
                     line=first.line if first else None, expected=test or "compliant", seen=text)
        return MLPerfRun(rel, None, True, "fails compliance")
    start = next((e for e in events if e.key == mllog.RUN_START), None)
    stop = next((e for e in events if e.key == mllog.RUN_STOP), None)
    if start is None or stop is None or stop.metadata.get("status") != "success":
        why = "no run_start" if start is None else "no run_stop" if stop is None else \
            f"run_stop status {stop.metadata.get('status')!r}"
        findings.add(MLPERF_002, rel, f"run dropped: {why}", line=stop.line if stop else None,
                     expected="run_start and run_stop with status 'success'", seen=why)
        return MLPerfRun(rel, None, True, why)
    return MLPerfRun(rel, (stop.time_ms - start.time_ms) / 60 / 1000, False)


def _scaling_factor(tree: SafeTree, rel: str, folder: BenchmarkFolder, findings: Findings) -> float:
    if not any(e.name == layout.SCALING_JSON and e.kind == "file" for e in folder.entries):
        return 1.0
    try:
        value = json.loads(tree.read_bytes(rel, JSON_CAP).decode("utf-8"))["scaling_factor"]
    except (UnsafeEntry, Missing, UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError) as exc:
        findings.add(MLPERF_005, rel, f"{rel} is not a JSON object with a scaling_factor: "
                     f"{getattr(exc, 'message', exc)}", expected='{"scaling_factor": <number>}')
        return 1.0
    # abs() > 1e300 before isfinite(): an integer beyond float's range would overflow it (issue 18)
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > 1e300
            or not math.isfinite(value) or value <= 0):
        findings.add(MLPERF_005, rel, f"{rel}: scaling_factor {value!r} is not a positive number",
                     expected="a positive number", seen=value)
        return 1.0
    return float(value)
