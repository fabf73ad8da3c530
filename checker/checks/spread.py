"""A score ranks systems only if the trials agree: a train-time CV above the rules' bound is a warning.

The finding names the likely cause from the data the harness recorded: other processes using
the CPUs during the trials (``other_cpu_load_pct`` in trial.json, validated against its schema),
or a spread of epochs-to-target (a target met early by one seed and late by another).
"""
from __future__ import annotations

from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import WARNING, rule
from trainmark.rules.ruleset import BenchmarkRules

SPREAD_001 = rule(
    "SPREAD-001", WARNING, "the trials' train times vary more than the rules' max_train_time_cv (the score ranks "
    "systems poorly)",
    fix="rerun on a quiet machine (the finding names other load seen during the trials) or ask for a recipe whose "
    "epochs-to-target agree across seeds",
    why="A score ranks systems only if its trials agree; a train-time CV above the rules' bound means the mean says "
    "little. The finding names the likely cause (other CPU load, spread of epochs to target); it cannot prove the "
    "cause.",
    bad="train times 100, 180, 95, 210, 120 s",
    good="train times within the rules' CV", module=__name__)

BUSY_PCT = 10.0   # other processes using more than this share of the CPUs slow a 2-core trial visibly


def check_spread(records: list[TrialRecord], cv: float | None, other_load: dict[int, float | None],
                 folder_rel: str, rules: BenchmarkRules, findings: Findings) -> None:
    bound = rules.scoring.get("max_train_time_cv")
    if bound is None or cv is None or cv <= bound:
        return
    converged = [r for r in records if r.converged]
    epochs = [r.epochs_trained for r in converged]
    causes = []
    busy = {k: v for k, v in other_load.items() if v is not None and v > BUSY_PCT}
    if busy:
        causes.append("other processes used " + ", ".join(f"{v:.0f}% (trial {k})" for k, v in sorted(busy.items()))
                      + " of the CPUs")
    if epochs and max(epochs) - min(epochs) > 2:
        causes.append(f"epochs to target ranged from {min(epochs)} to {max(epochs)}")
    elif epochs and max(epochs) != min(epochs):
        causes.append(f"epochs to target {min(epochs)} to {max(epochs)}")
    if not any(v is not None for v in other_load.values()):
        causes.append("the trials did not record other load (result written before trainmark recorded it)")
    findings.add(SPREAD_001, folder_rel, f"train-time coefficient of variation {cv:.3f} is above the rules' "
                 f"{bound}; likely cause: {'; '.join(causes) or 'not visible in the data'}",
                 expected=f"<= {bound}", seen=round(cv, 3))
