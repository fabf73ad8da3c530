"""Curve conformity (CURVE-*): does each trial's metric, epoch by epoch, stay inside the reference band?

The rules' ``curve_band`` carries, per reference implementation (the PyTorch reference's id, or
``id@framework`` for a twin: ``reference_code.implementation_of``), global batch size and precision,
the lowest and highest metric the calibration trials reached after each epoch, and a tolerance
in the metric's own unit. A trial of the closed division (which must train the reference
implementation) whose metric leaves that band by more than the tolerance gets one finding, at
the first epoch where it does: ``CURVE-001`` (warning) while the rules' ``severity`` is
``warning``, ``CURVE-002`` (error) once it is ``error``. Open-division models are not the
reference implementation and have no band; batch sizes and precisions the calibration did not
use are not judged (CONVERGE-002 already says so for batch sizes).
"""
from __future__ import annotations

from trainmark.checker.checks.judgement import Judgement
from trainmark.checker.read.evidence import BenchmarkEvidence
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.format import mllog
from trainmark.rules.convergence import band_for

CURVE_001 = rule(
    "CURVE-001", WARNING, "a trial's metric leaves the reference band of the calibration trials by more than the "
    "rules' tolerance",
    fix="train the reference recipe unchanged; if the run did, nothing: the band is the range of the calibration "
    "trials (docs/calibration.md), and a new seed can fall outside it by chance, most often in a mid-schedule epoch",
    why="A closed trial trains the reference recipe, so its metric after each epoch should lie within the calibration "
    "trials' band; leaving it points to a changed recipe or data. Statistical: a new seed falls below the lowest of "
    "10 calibration trials at a given epoch about 1 time in 11 (the tolerance absorbs most of it), so it stays a "
    "warning while the rules say so; it cannot prove the cause.",
    bad="top1 0.60 after epoch 2 where the band is 0.78..0.84",
    good="every epoch inside the band plus tolerance", module=__name__)
CURVE_002 = rule(
    "CURVE-002", ERROR, "a trial's metric leaves the reference band by more than the tolerance (the rules enforce the "
    "band)",
    fix="train the reference recipe unchanged; the rules' curve_band says severity: error",
    why="The same test as CURVE-001 once the rules make the band binding (severity: error). It cannot prove the cause, "
    "only that the curve is not the reference's.",
    bad="a curve leaving the band by more than the tolerance",
    good="a curve inside it", module=__name__)

RULE_OF_SEVERITY = {"warning": CURVE_001, "error": CURVE_002}


def outside(metric: float, low: float, high: float) -> float:
    """How far ``metric`` lies outside [low, high] (0 inside)."""
    return max(low - metric, metric - high, 0.0)


def check_curves(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    records, rules, division = judged.ordered, judged.rules, judged.division
    spec = rules.data.get("curve_band")
    if not spec or division != "closed":
        return
    tolerance = float(spec["tolerance"])
    rule_id = RULE_OF_SEVERITY[spec.get("severity", "warning")]
    for record in records:
        band = band_for(rules, record.value("global_batch_size"), record.value(mllog.PRECISION),
                        record.value(mllog.FRAMEWORK))
        if not band:
            continue
        left = [(ev, band[ev.epoch]) for ev in record.evals
                if type(ev.epoch) is int and ev.epoch in band and isinstance(ev.accuracy, (int, float))
                and outside(float(ev.accuracy), *band[ev.epoch]) > tolerance]
        if not left:
            continue
        ev, (low, high) = left[0]
        side = "above" if ev.accuracy > high else "below"
        findings.add(rule_id, record.rel,
                     f"trial {record.trial}: {rules.metric['name']} {ev.accuracy:.4f} after epoch {ev.epoch} is "
                     f"{side} the reference band [{low:.4f}, {high:.4f}] by more than the tolerance {tolerance:g}"
                     + (f" ({len(left)} epochs out of the band)" if len(left) > 1 else ""),
                     line=ev.accuracy_line, expected="within [{:.4f}, {:.4f}]".format(
                         *clipped(low - tolerance, high + tolerance, rules.metric.get("range"))),
                     seen=f"{ev.accuracy:.4f}")


def clipped(low: float, high: float, metric_range) -> tuple[float, float]:
    """A band widened by the tolerance, held inside the metric's range (a WER is never below 0, an accuracy
    never above 1); an end the rules leave unbounded (None) is not clipped."""
    lo, hi = (metric_range if isinstance(metric_range, (list, tuple)) and len(metric_range) == 2 else (None, None))
    return (low if lo is None else max(low, float(lo))), (high if hi is None else min(high, float(hi)))
