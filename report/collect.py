"""What a report shows, gathered once: the checker's report plus each trial's per-epoch curve.

The checker recomputes every score; it does not keep the per-epoch points a plot needs
(metric, training time so far without evaluation, energy so far). Those are read here from
the same MLLOG files with the checker's own bounded, link-refusing reader (``SafeTree``,
``read_events``), so nothing in the folder chooses a file to load or code to run.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.read.safefs import JSON_CAP, LOG_CAP, Missing, SafeTree, UnsafeEntry
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.result import Report
from trainmark.format import layout, mllog


@dataclass
class CurvePoint:
    epoch: int
    metric: float
    train_s: float               # training time before this evaluation began, earlier evaluations excluded
    total_s: float               # time since run_start at the end of this evaluation, evaluation included
    eval_s: float                # this evaluation window
    train_energy_j: float | None = None   # energy before this evaluation began, earlier evaluations excluded


@dataclass
class TrialView:
    summary: dict                # the checker's recomputed figures (benchmark_check.trial_summary)
    curve: list[CurvePoint] = field(default_factory=list)
    samples_per_s: float | None = None    # recomputed: sum of epoch_stop trainmark_samples / train time
    logged: dict = field(default_factory=dict)   # the harness's own summary (TFLOPS, utilization): labelled as logged
    precision: str | None = None
    global_batch_size: int | None = None
    framework: str | None = None          # trainmark_framework (None: PyTorch, which logs none before rules 1.0)


@dataclass
class BenchmarkView:
    result: dict                 # the checker's benchmark entry (Report.to_dict()['benchmarks'][i])
    trials: list[TrialView]
    findings: list[dict]
    rules: Any = None            # BenchmarkRules or None (MLPerf folders)
    missing: list[str] = field(default_factory=list)   # what the report cannot show, and why

    @property
    def name(self) -> str:
        return self.result["benchmark"]


@dataclass
class ReportData:
    report: dict                 # Report.to_dict()
    benchmarks: list[BenchmarkView]
    systems: dict[str, dict]     # system file (relative) -> its description, or {} when unreadable


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def trial_curve(events) -> tuple[list[CurvePoint], float | None]:
    """Per evaluation: the metric against the training time so far; and the samples trained.

    Training time so far = (eval_start - run_start) - the evaluation windows before it, the
    checker's definition of train time cut at each evaluation; energy the same way.
    """
    run_start = run_j = None
    eval_ms, eval_j = 0.0, 0.0
    open_ms = open_j = None
    point: CurvePoint | None = None
    curve: list[CurvePoint] = []
    samples = 0.0
    for e in events:
        reading = _number(e.metadata.get(mllog.ENERGY_J))
        if e.key == mllog.RUN_START and run_start is None:
            run_start, run_j = e.time_ms, reading
        if run_start is None:
            continue
        if e.key == mllog.EPOCH_STOP:
            samples += _number(e.metadata.get(mllog.SAMPLES)) or 0.0
        elif e.key == mllog.EVAL_START:
            open_ms, open_j = e.time_ms, reading
        elif e.key == mllog.EVAL_ACCURACY and open_ms is not None:
            metric = _number(e.value)
            epoch = e.metadata.get(mllog.EPOCH_NUM)
            if metric is not None and type(epoch) is int:
                energy = None if None in (run_j, open_j, eval_j) else open_j - run_j - eval_j
                point = CurvePoint(epoch, metric, (open_ms - run_start - eval_ms) / 1000, 0.0, 0.0, energy)
                curve.append(point)
        elif e.key == mllog.EVAL_STOP and open_ms is not None:
            eval_ms += e.time_ms - open_ms
            eval_j = None if None in (eval_j, reading, open_j) else eval_j + reading - open_j
            if point is not None:
                point.total_s = (e.time_ms - run_start) / 1000
                point.eval_s = (e.time_ms - open_ms) / 1000
            open_ms = open_j = point = None
    return curve, (samples or None)


def _read_system(tree: SafeTree, rel: str) -> dict:
    try:
        value = json.loads(tree.read_bytes(rel, JSON_CAP).decode("utf-8"))
    except (Missing, UnsafeEntry, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def read_systems(tree: SafeTree, report: dict) -> dict[str, dict]:
    """Every system description the checker listed, read with its caps ({} when unreadable)."""
    return {s["file"]: _read_system(tree, s["file"]) for s in report["systems"]}


def _rules_for(name: str, version: str | None, rules_root: Path | None):
    from trainmark.rules.ruleset import get_rules

    try:
        return get_rules(name, version, rules_root) if version else None
    except Exception:  # noqa: BLE001 - no rules: the report says what it cannot show
        return None


def _trainmark_trials(tree: SafeTree, result: dict, missing: list[str]) -> list[TrialView]:
    views = []
    for summary in result["trials"]:
        view = TrialView(summary)
        try:
            data = tree.read_bytes(summary["file"], LOG_CAP)
        except (Missing, UnsafeEntry):
            missing.append(f"trial {summary['trial']}: its result file cannot be read")
            views.append(view)
            continue
        events = read_events(data, summary["file"], Findings(), strict=True)
        view.curve, samples = trial_curve(events)
        train = _number(summary.get("train_time_s"))
        if samples and train:
            view.samples_per_s = samples / train
        for e in events:
            if e.key == mllog.TRIAL_RESULT and isinstance(e.value, dict):
                view.logged = {k: _number(e.value.get(k)) for k in ("achieved_tflops", "peak_tflops", "utilization",
                                                                     "utilization_of_ceiling", "ceiling_tflops")}
            elif e.key == mllog.PRECISION and isinstance(e.value, str):
                view.precision = e.value
            elif e.key == "global_batch_size" and type(e.value) is int:
                view.global_batch_size = e.value
            elif e.key == mllog.FRAMEWORK and isinstance(e.value, str):
                view.framework = e.value
        views.append(view)
    return views


def _missing(result: dict, trials: list[TrialView]) -> list[str]:
    score = result.get("score") or {}
    out = []
    if result["format"] == "mlperf":
        out.append("MLPerf result folder: per-run times and the score only (no per-epoch curve, energy or "
                   "throughput in trainmark's format)")
        return out
    if not result["trials"]:
        out.append("no trial could be read")
    if len(result["trials"]) == 1:
        out.append("a single trial: no spread, no confidence interval")
    if score.get("score_train_time_s") is None and score.get("score_reason"):
        out.append(f"no score: {score['score_reason']}")
    if score.get("mean_train_energy_j") is None:
        out.append(f"energy not measured: {score.get('energy_reason') or 'no trial measured energy'}")
    failed = [t["trial"] for t in result["trials"] if not t.get("converged")]
    if failed:
        out.append(f"trials that did not reach the target: {', '.join(map(str, failed))}")
    return out


def _gather(report: Report, options: CheckOptions) -> tuple[list[BenchmarkView], dict[str, dict]]:
    """Curves, rules and systems of a checked folder (read while the folder still exists)."""
    as_dict = report.to_dict()
    tree = SafeTree(Path(report.path))
    views = []
    for result in as_dict["benchmarks"]:
        missing: list[str] = []
        trials = _trainmark_trials(tree, result, missing) if result["format"] == "trainmark" else []
        under = [f.to_dict() for f in report.findings_under(result["path"])]
        rules = _rules_for(result["benchmark"], result.get("rules_version"), options.rules_root) \
            if result["format"] == "trainmark" else None
        views.append(BenchmarkView(result, trials, under, rules, _missing(result, trials) + missing))
    return views, read_systems(tree, as_dict)


def collect(path: Path | str, options: CheckOptions | None = None) -> ReportData:
    """Check ``path`` (a folder, or an archive unpacked as ``trainmark check`` unpacks it) and gather
    everything the report shows; raises ``UserError`` like the checker."""
    from trainmark.checker.read import archive

    options = options or CheckOptions()
    path = Path(path)
    if path.is_file() and archive.is_archive_name(path):
        gathered: dict = {}

        def check_folder(root: Path, opts: CheckOptions) -> Report:
            report = check_path(root, opts)
            gathered["views"], gathered["systems"] = _gather(report, opts)  # before the folder is removed
            return report

        report = archive.check_archive(path, options, check_folder)
        return ReportData(report.to_dict(), gathered.get("views", []), gathered.get("systems", {}))
    report = check_path(path, options)
    views, systems = _gather(report, options)
    return ReportData(report.to_dict(), views, systems)


def system_of(data: ReportData, result: dict) -> dict:
    """The description of the system a benchmark ran on ({} when none could be read)."""
    return find_system(data.systems, result)


def find_system(systems: dict[str, dict], result: dict) -> dict:
    """``<submitter>/systems/<system>.json`` beside the ``<submitter>/results/`` the benchmark lies in."""
    path = "/" + result["path"]
    at = path.rfind(f"/{layout.RESULTS_DIR}/")
    if at < 0:
        return {}
    return systems.get(f"{path[1:at + 1]}{layout.SYSTEMS_DIR}/{layout.system_file(result['system'])}", {})
