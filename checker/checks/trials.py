"""Rules over all trials of a benchmark: numbering, count, seeds, target, hyperparameters."""
from __future__ import annotations

from trainmark.checker.checks.judgement import Judgement
from trainmark.checker.mlperf.compliance_rules import HPARAM_003
from trainmark.checker.read.evidence import BenchmarkEvidence
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, INFO, WARNING, rule
from trainmark.format import layout, mllog
from trainmark.rules import admissible, convergence
from trainmark.rules.reference_code import implementation_of
from trainmark.rules.ruleset import BenchmarkRules

TRIAL_001 = rule(
    "TRIAL-001", ERROR, "a trial is missing",
    fix="submit trials 1..n without gaps, each with result_<k>.txt and trial_<k>/",
    why="The rules ask for a number of trials because one training's time is noisy; a missing trial leaves a score "
    "that could be a chosen subset. It proves the trial is absent, not why.",
    bad="result_1, result_2, result_4 (no 3)",
    good="result_1..5 and trial_1..5/", module=__name__)
TRIAL_002 = rule(
    "TRIAL-002", ERROR, "more trials than the rules ask for (a missing trial is TRIAL-001 alone)",
    fix="submit exactly the number of trials the rules' 'trials' field asks for",
    why="Submitting more trials than asked would let a submitter pick the fastest; the rules fix the count. It proves "
    "the extra trials exist, not that any was picked.",
    bad="7 trials where the rules ask for 5",
    good="exactly 5", module=__name__)
TRIAL_003 = rule(
    "TRIAL-003", ERROR, "a crashed or interrupted trial in the set of trials (never an allowed miss)",
    fix="rerun it: `trainmark run --resume` archives the failed trial under interrupted/ and trains it again",
    why="A crashed or interrupted trial is not a measured trial and is never one of the allowed misses; `--resume` "
    "reruns it and keeps the attempt visible. It proves the trial did not finish.",
    bad="trial 3 with status 'interrupted'",
    good="trial 3 rerun by --resume, its attempt under interrupted/", module=__name__)
SEED_002 = rule(
    "SEED-002", ERROR, "two trials used the same seed",
    fix="draw a distinct seed for every trial",
    why="Trials differ only by their seed; two trials with one seed are one training counted twice. It proves the "
    "seeds are equal, not that the runs were copies (WORK-004 looks at that).",
    bad="trials 2 and 4 both with seed 1234",
    good="a distinct seed per trial", module=__name__)
TARGET_002 = rule(
    "TARGET-002", WARNING, "a trial did not reach the quality target",
    fix="none needed if within scoring.max_not_converged: it is scored as the slowest trial",
    why="A trial that misses the quality target is scored as the slowest trial, within the allowance the rules give; a "
    "warning, since the score still stands. It proves only the last logged metric was short.",
    bad="trial 4 ends at 0.905 with target 0.91",
    good="every trial reaching 0.91", module=__name__)
TARGET_003 = rule(
    "TARGET-003", ERROR, "more trials missed the target than the rules allow: no score",
    fix="rerun the benchmark; at most scoring.max_not_converged trials may miss the target",
    why="Beyond scoring.max_not_converged misses the benchmark has no score: the time would be measured on runs that "
    "did not reach the quality asked. It proves the count, not the cause.",
    bad="3 of 5 trials miss the target, 1 allowed",
    good="at most 1 miss", module=__name__)
CONVERGE_001 = rule(
    "CONVERGE-001", ERROR, "closed division: epochs to target faster than the reference convergence allows",
    fix="train with the reference recipe within the closed division's limits; the rules' convergence points come from "
    "reference runs (see rules/<version>/<benchmark>.yaml, convergence)",
    why="Closed-division trials train the reference recipe, so their epochs to target follow the reference runs' "
    "distribution; converging faster than it allows points to a changed recipe or forged metrics. It is statistical: "
    "it cannot prove how the speed-up was made.",
    bad="every trial converging in 2 epochs where the reference needs 5 to 6",
    good="epochs to target within the reference's range", module=__name__)
CONVERGE_002 = rule(
    "CONVERGE-002", WARNING, "no reference convergence points at this global batch size: not verified",
    fix="use a batch size the rules measured, or ask for reference runs at yours",
    why="The rules have reference convergence points only at calibrated batch sizes; elsewhere epochs to target cannot "
    "be compared, so they are not verified (a warning). It proves nothing about the trials.",
    bad="global batch 200 with points at 128 and 256 only (where not interpolated)",
    good="global batch 256", module=__name__)
CONVERGE_003 = rule(
    "CONVERGE-003", ERROR, "closed division: a global batch size or implementation the rules have no reference "
    "convergence points for, outside the calibrated range: epochs to target cannot be judged",
    fix="use a batch size between the rules' calibrated ones (`trainmark rules show <benchmark>`, convergence), or "
    "submit to the open division; new points come from `trainmark calibrate` runs added to the rules",
    why="A closed result outside the calibrated range has no reference to be judged against, and an unverifiable "
    "closed result is not a closed result. It proves the setting is uncalibrated, not that convergence was wrong.",
    bad="closed run at global batch 4096, calibrated 64..512",
    good="global batch 256 (calibrated)", module=__name__)
