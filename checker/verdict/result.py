"""The checker's result as data, and the versioned JSON Schema of ``trainmark check --json``.

Machines read the JSON: fields are only ever added within one schema version; a
rename or a change of meaning bumps ``REPORT_SCHEMA_ID``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from trainmark import __version__
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, INFO, WARNING

REPORT_SCHEMA_ID = "trainmark-check/1"


@dataclass
class Report:
    path: str                          # the checked folder, absolute
    level: str                         # submission | division | submitter | system | benchmark
    findings: Findings
    benchmarks: list = field(default_factory=list)   # BenchmarkResult
    systems: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.findings.has_errors() else 0

    def findings_under(self, rel: str) -> list:
        prefix = rel + "/" if rel else ""
        return [f for f in self.findings if not rel or f.file == rel or f.file.startswith(prefix)]

    def to_dict(self) -> dict[str, Any]:
        benchmarks = []
        for b in self.benchmarks:
            item = asdict(b)
            under = self.findings_under(b.path)
            item["errors"] = sum(f.severity == ERROR for f in under)
            item["warnings"] = sum(f.severity == WARNING for f in under)
            if item["errors"] and item.get("score"):
                item["score"] = withheld(item["score"], item["errors"])
            benchmarks.append(item)
        return _finite({
            "schema": REPORT_SCHEMA_ID,
            "trainmark_version": __version__,
            "path": self.path,
            "level": self.level,
            "passed": self.exit_code == 0,
            "exit_code": self.exit_code,
            "counts": {s: self.findings.count(s) for s in (ERROR, WARNING, INFO)},
            "findings": [f.to_dict() for f in self.findings],
            "systems": self.systems,
            "benchmarks": benchmarks,
            "notes": list(self.notes),
        })


# The figures a score is made of; over a benchmark with an error they are withheld (null), in every output.
SCORE_FIGURES = ("score_train_time_s", "mean_train_time_s", "ci95_train_time_s", "cv_train_time",
                 "mean_train_energy_j", "mean_total_energy_j", "mean_final_metric", "olympic_minutes", "score_minutes")


def withheld_reason(errors: int) -> str:
    """Why a benchmark shows no score, in every output (JSON, tables, CSV)."""
    return f"withheld: {errors} error(s) in this benchmark (see the findings)"


def withheld(score: dict, errors: int) -> dict:
    """``score`` with its figures null and the reason said: a time over a trial the checker failed is no result."""
    return {**score, **{k: None for k in SCORE_FIGURES if k in score}, "score_reason": withheld_reason(errors)}


def _finite(value: Any) -> Any:
    """The report with non-finite floats as null, so that it is always valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


_NUM = {"type": ["number", "null"]}
_STR = {"type": ["string", "null"]}

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://trainmark.dev/schema/check-report-1.json",
    "title": "trainmark check --json report, schema trainmark-check/1",
    "type": "object",
    "required": ["schema", "trainmark_version", "path", "level", "passed", "exit_code", "counts", "findings",
                 "systems", "benchmarks", "notes"],
    "properties": {
        "schema": {"const": REPORT_SCHEMA_ID},
        "trainmark_version": {"type": "string"},
        "path": {"type": "string"},
        "level": {"enum": ["submission", "division", "submitter", "system", "benchmark",
                           "archive"]},  # archive: one refused before unpacking (ARCHIVE-*)
        "passed": {"type": "boolean"},
        "exit_code": {"enum": [0, 1]},
        "counts": {"type": "object", "required": [ERROR, WARNING, INFO],
                   "additionalProperties": {"type": "integer", "minimum": 0}},
        "findings": {"type": "array", "items": {
            "type": "object",
            "required": ["rule", "severity", "file", "line", "message", "expected", "seen", "fix"],
            "properties": {
                "rule": {"type": "string", "pattern": "^[A-Z]+-[0-9]{3}$"},
                "severity": {"enum": [ERROR, WARNING, INFO]},
                "file": {"type": "string"},
                "line": {"type": ["integer", "null"], "minimum": 1},
                "message": {"type": "string"}, "expected": {"type": "string"},
                "seen": {"type": "string"}, "fix": {"type": "string"},
            },
        }},
        "systems": {"type": "array", "items": {
            "type": "object", "required": ["file", "system", "division"],
            "properties": {"file": {"type": "string"}, "system": {"type": "string"}, "division": _STR},
        }},
        "benchmarks": {"type": "array", "items": {
            "type": "object",
            "required": ["format", "path", "benchmark", "division", "submitter", "system", "rules_version",
                         "trials", "score", "errors", "warnings"],
            "properties": {
                "format": {"enum": ["trainmark", "mlperf"]},
                "path": {"type": "string"}, "benchmark": {"type": "string"},
                "division": _STR, "submitter": _STR, "system": _STR, "rules_version": _STR,
                "errors": {"type": "integer"}, "warnings": {"type": "integer"},
                "trials": {"type": "array", "items": {"type": "object"}},
                "score": {"oneOf": [
                    {"type": "object", "maxProperties": 0},
                    {"type": "object", "required": ["trials", "converged", "score_train_time_s", "score_reason",
                                                    "mean_train_time_s", "ci95_train_time_s", "cv_train_time",
                                                    "mean_train_energy_j", "energy_reason", "mean_final_metric"],
                     "properties": {"score_train_time_s": _NUM, "mean_train_time_s": _NUM,
                                    "mean_train_energy_j": _NUM, "mean_total_energy_j": _NUM,
                                    "mean_final_metric": _NUM, "cv_train_time": _NUM,
                                    "ci95_train_time_s": {"type": ["array", "null"], "items": {"type": "number"},
                                                          "minItems": 2, "maxItems": 2}}},
                    {"type": "object", "required": ["ruleset", "runs", "dropped", "max_dropped", "olympic_minutes",
                                                    "scaling_factor", "score_minutes", "score_reason"],
                     "properties": {"score_minutes": _NUM, "olympic_minutes": _NUM,
                                    "scaling_factor": {"type": "number"}}},
                ]},
            },
        }},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
}
