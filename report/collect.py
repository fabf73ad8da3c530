"""What a report shows, gathered once: the checker's report plus each trial's per-epoch curve.

The checker recomputes every score; it does not keep the per-epoch points a plot needs
(metric, training time so far without evaluation, energy so far). Those are read here from
the same MLLOG files with the hardened MLLOG reader (trainmark.format.mllog_read), the files
themselves through ``FolderFiles``: the command layer (trainmark.cli.checked) runs the check
and hands over the checked folder's files read as the checker reads them (no links, capped).
Only files the checker's report names are read, so nothing in the folder chooses a file to
load or code to run. The report (``trainmark check --json``'s dict, ``trainmark-check/1``) is
used through its JSON fields only: report/ never imports the checker.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trainmark.format import layout, mllog
from trainmark.format.mllog_read import read_records
from trainmark.format.model_size import beside_reference, size_words
from trainmark.format.timeline_read import Replay, Span
from trainmark.rules import reference_structures
from trainmark.rules.reference_work import flops_per_step


class FolderFiles(Protocol):
    """The checked folder's files, read the checker's way (no links, capped); None when one cannot be read."""

    def log_file(self, rel: str) -> bytes | None: ...      # a result file (the checker's cap for logs)

    def json_file(self, rel: str) -> bytes | None: ...     # a system description (the cap for JSON files)

    # Optional: ``outside_json_file(rel)`` reads a file above the checked folder (``rel`` starts with
    # '../'), the checker's way. The report asks it for a lone benchmark folder's system description,
    # ``../../../systems/<system>.json``; without it the page says that none was given.


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
    parameter_count: int | None = None    # trainmark_parameter_count (CONFORM-006 holds it to structure.json)
    flops_per_step: int | None = None     # trainmark_flops_per_step, as logged
    errors: list[str] = field(default_factory=list)   # rules of the checker's errors in this trial's own files

    @property
    def failed(self) -> bool:
        return bool(self.errors)


@dataclass
class BenchmarkView:
    result: dict                 # the checker's benchmark entry (Report.to_dict()['benchmarks'][i])
    trials: list[TrialView]
    findings: list[dict]
    rules: Any = None            # BenchmarkRules or None (MLPerf folders)
    missing: list[str] = field(default_factory=list)   # what the report cannot show, and why
    profile: dict | None = None  # its profile.json (``trainmark profile``), checked field by field

    @property
    def name(self) -> str:
        return self.result["benchmark"]

    @property
    def model_words(self) -> str | None:
        """The model its first trial logged: parameters and FLOPs per step, and in the open division the
        reference's beside them (format/model_size.py: as the run's banner and CONFORM-003 say it)."""
        logged = next((t for t in self.trials if t.parameter_count is not None), None)
        if logged is None or self.rules is None:
            return None
        reference = self.rules.reference_model["id"]
        if self.result.get("division") != "open":
            return f"the reference {reference}: {size_words(logged.parameter_count, logged.flops_per_step)}"
        shipped = reference_structures.shipped(self.rules) or {}
        return "your model: " + beside_reference(logged.parameter_count, logged.flops_per_step, reference,
                                                 shipped.get("parameter_count"),
                                                 flops_per_step(self.rules, logged.global_batch_size))

    @property
    def withheld(self) -> str | None:
        """Why the score is not shown although the checker computed one: an error in this benchmark.

        A score over a trial the checker found tampered with, or beside an error, is no score; the
        page names the failing trials and rules instead."""
        errors = [f for f in self.findings if f["severity"] == "error"]
        if not errors and not self.result.get("errors"):
            return None
        failed = [t for t in self.trials if t.failed]
        which = "; ".join(f"trial {t.summary['trial']}: {', '.join(t.errors)}" for t in failed)
        count = self.result.get("errors") or len(errors)
        return (f"{count} error{'s' if count != 1 else ''} in this benchmark"
                + (f" ({which})" if which else f" ({', '.join(sorted({f['rule'] for f in errors}))})" if errors
                   else ""))


@dataclass
class ReportData:
    report: dict                 # the checker's report as JSON (trainmark-check/1)
    benchmarks: list[BenchmarkView]
    systems: dict[str, dict]     # system file (relative) -> its description, or {} when unreadable

    @property
    def lone_benchmark(self) -> bool:
        """The checked folder is one benchmark folder (results/<system>/<benchmark>): no systems/ inside."""
        return any(v.result["path"] == "" for v in self.benchmarks)


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def trial_curve(events) -> tuple[list[CurvePoint], float | None]:
    """Per evaluation: the metric against the training time so far; and the samples trained.

    Training time so far = (eval_start - run_start) - the evaluation windows before it: the checker's
    definition of train time cut at each evaluation, replayed by trainmark.format.timeline_read; energy
    the same way.
    """
    replay = Replay(events)
    run_start = replay.first("run")[0]
    if run_start is None:
        return [], None
    curve: list[CurvePoint] = []
    last_in_window: dict[int, tuple[CurvePoint, Span]] = {}
    for p in replay.eval_points():
        metric, epoch = _number(p.accuracy.value), p.accuracy.metadata.get(mllog.EPOCH_NUM)
        if metric is not None and type(epoch) is int:
            curve.append(CurvePoint(epoch, metric, p.train_s, 0.0, 0.0, p.train_j))
            last_in_window[id(p.span)] = (curve[-1], p.span)
    for point, span in last_in_window.values():
        if span.stop is not None:
            point.total_s = (span.stop.time_ms - run_start.time_ms) / 1000
            point.eval_s = span.seconds
    samples = sum(_number(e.metadata.get(mllog.SAMPLES)) or 0.0
                  for e in replay.split("epoch")[1] if e.line > run_start.line)
    return curve, (samples or None)


def _read_system(files: FolderFiles, rel: str) -> dict:
    data = files.json_file(rel)
    return {} if data is None else _parse_system(data)


def _parse_system(data: bytes) -> dict:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def read_systems(files: FolderFiles, report: dict) -> dict[str, dict]:
    """Every system description the checker listed, read with its caps ({} when unreadable)."""
    return {s["file"]: _read_system(files, s["file"]) for s in report["systems"]}


def _rules_for(name: str, version: str | None, rules_root: Path | None):
    from trainmark.rules.ruleset import get_rules

    try:
        return get_rules(name, version, rules_root) if version else None
    except Exception:  # noqa: BLE001 - no rules: the report says what it cannot show
        return None


def _trainmark_trials(files: FolderFiles, result: dict, missing: list[str]) -> list[TrialView]:
    views = []
    for summary in result["trials"]:
        view = TrialView(summary)
        data = files.log_file(summary["file"])
        if data is None:
            missing.append(f"trial {summary['trial']}: its result file cannot be read")
            views.append(view)
            continue
        events = read_records(data, strict=True)  # the checker has reported what is wrong in it
        view.curve, samples = trial_curve(events)
        train = _number(summary.get("train_time_s"))
        if samples and train:
            view.samples_per_s = samples / train
        for e in events:
            if e.key == mllog.TRIAL_RESULT and isinstance(e.value, dict):
                view.logged = {k: _number(e.value.get(k)) for k in ("achieved_tflops", "peak_tflops", "utilization",
                                                                     "utilization_of_ceiling", "ceiling_tflops",
                                                                     "data_wait_share")}
            elif e.key == mllog.PRECISION and isinstance(e.value, str):
                view.precision = e.value
            elif e.key == "global_batch_size" and type(e.value) is int:
                view.global_batch_size = e.value
            elif e.key == mllog.FRAMEWORK and isinstance(e.value, str):
                view.framework = e.value
            elif e.key in (mllog.PARAMETER_COUNT, mllog.FLOPS_PER_STEP) and type(e.value) is int:
                setattr(view, "parameter_count" if e.key == mllog.PARAMETER_COUNT else "flops_per_step", e.value)
        views.append(view)
    return views


def trial_errors(result: dict, findings: list[dict], trial: dict) -> list[str]:
    """The rules of the errors in one trial's own files: its result file and its trial_<k>/ folder."""
    folder = trial["file"].rsplit("/", 1)[0] + "/" if "/" in trial["file"] else ""
    own = f"{folder}{layout.TRIAL_PREFIX}{trial['trial']}"
    rules = [f["rule"] for f in findings if f["severity"] == "error"
             and (f["file"] == trial["file"] or f["file"] == own or f["file"].startswith(own + "/"))]
    return list(dict.fromkeys(rules))


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


