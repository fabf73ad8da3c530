"""Re-evaluation: a trial's saved weights scored again and judged against its own logged metric. REEVAL-001..005.

A log can say any metric; the weights a trial saved either reach it or they do not. The checker does not build
models or read evaluation data: it is handed an ``Evaluator`` (as it is handed a reference builder), which
``trainmark.harness.reevaluate.Reevaluation`` implements, and gives it the bytes of a trial's model.safetensors
read through the safe reader. What it judges here: the re-measured metric against the trial's own logged final
metric at the tolerance its rules give (REEVAL-001), a converged trial's weights against the target (REEVAL-002).

Which trials: ``EVERY`` (``check --reevaluate``), ``NONE`` (``--no-reevaluate``), or by default ``ONE_PER_MINI``:
one trial of each mini benchmark folder, drawn at random when the check runs (``secrets``, so a forger cannot
know which trial to leave honest), when the benchmark's evaluation data is found (else REEVAL-005, an info
saying why it was skipped). A full-size benchmark is re-evaluated only when asked: an hour per trial on a CPU.

What this cannot prove: the precision a trial trained in. Autocast (amp-bf16) keeps fp32 master weights, so
weights trained in bf16 score the same in fp32 (resnet-mini's example: logged 0.9199 under amp, 0.9202 in fp32,
within the tolerance): a trial relabelled fp32 in every log and trial.json passes, as a consistently forged
system description does. The precision stays the submitter's word; WORK-002's bound is the claimed precision's.
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Callable, Protocol

from trainmark.checker.read.evidence import BenchmarkEvidence
from trainmark.checker.read.safefs import Missing, UnsafeEntry
from trainmark.checker.read.safetensors_header import DTYPES, HeaderError
from trainmark.checker.read.weights import TooLarge
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, INFO, WARNING, rule
from trainmark.errors import UserError
from trainmark.format import layout, mllog
from trainmark.rules.reference_structures import shipped
from trainmark.rules.ruleset import BenchmarkRules, reevaluation

REEVAL_001 = rule(
    "REEVAL-001", ERROR, "a trial's saved weights, re-evaluated, do not give its logged final metric "
    "(beyond the tolerance its rules state)",
    why="the weights a trial saved are scored again on the rules' evaluation data with the model the rules name; "
        "a metric further from the trial's own logged one than the evaluation noise the rules measured means the "
        "log or the weights are not what ran. It cannot prove the weights came from this trial's training in "
        "the logged time (another honest run's weights of the same quality re-measure to their own metric)",
    fix="submit each trial's model.safetensors as the harness wrote it after the trial's last evaluation",
    bad="trial_3/model.safetensors zeroed, or result_3.txt's last eval_accuracy raised by 0.0019",
    good="the weights the harness saved, whose re-evaluation gives the logged metric exactly", module=__name__)
REEVAL_002 = rule(
    "REEVAL-002", ERROR, "a trial logged as converged whose saved weights, re-evaluated, miss the quality target",
    why="a converged trial's weights must reach the target when scored again; weights that miss it did not "
        "produce the logged convergence",
    fix="submit the weights that reached the target, or report the trial as not converged",
    bad="a converged trial whose weights re-measure at 0.10 top-1 against a 0.91 target",
    good="weights that re-measure at or beyond the target", module=__name__)
REEVAL_003 = rule(
    "REEVAL-003", WARNING, "an open-division trial's model is not the reference: it cannot be re-evaluated",
    why="only the models the rules name are ever run by the checker, never a submission's code, so an open "
        "model's weights are not scored again; its metric rests on the other evidence",
    fix="nothing to fix: a reviewer re-evaluates the recorded model code by hand",
    bad="an open trial.json naming model mynet:build", good="an open trial of the reference model",
    module=__name__)
REEVAL_004 = rule(
    "REEVAL-004", ERROR, "a trial's weights cannot be re-evaluated: missing, unreadable, or not the tensors "
    "of the model the rules name",
    why="weights that do not load into the model the rules name cannot be the weights of a trial of it",
    fix="submit each trial's model.safetensors as the harness wrote it (the reference model's tensors)",
    bad="a model.safetensors whose fc.weight is 7x3, or a pickle under that name",
    good="the reference's tensors, names and shapes as structure.json lists them", module=__name__)
REEVAL_005 = rule(
    "REEVAL-005", INFO, "a benchmark's trials were not re-evaluated (no evaluation data here, or a full-size "
    "benchmark without --reevaluate)",
    why="by default one trial of every mini benchmark is re-evaluated when the benchmark's data is found; this says "
        "that none was, and why, so a PASS is not read as covering the weights",
    fix="install the benchmark's data (`trainmark data`) or pass --data-dir [BENCHMARK=]DIR; --reevaluate "
        "re-evaluates every trial, full-size ones included",
    bad="ds2-mini checked on a machine without data/ds2-mini", good="the rules' data found and checked",
    module=__name__)

EVERY, ONE_PER_MINI, NONE = "every", "one-per-mini", "none"
WEIGHTS_CAP = 8 * 1024 ** 3  # a full-size model's safetensors (the largest reference's is under 1 GiB)


class Measured(Protocol):
    """What an evaluator answers for one trial's weights."""
    metric: float | None     # the re-measured metric (None: not measured)
    seconds: float           # loading and evaluating these weights (model and data built once, not counted)
    refused: str | None      # why the weights could not be evaluated (not the model's tensors, not safetensors)