CONVERGE_004 = rule(
    "CONVERGE-004", INFO, "the reference at this batch size is interpolated between two calibrated batch sizes (as "
    "MLPerf's RCP checker does)",
    fix="nothing to do: the finding says which points were interpolated",
    why="Between two calibrated batch sizes the reference is interpolated, as MLPerf's RCP checker does; the note says "
    "which points were used. It is informational: the interpolation is an estimate.",
    bad="global batch 192 between points at 128 and 256",
    good="global batch 256 (a calibrated point)", module=__name__)
HPARAM_001 = rule(
    "HPARAM-001", ERROR, "a hyperparameter value is not allowed in the division",
    fix="use a value the rules allow (`trainmark rules show <benchmark>`)",
    why="Each division allows certain hyperparameter values (closed: the reference's, open: a range); a value outside "
    "them is another benchmark. It checks the logged value, not that training used it.",
    bad="closed division with learning rate 0.5 where the rules fix 0.1",
    good="the rules' value", module=__name__)
HPARAM_004 = rule(
    "HPARAM-004", ERROR, "closed division: the trials of a benchmark differ in hyperparameters or precision",
    fix="run every trial with the same settings; only the seed differs (`--resume` refuses other settings)",
    why="In the closed division every trial repeats one setting; trials that differ are several experiments, not "
    "repetitions, and the score could pick among them. It compares the logged values only.",
    bad="trials 1-4 at batch 256, trial 5 at 512",
    good="the same settings in every trial", module=__name__)
HPARAM_005 = rule(
    "HPARAM-005", WARNING, "open division: the trials of a benchmark differ in hyperparameters or precision",
    fix="run every trial with the same settings, or submit the settings as separate results",
    why="In the open division the settings are free, but a score over trials with different settings mixes "
    "experiments; a warning. It compares the logged values only.",
    bad="trial 5 with another learning rate",
    good="one setting for all trials", module=__name__)


def check_numbering(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """Trials are 1..n without gaps, and n is the rules' trial count: one finding per problem, so a
    missing trial is TRIAL-001 alone, and TRIAL-002 names only trials beyond the rules' count."""
    trials, folder_rel, rules = sorted(ev.listing.results), ev.folder.rel, judged.rules
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


def check_seeds(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    records = judged.ordered
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


def check_targets(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    records, folder_rel, rules = judged.ordered, ev.folder.rel, judged.rules
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


def check_hyperparameters(record: TrialRecord, judged: Judgement, findings: Findings) -> None:
    """The logged hyperparameters judged by the function ``trainmark run`` refuses with (rules/admissible.py);
    in the open division a logged ``opt_*`` name no recipe reads is one too (the harness refuses it)."""
    rules, division = judged.rules, judged.division
    logged = hyperparameters(record, rules)
    found = admissible.hyperparameter_refusals(rules, logged, division)
    if division == "open":
        found += admissible.unread_names(rules, [k for k in logged if k not in rules.hyperparameters])
    for refusal in found:
        findings.add(ADMISSIBLE_CODES[refusal.kind], record.rel, refusal.message, line=record.line_of(refusal.key),
                     expected=refusal.allowed, seen=record.value(refusal.key))


def check_convergence(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """Closed division: epochs-to-target no faster than the reference convergence points allow.

    Each trial is judged against the reference at its own logged batch size: trials are grouped by
    ``global_batch_size`` and every group is checked, so a changed batch in one trial cannot hide
    the others (mixed settings are themselves a finding of ``check_same_settings``). A batch size
    outside the calibrated range, or an implementation without points, cannot be judged: an error
    (CONVERGE-003), since a closed result whose convergence nobody can verify is not a closed result.
    Only rules that carry no points at all (a full-size benchmark not yet calibrated) say so as a
    warning (CONVERGE-002): there the rules release, not the submitter, lacks the evidence.
    """
    records, folder_rel, rules, division = judged.ordered, ev.folder.rel, judged.rules, judged.division
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
    points = convergence.points_of(rules, implementation)
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


def implementations(rules: BenchmarkRules) -> set[str]:
    default = implementation_of(rules, None)
    return {p.get("implementation", default) for p in rules.convergence["points"]}


def trial_settings(record: TrialRecord, rules: BenchmarkRules) -> dict[str, object]:
    """What must be the same in every trial of a benchmark: hyperparameters and precision."""
    return {**hyperparameters(record, rules), mllog.PRECISION: record.value(mllog.PRECISION)}


def check_same_settings(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """Trials of one benchmark differ only in their seed: a mixed set is not one result."""
    records, rules, division = judged.ordered, judged.rules, judged.division
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


def check_trial_outcomes(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """A crashed or interrupted trial is not a result: it can never count as an allowed miss."""
    records = judged.ordered
    for rec in records:
        summary = rec.value(mllog.TRIAL_RESULT)
        status = summary.get("status") if isinstance(summary, dict) else None
        if status in ("crashed", "aborted"):
            error = summary.get("error") if isinstance(summary, dict) else None
            findings.add(TRIAL_003, rec.rel, f"trial {rec.trial} {status}" + (f": {error}" if error else "")
                         + "; rerun it (`trainmark run --resume` archives it and trains it again)",
                         line=rec.line_of(mllog.TRIAL_RESULT), expected="converged, not_converged or diverged",
                         seen=status)