def findings_under(report: dict, rel: str) -> list[dict]:
    """The findings of the checker's report in ``rel`` or below it (every finding when ``rel`` is '')."""
    prefix = rel + "/" if rel else ""
    return [dict(f) for f in report["findings"] if not rel or f["file"] == rel or f["file"].startswith(prefix)]


def gather(report: dict, files: FolderFiles, rules_root: Path | None = None
           ) -> tuple[list[BenchmarkView], dict[str, dict]]:
    """Curves, rules and systems of a checked folder (read while the folder still exists).

    ``report``: the checker's report as JSON; ``files``: that folder's files; ``rules_root``: the
    rules the check used (None: the shipped ones)."""
    views = []
    for result in report["benchmarks"]:
        missing: list[str] = []
        trainmark = result["format"] == "trainmark"
        trials = _trainmark_trials(files, result, missing) if trainmark else []
        under = findings_under(report, result["path"])
        rules = _rules_for(result["benchmark"], result.get("rules_version"), rules_root) if trainmark else None
        for t in trials:
            t.errors = trial_errors(result, under, t.summary)
        views.append(BenchmarkView(result, trials, under, rules, _missing(result, trials) + missing,
                                   _profile(files, result) if trainmark else None))
    systems = read_systems(files, report)
    reader = getattr(files, "outside_json_file", None)
    for result in report["benchmarks"]:
        rel = lone_system_file(report, result)
        if rel and reader is not None:
            data = reader(rel)  # None: missing, or refused by the checker's rules (a link, a special file)
            if data is not None:
                systems[rel] = _parse_system(data)
    return views, systems