class Evaluator(Protocol):
    """Scores weights with the model the trusted rules name; trainmark.harness.reevaluate.Reevaluation."""

    def data_problem(self, rules: BenchmarkRules) -> str | None:
        """Why the benchmark's evaluation data cannot be used here (missing, not the rules' checksums), or None."""

    def measure(self, rules: BenchmarkRules, framework: object, precision: object, weights: bytes) -> Measured:
        """The metric of ``weights`` (a model.safetensors' bytes) for a trial that logged ``framework`` and
        ``precision`` (logged values only select among the evaluators the rules name, never code)."""


@dataclass
class Reevaluate:
    """What ``check`` re-evaluates: ``scope`` EVERY, ONE_PER_MINI or NONE, through ``evaluator``; ``draw(n)``
    picks the one trial of ``n`` (default: ``secrets.randbelow``, unknowable before the check runs)."""
    evaluator: Evaluator
    scope: str = ONE_PER_MINI
    draw: Callable[[int], int] = secrets.randbelow


ReadWeights = Callable[[str, int], bytes]   # (model.safetensors, most bytes of tensors) -> its bytes (read layer)
Claims = tuple[object, object, object]      # (framework, precision, model) a trial claims


def check_benchmark(result, rules: BenchmarkRules, claims: dict[int, Claims], read_weights: ReadWeights,
                    plan: Reevaluate, findings: Findings, notes: list[str]) -> None:
    """Re-evaluate the trials of one checked trainmark benchmark folder (``result``: its BenchmarkResult) that
    ``plan`` selects, from what each trial claims (``trial_claims`` of its evidence) and its weights, read by
    ``read_weights`` (``read/weights.py``); findings join ``findings``, the note saying what was measured joins
    ``notes``."""
    if plan.scope == NONE or not result.trials:
        return
    try:
        _check_benchmark(result, rules, claims, read_weights, plan, findings, notes)
    except UserError as exc:  # a reference that cannot be built here: an error only when --reevaluate asked
        if plan.scope == EVERY:
            raise
        findings.add(REEVAL_005, result.path, f"{result.path or '.'}: not re-evaluated: {exc}",
                     expected="a reference this checker can build", seen="not re-evaluated")


def _check_benchmark(result, rules: BenchmarkRules, claims_of: dict[int, Claims], read_weights: ReadWeights,
                     plan: Reevaluate, findings: Findings, notes: list[str]) -> None:
    where = result.path or "."
    if plan.scope == ONE_PER_MINI and rules.data.get("size") != "mini":
        findings.add(REEVAL_005, result.path, f"{where}: a full-size benchmark's trials are re-evaluated only with "
                     "--reevaluate (an evaluation pass over its full evaluation set per trial)",
                     expected="--reevaluate", seen="not re-evaluated")
        return
    trials = result.trials if plan.scope == EVERY else [result.trials[plan.draw(len(result.trials))]]
    measured, problem = [], None
    for trial in trials:
        claims = claims_of.get(trial["trial"], (None, None, None))
        if _not_the_reference(result, trial, claims[2], rules, findings):
            continue
        problem = problem or plan.evaluator.data_problem(rules)
        if problem is not None:
            if plan.scope == EVERY:
                raise UserError(problem)
            findings.add(REEVAL_005, result.path, f"{where}: not re-evaluated: {problem}",
                         expected="the rules' evaluation data", seen="not found")
            return
        outcome = _reevaluate_trial(result, trial, claims, rules, read_weights, plan.evaluator, findings)
        if outcome is not None and outcome.metric is not None:
            measured.append((trial, outcome))
    notes.append(_note(where, rules, measured, plan.scope))


def _note(where: str, rules: BenchmarkRules, measured: list, scope: str) -> str:
    """What was re-measured, at which tolerance, and the cost per trial."""
    allowed = reevaluation(rules)
    flag = "--reevaluate" if scope == EVERY else "re-evaluation (one trial drawn at random)"
    if not measured:
        return f"{flag} {where}: no trial could be re-evaluated (see the REEVAL findings)"
    pairs = ", ".join(f"{t['trial']}: {_value(t.get('final_metric'))} -> {_value(m.metric)}" for t, m in measured)
    per_trial = sum(m.seconds for _, m in measured) / len(measured)
    return (f"{flag} {where}: {rules.metric['name']} logged -> re-measured, trial by trial: {pairs}; "
            f"tolerance {allowed['tolerance']:g} ({allowed['source']}); {per_trial:.2f} s per trial")


def _value(x) -> str:
    return f"{x:.6g}" if isinstance(x, (int, float)) else "none"


