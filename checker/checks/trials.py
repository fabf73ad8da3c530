"""Rules over all trials of a benchmark: numbering, count, seeds, target, hyperparameters."""
from __future__ import annotations

from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.codes import (
    CONVERGE_001,
    CONVERGE_002,
    CONVERGE_003,
    CONVERGE_004,
    HPARAM_001,
    HPARAM_003,
    HPARAM_004,
    HPARAM_005,
    SEED_002,
    TARGET_002,
    TARGET_003,
    TRIAL_001,
    TRIAL_002,
    TRIAL_003,
)
from trainmark.checker.verdict.findings import Findings
from trainmark.format import layout, mllog
from trainmark.rules import admissible, convergence
from trainmark.rules.reference_code import implementation_of
from trainmark.rules.ruleset import BenchmarkRules


def check_numbering(trials: list[int], folder_rel: str, rules: BenchmarkRules | None, findings: Findings) -> None:
    """Trials are 1..n without gaps, and n is the rules' trial count: one finding per problem, so a
    missing trial is TRIAL-001 alone, and TRIAL-002 names only trials beyond the rules' count."""
    present = set(trials)
    expected_count = int(rules.trials) if rules is not None else 0
    asked = f"; the rules of {rules.name} ask for {rules.trials} trials" if rules is not None else ""
    for k in range(1, max(max(present, default=0), expected_count) + 1):
        if k not in present:
            findings.add(TRIAL_001, f"{folder_rel}/{layout.result_file(k)}".lstrip("/"), f"trial {k} is missing"
                         + asked, expected=f"{layout.result_file(k)} and {layout.trial_dir(k)}/", seen="missing")
    extra = sorted(k for k in present if k > expected_count)
    if rules is not None and extra:
        findings.add(TRIAL_002, folder_rel, f"trial(s) {', '.join(map(str, extra))} beyond the {rules.trials} "
                     f"the rules of {rules.name} ask for: every submitted trial counts, none may be left out",
                     expected=rules.trials, seen=len(present))


def check_seeds(records: list[TrialRecord], findings: Findings) -> None:
    first_with: dict[int, TrialRecord] = {}
    for rec in records:
        seed = rec.value(mllog.SEED)
        if type(seed) is not int:  # the compliance rules report missing and non-integer seeds
            continue
        if seed in first_with:
            other = first_with[seed]
            findings.add(SEED_002, rec.rel, f"trial {rec.trial} uses seed {seed}, like trial {other.trial} "
                         f"({other.rel} line {other.line_of('seed')})", line=rec.line_of(mllog.SEED),
                         expected="a seed no other trial used", seen=seed)
        else:
            first_with[seed] = rec


def check_targets(records: list[TrialRecord], folder_rel: str, rules: BenchmarkRules, findings: Findings) -> None:
    missed = [r for r in records if not r.converged]
    for rec in missed:
        findings.add(TARGET_002, rec.rel, f"trial {rec.trial} ended at {rules.metric['name']} "
                     f"{rec.final_metric!r}; the target is {rules.target}", line=rec.evals[-1].accuracy_line
                     if rec.evals else None, expected=f"{'>=' if rules.higher_is_better else '<='} {rules.target}",
                     seen=rec.final_metric)
    allowed = int(rules.scoring["max_not_converged"])
    if len(missed) > allowed:
        findings.add(TARGET_003, folder_rel, f"{len(missed)} trials missed the target "
                     f"({', '.join(str(r.trial) for r in missed)}); the rules allow {allowed}",
                     expected=f"at most {allowed}", seen=len(missed))


def hyperparameters(record: TrialRecord, rules: BenchmarkRules) -> dict[str, object]:
    """The hyperparameters a trial logged: every key the rules name, and every opt_* key."""
    return {k: v.value for k, v in record.points.items() if k in rules.hyperparameters or k.startswith("opt_")}


# the finding code of each kind of setting rules/admissible.py refuses (``trainmark run`` names them too)
ADMISSIBLE_CODES = {admissible.BATCH: CONVERGE_003, admissible.PRECISION: HPARAM_003,
                    admissible.HYPERPARAMETER: HPARAM_001, admissible.UNREAD: HPARAM_001}


def check_hyperparameters(record: TrialRecord, rules: BenchmarkRules, division: str, findings: Findings) -> None:
    """The logged hyperparameters judged by the function ``trainmark run`` refuses with (rules/admissible.py);
    in the open division a logged ``opt_*`` name no recipe reads is one too (the harness refuses it)."""
    logged = hyperparameters(record, rules)
    found = admissible.hyperparameter_refusals(rules, logged, division)
    if division == "open":
        found += admissible.unread_names(rules, [k for k in logged if k not in rules.hyperparameters])
    for refusal in found:
        findings.add(ADMISSIBLE_CODES[refusal.kind], record.rel, refusal.message, line=record.line_of(refusal.key),
                     expected=refusal.allowed, seen=record.value(refusal.key))


