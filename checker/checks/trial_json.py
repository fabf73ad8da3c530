"""``trial_<k>/trial.json`` is the harness's summary for people: it must agree with the MLLOG.

Scores never come from it (they are recomputed from ``result_<k>.txt``), but reports and
readers do look at it, so a summary claiming other figures than the logs is an error, not
something shipped unchecked. Read with a size cap and a depth bound, validated against
``trainmark/format/schema/trial.schema.json``, then compared field by field with the recomputed trial.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from trainmark.checker.checks.trials import hyperparameters
from trainmark.checker.read.evidence import JsonFile
from trainmark.checker.read.json_file import harness_schema, schema_findings
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog
from trainmark.rules.ruleset import BenchmarkRules

TRIALJSON_001 = rule(
    "TRIALJSON-001", ERROR, "trial.json is not a readable JSON object (size, depth, encoding)",
    fix="copy the trial.json the harness wrote; it is a small, flat UTF-8 JSON object",
    why="trial.json is read with a size cap and a depth bound; a file that is not a small UTF-8 JSON object cannot be "
    "compared with the logs. It proves only the file is unreadable.",
    bad="trial.json nested 10,000 levels deep",
    good="the flat object the harness wrote", module=__name__)
TRIALJSON_002 = rule(
    "TRIALJSON-002", ERROR, "trial.json breaks its JSON Schema",
    fix="copy the trial.json the harness wrote (schema: trainmark/format/schema/trial.schema.json)",
    why="The schema names every field readers rely on and its type; a file that breaks it was not written by the "
    "harness unchanged. Valid does not mean true (TRIALJSON-003 compares the figures).",
    bad="\"train_time_s\": \"fast\"",
    good="\"train_time_s\": 131.2", module=__name__)
TRIALJSON_003 = rule(
    "TRIALJSON-003", ERROR, "trial.json disagrees with the figures recomputed from the MLLOG",
    fix="never edit trial.json: it must state what result_<k>.txt shows (times within 0.05 s)",
    why="Scores come from the MLLOG, but reports and readers show trial.json; a summary claiming other figures than "
    "the logs is an edited summary. It cannot tell whether the logs themselves are true.",
    bad="trial.json train_time_s 90.0, MLLOG windows 131.2 s",
    good="131.2 in both (within 0.05 s)", module=__name__)

TIME_TOLERANCE_S = 0.05      # as the MLLOG's own summary (docs/result-format.md)
ENERGY_TOLERANCE = 0.005     # relative, or 1 J


@lru_cache(maxsize=1)
def _schema() -> dict:
    return harness_schema("trial.schema.json")


def check_trial_json(trial_json: JsonFile, record: TrialRecord | None, names: dict[str, str | None],
                     rules: BenchmarkRules, findings: Findings) -> dict | None:
    """The validated summary, or None after a finding."""
    rel, summary = trial_json.rel, trial_json.value
    trial_json.problems.replay(findings, content=TRIALJSON_001)
    if summary is None or not schema_findings(summary, _schema(), rel, TRIALJSON_002, findings):
        return None
    if record is not None:
        for field, said, recomputed in _disagreements(summary, record, names, rules):
            findings.add(TRIALJSON_003, rel, f"{rel}: {field} is {said!r}, the logs ({record.rel}) give "
                         f"{recomputed!r}", expected=recomputed, seen=said)
    return summary


def _disagreements(s: dict, r: TrialRecord, names: dict[str, str | None], rules: BenchmarkRules):
    logged = r.value(mllog.TRIAL_RESULT)
    logged = logged if isinstance(logged, dict) else {}
    exact = {"trial": r.trial, "seed": r.value(mllog.SEED), "status": logged.get("status"), "epochs": r.epochs_trained,
             "rules_version": r.value(mllog.RULES_VERSION), **{k: v for k, v in names.items() if v}}
    for field, want in exact.items():
        if want is not None and s.get(field) != want:
            yield field, s.get(field), want
    if "flops_per_step" in s and mllog.FLOPS_PER_STEP in r.points and s["flops_per_step"] != r.value(
            mllog.FLOPS_PER_STEP):
        yield "flops_per_step", s["flops_per_step"], r.value(mllog.FLOPS_PER_STEP)  # the count the harness logged
    if "precision_used" in s and s["precision_used"] != r.value(mllog.PRECISION):
        yield "precision_used", s["precision_used"], r.value(mllog.PRECISION)
    if mllog.FORMAT_VERSION in r.points and s.get("format_version") != r.value(mllog.FORMAT_VERSION):
        yield "format_version", s.get("format_version"), r.value(mllog.FORMAT_VERSION)  # code checks hinge on it
    logged_framework = r.value(mllog.FRAMEWORK) if mllog.FRAMEWORK in r.points else "pytorch"
    if "framework" in s and s["framework"] != logged_framework:
        yield "framework", s["framework"], logged_framework
    if not _close(s["final_metric"], r.final_metric, 5.001e-5):
        yield "final_metric", s["final_metric"], r.final_metric
    for field in ("train_time_s", "total_time_s", "eval_time_s"):
        if not _close(s[field], getattr(r, field), TIME_TOLERANCE_S):
            yield field, s[field], getattr(r, field)
    for field in ("train_energy_j", "total_energy_j"):
        want = getattr(r, field)
        if not _close(s[field], want, max(1.0, ENERGY_TOLERANCE * abs(want or 0))):
            yield field, s[field], want
    hp = s["hparams"]
    for key, value in hyperparameters(r, rules).items():
        if key in hp and (type(hp[key]) is not type(value) or hp[key] != value):
            yield f"hparams.{key}", hp[key], value


def _close(said: Any, want: Any, tolerance: float) -> bool:
    """Both unknown, or both finite numbers within ``tolerance``."""
    if said is None or want is None:
        return said is None and want is None
    if isinstance(said, bool) or not isinstance(said, (int, float)) or not math.isfinite(said):
        return False
    return abs(float(said) - float(want)) <= tolerance