def _trial_rel(result, k: int) -> str:
    return "/".join(p for p in (result.path, layout.trial_dir(k)) if p)


def _not_the_reference(result, trial: dict, model: object, rules: BenchmarkRules, findings: Findings) -> bool:
    """REEVAL-003 for an open trial whose model is not the reference (it is never run); True then."""
    if result.division != "open" or model in (None, rules.reference_model["id"]):
        return False
    k = trial["trial"]
    findings.add(REEVAL_003, _trial_rel(result, k), f"trial {k}'s model {model!r} is not the reference "
                 f"{rules.reference_model['id']!r}: it cannot be re-evaluated (only the models the rules name are "
                 "ever run)", expected=rules.reference_model["id"], seen=str(model))
    return True


def _reevaluate_trial(result, trial: dict, claims: Claims, rules: BenchmarkRules, read_weights: ReadWeights,
                      evaluator: Evaluator, findings: Findings) -> Measured | None:
    """One trial's weights evaluated again and judged; the measurement, or None when none could be made."""
    k, (framework, precision, _) = trial["trial"], claims
    weights_rel = f"{_trial_rel(result, k)}/{layout.MODEL_FILE}"
    try:
        weights = _read_weights(read_weights, weights_rel, rules)
    except (Missing, UnsafeEntry, HeaderError) as exc:
        findings.add(REEVAL_004, weights_rel, f"trial {k} cannot be re-evaluated: {getattr(exc, 'message', exc)}",
                     expected=layout.MODEL_FILE, seen="unreadable")
        return None
    outcome = evaluator.measure(rules, framework, precision, weights)
    if outcome.refused is not None:
        findings.add(REEVAL_004, weights_rel, f"trial {k} cannot be re-evaluated: {outcome.refused}",
                     expected=f"the tensors of {rules.reference_model['id']}", seen="other tensors")
        return outcome
    trial["reevaluated_metric"] = outcome.metric
    judge(trial, outcome.metric, rules, weights_rel, findings)
    return outcome


def _read_weights(read_weights: ReadWeights, rel: str, rules: BenchmarkRules) -> bytes:
    """The bytes of a model.safetensors, never more than the reference's tensors take (the rules' shipped
    structure): its header's sizes are checked against the file and that size before anything else is read."""
    limit = reference_bytes(rules)
    try:
        return read_weights(rel, limit)
    except TooLarge as exc:
        raise HeaderError(REEVAL_004, f"{rel} declares {exc.declared:,} bytes of tensors, more than the {limit:,} "
                          f"of {rules.reference_model['id']}'s: not read", f"{exc.declared} bytes") from None


def reference_bytes(rules: BenchmarkRules) -> int:
    """The bytes of the reference model's parameters and buffers as the rules' shipped structure lists them
    (WEIGHTS_CAP when the rules ship none)."""
    desc = shipped(rules)
    if not isinstance(desc, dict):
        return WEIGHTS_CAP
    sizes = {name: size for name, size in DTYPES.values()}
    return sum(math.prod(t["shape"]) * sizes.get(t["dtype"], 8) for t in desc.get("parameters", []) +
               desc.get("buffers", []))


def trial_claims(ev: BenchmarkEvidence) -> dict[int, Claims]:
    """(framework, precision, model) of each trial as its MLLOG and trial.json say (None where they say nothing
    readable), from the benchmark's evidence: they only choose among the evaluators of the rules' own models."""
    claims = {}
    for k, result_file in ev.results.items():
        events = result_file.events or []
        summary = ev.trial_jsons[k].value if k in ev.trial_jsons else None
        model = summary.get("model") if isinstance(summary, dict) else None
        claims[k] = (mllog.first_value(events, mllog.FRAMEWORK), mllog.first_value(events, mllog.PRECISION), model)
    return claims


def judge(trial: dict, metric: float, rules: BenchmarkRules, rel: str, findings: Findings) -> None:
    """REEVAL-001: the re-measured metric further than the rules' tolerance from the trial's own logged final
    metric; REEVAL-002: a trial logged as converged whose weights miss the target."""
    allowed = reevaluation(rules)
    k, name, logged = trial["trial"], rules.metric["name"], trial.get("final_metric")
    if isinstance(logged, (int, float)) and math.isfinite(logged) and not abs(metric - logged) <= allowed["tolerance"]:
        findings.add(REEVAL_001, rel, f"trial {k}: its weights give {name} {_value(metric)}, its log says "
                     f"{_value(logged)}, more than the {allowed['tolerance']:g} its rules allow ({allowed['source']})",
                     expected=f"{_value(logged)} \u00b1 {allowed['tolerance']:g}", seen=_value(metric))
    if trial.get("converged") and not rules.reached(metric):
        findings.add(REEVAL_002, rel, f"trial {k} is logged as converged, but its weights give {name} "
                     f"{_value(metric)}, short of the target {rules.target:g}",
                     expected=f"{'>=' if rules.higher_is_better else '<='} {rules.target:g}", seen=_value(metric))