def check_convergence(records: list[TrialRecord], folder_rel: str, rules: BenchmarkRules, division: str,
                      findings: Findings) -> None:
    """Closed division: epochs-to-target no faster than the reference convergence points allow.

    Each trial is judged against the reference at its own logged batch size: trials are grouped by
    ``global_batch_size`` and every group is checked, so a changed batch in one trial cannot hide
    the others (mixed settings are themselves a finding of ``check_same_settings``). A batch size
    outside the calibrated range, or an implementation without points, cannot be judged: an error
    (CONVERGE-003), since a closed result whose convergence nobody can verify is not a closed result.
    Only rules that carry no points at all (a full-size benchmark not yet calibrated) say so as a
    warning (CONVERGE-002): there the rules release, not the submitter, lacks the evidence.
    """
    if division != "closed":
        return
    if not rules.convergence["points"]:
        if any(r.converged for r in records):
            findings.add(CONVERGE_002, folder_rel, f"the rules of {rules.name} {rules.version} carry no reference "
                         "convergence points yet: epochs to target are not verified",
                         expected="convergence points in the rules", seen="none")
        return
    groups: dict[tuple[str, int], list[TrialRecord]] = {}
    for r in records:
        batch = r.value("global_batch_size")
        if r.converged and type(batch) is int:  # a missing or non-integer batch is reported by HPARAM-002
            groups.setdefault((implementation_of(rules, r.value(mllog.FRAMEWORK)), batch), []).append(r)
    for (implementation, batch), group in sorted(groups.items()):
        where = f"trials {', '.join(str(r.trial) for r in group)}: " if len(groups) > 1 else ""
        _judge_group(implementation, batch, group, where, folder_rel, rules, findings)


def _judge_group(implementation: str, batch: int, group: list[TrialRecord], where: str, folder_rel: str,
                 rules: BenchmarkRules, findings: Findings) -> None:
    points = points_of(rules, implementation)
    if not points:
        findings.add(CONVERGE_003, folder_rel, where + f"no reference convergence points for {implementation}: "
                     "its epochs to target cannot be judged",
                     expected=f"points of {', '.join(sorted(implementations(rules)))}", seen=implementation)
        return
    refusal = admissible.batch_refusal(rules, batch, implementation)  # what `trainmark run` refuses up front
    if refusal is not None:
        findings.add(ADMISSIBLE_CODES[refusal.kind], folder_rel, where + refusal.message, expected=refusal.allowed,
                     seen=batch)
        return
    verdict = convergence.check(points, batch, [r.epochs_trained for r in group])
    sizes = sorted({p["global_batch_size"] for p in points})
    if verdict.reference is not None and verdict.reference.between is not None:
        a, b = verdict.reference.between
        findings.add(CONVERGE_004, folder_rel, where + f"reference at batch {batch} interpolated between the "
                     f"calibrated batch sizes {a} and {b}: mean {verdict.reference.mean:.2f} epochs, "
                     f"std {verdict.reference.std:.2f}", expected=f"calibrated sizes {sizes}", seen=batch)
    if not verdict.ok:
        findings.add(CONVERGE_001, folder_rel, where + verdict.message,
                     expected=f">= {verdict.min_allowed:.2f} epochs (olympic mean)",
                     seen=f"{verdict.submission_mean:.2f}")


def points_of(rules: BenchmarkRules, implementation: str) -> list[dict]:
    """The rules' convergence points of one implementation (a point without one is the PyTorch reference's)."""
    default = implementation_of(rules, None)
    return [p for p in rules.convergence["points"] if p.get("implementation", default) == implementation]


def implementations(rules: BenchmarkRules) -> set[str]:
    default = implementation_of(rules, None)
    return {p.get("implementation", default) for p in rules.convergence["points"]}


def trial_settings(record: TrialRecord, rules: BenchmarkRules) -> dict[str, object]:
    """What must be the same in every trial of a benchmark: hyperparameters and precision."""
    return {**hyperparameters(record, rules), mllog.PRECISION: record.value(mllog.PRECISION)}


def check_same_settings(records: list[TrialRecord], folder_rel: str, rules: BenchmarkRules, division: str,
                        findings: Findings) -> None:
    """Trials of one benchmark differ only in their seed: a mixed set is not one result."""
    if not records:
        return
    first = records[0]
    base = trial_settings(first, rules)
    rule = HPARAM_004 if division == "closed" else HPARAM_005
    for rec in records[1:]:
        mine = trial_settings(rec, rules)
        for key in sorted(base.keys() | mine.keys()):
            if key not in base or key not in mine or not _same(base[key], mine[key]):
                findings.add(rule, rec.rel, f"trial {rec.trial} logs {key} {mine.get(key)!r}, trial {first.trial} "
                             f"logged {base.get(key)!r}: every trial of a benchmark uses the same settings",
                             line=rec.line_of(key), expected=base.get(key), seen=mine.get(key))


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


def check_trial_outcomes(records: list[TrialRecord], findings: Findings) -> None:
    """A crashed or interrupted trial is not a result: it can never count as an allowed miss."""
    for rec in records:
        summary = rec.value(mllog.TRIAL_RESULT)
        status = summary.get("status") if isinstance(summary, dict) else None
        if status in ("crashed", "aborted"):
            error = summary.get("error") if isinstance(summary, dict) else None
            findings.add(TRIAL_003, rec.rel, f"trial {rec.trial} {status}" + (f": {error}" if error else "")
                         + "; rerun it (`trainmark run --resume` archives it and trains it again)",
                         line=rec.line_of(mllog.TRIAL_RESULT), expected="converged, not_converged or diverged",
                         seen=status)
