"""Rules over all trials of a benchmark: numbering, count, seeds, target, hyperparameters."""
from __future__ import annotations

from trainmark.checker.findings import Findings
from trainmark.checker.trial_record import TrialRecord
from trainmark.rules import convergence
from trainmark.rules.ruleset import BenchmarkRules


def check_numbering(trials: list[int], folder_rel: str, rules: BenchmarkRules | None, findings: Findings) -> None:
    """Trials are 1..n without gaps, and n is the rules' trial count."""
    present = set(trials)
    expected_count = int(rules.trials) if rules is not None else 0
    for k in range(1, max(max(present, default=0), expected_count) + 1):
        if k not in present:
            findings.add("TRIAL-001", f"{folder_rel}/result_{k}.txt".lstrip("/"), f"trial {k} is missing",
                         expected=f"result_{k}.txt and trial_{k}/", seen="missing")
    if rules is not None and len(present) != int(rules.trials):
        findings.add("TRIAL-002", folder_rel, f"{len(present)} trials; the rules of {rules.name} ask for "
                     f"{rules.trials}", expected=rules.trials, seen=len(present))


def check_seeds(records: list[TrialRecord], findings: Findings) -> None:
    first_with: dict[int, TrialRecord] = {}
    for rec in records:
        seed = rec.value("seed")
        if type(seed) is not int:  # the compliance rules report missing and non-integer seeds
            continue
        if seed in first_with:
            other = first_with[seed]
            findings.add("SEED-002", rec.rel, f"trial {rec.trial} uses seed {seed}, like trial {other.trial} "
                         f"({other.rel} line {other.line_of('seed')})", line=rec.line_of("seed"),
                         expected="a seed no other trial used", seen=seed)
        else:
            first_with[seed] = rec


def check_targets(records: list[TrialRecord], folder_rel: str, rules: BenchmarkRules, findings: Findings) -> None:
    missed = [r for r in records if not r.converged]
    for rec in missed:
        findings.add("TARGET-002", rec.rel, f"trial {rec.trial} ended at {rules.metric['name']} "
                     f"{rec.final_metric!r}; the target is {rules.target}", line=rec.evals[-1].accuracy_line
                     if rec.evals else None, expected=f"{'>=' if rules.higher_is_better else '<='} {rules.target}",
                     seen=rec.final_metric)
    allowed = int(rules.scoring["max_not_converged"])
    if len(missed) > allowed:
        findings.add("TARGET-003", folder_rel, f"{len(missed)} trials missed the target "
                     f"({', '.join(str(r.trial) for r in missed)}); the rules allow {allowed}",
                     expected=f"at most {allowed}", seen=len(missed))


def hyperparameters(record: TrialRecord, rules: BenchmarkRules) -> dict[str, object]:
    """The hyperparameters a trial logged: every key the rules name, and every opt_* key."""
    return {k: v.value for k, v in record.points.items() if k in rules.hyperparameters or k.startswith("opt_")}


def check_hyperparameters(record: TrialRecord, rules: BenchmarkRules, division: str, findings: Findings) -> None:
    logged = hyperparameters(record, rules)
    for problem in rules.violations(logged, division):
        key = next((k for k in logged if problem.startswith((f"{k}=", f"{k}:"))), "")
        findings.add("HPARAM-001", record.rel, problem, line=record.line_of(key),
                     expected=_allowed(rules, key, division), seen=record.value(key))


def _allowed(rules: BenchmarkRules, key: str, division: str) -> str:
    spec = rules.hyperparameters.get(key)
    if spec is None:
        return f"one of {', '.join(sorted(rules.hyperparameters))}"
    rule = spec["closed"]
    if rule == "fixed":
        return f"{spec['default']!r} (fixed)"
    if isinstance(rule, dict) and "choices" in rule:
        return f"one of {rule['choices']}"
    if isinstance(rule, dict):
        return f"in [{rule['min']}, {rule['max']}]"
    return "any value"


def check_convergence(records: list[TrialRecord], folder_rel: str, rules: BenchmarkRules, division: str,
                      findings: Findings) -> None:
    """Closed division: epochs-to-target no faster than the reference convergence points allow."""
    if division != "closed":
        return
    converged = [r for r in records if r.converged]
    batch = {r.value("global_batch_size") for r in converged}
    if not converged or len(batch) != 1 or type(next(iter(batch))) is not int:
        return  # nothing to judge, or the batch size is already reported elsewhere
    points = rules.convergence["points"]
    if not points:
        return
    verdict = convergence.check(points, next(iter(batch)), [r.epochs for r in converged])
    if verdict.ok is None:
        findings.add("CONVERGE-002", folder_rel, verdict.message,
                     expected=f"a global batch size the rules measured ({[p['global_batch_size'] for p in points]})",
                     seen=next(iter(batch)))
    elif not verdict.ok:
        findings.add("CONVERGE-001", folder_rel, verdict.message,
                     expected=f">= {verdict.min_allowed:.2f} epochs (olympic mean)",
                     seen=f"{verdict.submission_mean:.2f}")