def _profile(files: FolderFiles, result: dict) -> dict | None:
    """The benchmark folder's ``profile.json`` (``trainmark profile --json``), read with the JSON cap and
    checked field by field; None when there is none or it is not a profile."""
    from trainmark.report.profile_page import read_profile

    rel = f"{result['path']}/{layout.PROFILE_JSON}" if result["path"] else layout.PROFILE_JSON
    return read_profile(files.json_file(rel))


def lone_system_file(report: dict, result: dict) -> str | None:
    """Where the layout puts the system description of a lone benchmark folder (the checked folder is
    ``results/<system>/<benchmark>``): ``../../../systems/<system>.json``; None for any other folder."""
    if result["path"] != "" or not result.get("system"):
        return None
    parts = report["path"].replace("\\", "/").rstrip("/").split("/")
    if len(parts) < 3 or parts[-3] != layout.RESULTS_DIR or parts[-2] != result["system"]:
        return None
    return f"../../../{layout.SYSTEMS_DIR}/{layout.system_file(result['system'])}"


def system_of(data: ReportData, result: dict) -> dict:
    """The description of the system a benchmark ran on ({} when none could be read)."""
    return find_system(data.systems, result)


def find_system(systems: dict[str, dict], result: dict) -> dict:
    """``<submitter>/systems/<system>.json`` beside the ``<submitter>/results/`` the benchmark lies in."""
    return systems.get(system_file_of(result) or "", {})


def system_file_of(result: dict) -> str | None:
    """The system description's path relative to the checked folder (None where the layout puts none):
    ``<submitter>/systems/<system>.json`` beside the ``<submitter>/results/`` the benchmark lies in, or
    ``../../../systems/<system>.json`` for a lone benchmark folder."""
    if not result.get("system"):
        return None
    if result["path"] == "":
        return f"../../../{layout.SYSTEMS_DIR}/{layout.system_file(result['system'])}"
    path = "/" + result["path"]
    at = path.rfind(f"/{layout.RESULTS_DIR}/")
    if at < 0:
        return None
    return f"{path[1:at + 1]}{layout.SYSTEMS_DIR}/{layout.system_file(result['system'])}"
