"""MLPerf-logging compliance rules generated from a benchmark's rule file.

mlperf-logging's compliance engine (``mlp_compliance``) runs YAML rule files whose
checks are Python expressions. trainmark never writes such a file by hand: this module
derives it from ``rules/<version>/<benchmark>.yaml`` (target, metric range, epochs,
init limit, hyperparameter names, precisions), so a rule changes in one place only.
The checker never runs a rule file that came with a submission.

Each check ends with a comment naming the checker rule id it enforces
(``... # TARGET-001``): the engine quotes the failed test, and the checker turns that
back into a finding with the right id. Checks without a tag are ``MLLOG-003``.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.files import write_text_atomic
from trainmark.format import labels, layout, mllog
from trainmark.rules import admissible
from trainmark.rules.ruleset import BenchmarkRules

SEED_001 = rule(
    "SEED-001", ERROR, "a trial's seed is missing, repeated or not an integer",
    fix="log one 'seed' event per trial with an integer value",
    why="Each trial logs its seed once, as an integer, so trials can be told apart and reproduced; a missing, repeated "
    "or non-integer seed cannot. It proves only the seed record is wrong.",
    bad="seed logged as 'random'",
    good="one seed record with an integer value", module=__name__)
HPARAM_002 = rule(
    "HPARAM-002", ERROR, "a hyperparameter of the rules is not logged, or logged with several values",
    fix="log every hyperparameter the rules name, once",
    why="Hyperparameters are judged from the log; one not logged, or logged twice with different values, cannot be "
    "judged. It proves the record is missing or ambiguous, not the value used.",
    bad="no opt_base_learning_rate record",
    good="one record of every hyperparameter the rules name", module=__name__)
HPARAM_003 = rule(
    "HPARAM-003", ERROR, "the precision is not one the rules allow",
    fix="use a precision the rules list (fp32, amp-bf16 or amp-fp16 where 'amp' is allowed)",
    why="The rules list the precisions a benchmark may train in (fp32, or amp where allowed); another one changes the "
    "arithmetic the time is measured with. It checks the logged precision only.",
    bad="trainmark_precision 'fp8' under rules allowing fp32",
    good="trainmark_precision 'fp32'", module=__name__)
TARGET_001 = rule(
    "TARGET-001", ERROR, "run_stop's status disagrees with the last metric and the target",
    fix="status is 'success' exactly when the last evaluation reached the target",
    why="run_stop's status says whether the trial converged; it must be 'success' exactly when the last evaluation "
    "reached the target, or a missed trial would pass as converged. It proves the status and the metric disagree, not "
    "which is wrong.",
    bad="status 'success' with a last metric of 0.88 for target 0.91",
    good="status 'success' with 0.9134, 'aborted' with 0.88", module=__name__)
TARGET_004 = rule(
    "TARGET-004", ERROR, "a trial ran more epochs than the rules' max_epochs",
    fix="stop a trial at max_epochs",
    why="The rules cap the epochs a trial may train; beyond the cap the trial is another benchmark (more budget). It "
    "proves the count, from the logged epoch numbers.",
    bad="epoch_num 9 with max_epochs 8",
    good="at most 8 epochs", module=__name__)
TARGET_005 = rule(
    "TARGET-005", WARNING, "a trial went on after reaching the target",
    fix="stop the clock at the first evaluation that reaches the target",
    why="The clock should stop at the first evaluation that reaches the target; a trial that trains on is timed to "
    "its run_stop, so the extra epochs only slow its own score (a warning). It cannot say why the run went on.",
    bad="target reached at epoch 4, evaluations at epochs 5 and 6 follow",
    good="run_stop right after the epoch-4 evaluation", module=__name__)

# The allowed values come from the result format, spelled once (trainmark.format).
ENERGY_METHODS = labels.ENERGY_METHODS
TRIAL_STATUSES = labels.TRIAL_STATUSES
TRIAL_RESULT_FIELDS = mllog.TRIAL_RESULT_FIELDS
PRECISIONS = {family: list(values) for family, values in labels.PRECISIONS.items()}

# Occurrence failures ("Required EXACTLY_ONE occurrence of 'seed'") name a key, not a
# test: these keys report under their own rule id instead of MLLOG-002.
_KEY_RULES = {mllog.SEED: SEED_001, mllog.PRECISION: HPARAM_003}

_NUMBER = "type({x}) in (int, float) and math.isfinite({x})"
_ENERGY = "({x} is None or (" + _NUMBER + " and {x} >= 0))"
_TEXT = "isinstance(v['value'], str) and v['value'].strip() != ''"
_EPOCH_NUM = "v['metadata'].get('epoch_num')"


def precisions_allowed(rules: BenchmarkRules) -> list[str]:
    """The ``trainmark_precision`` values the rules' ``precisions`` allow."""
    return admissible.precision_labels(rules)  # what `trainmark run` refuses up front (rules/admissible.py)


def key_rules(rules: BenchmarkRules, division: str) -> dict[str, str]:
    """Rule id of each key whose occurrence count the generated file requires."""
    out = dict(_KEY_RULES)
    if division == "closed":
        out.update({name: HPARAM_002 for name in rules.hyperparameters})
    return out


def _key(name: str, req: str, checks: list[str] | None = None, *, post: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"NAME": name, "REQ": req}
    if checks:
        record["CHECK"] = checks
    if post:
        record["POST"] = post
    return {"KEY": record}


def _metric_checks(rules: BenchmarkRules) -> list[str]:
    lo, hi = rules.metric["range"]
    checks = [_NUMBER.format(x="v['value']") + "  # MLLOG-003 metric must be a finite number"]
    if lo is not None:
        checks.append(f"v['value'] >= {float(lo)!r}  # MLLOG-003 metric range")
    if hi is not None:
        checks.append(f"v['value'] <= {float(hi)!r}  # MLLOG-003 metric range")
    return checks


def _reached_expression(rules: BenchmarkRules) -> str:
    op = ">=" if rules.higher_is_better else "<="
    return "(" + _NUMBER.format(x="v['value']") + f" and v['value'] {op} {rules.target!r})"


def compliance_records(rules: BenchmarkRules, division: str) -> list[dict[str, Any]]:
    """The rule records (BEGIN, KEY..., END) for one benchmark in one division."""
    hparam_req = "EXACTLY_ONE" if division == "closed" else "OPTIONAL"
    records = [*_identity_records(rules, division), *_setting_records(rules, division), *_epoch_records(rules),
               *_result_records(rules)]
    records += [_key(name, hparam_req) for name in rules.hyperparameters]
    return records


def _identity_records(rules: BenchmarkRules, division: str) -> list[dict[str, Any]]:
    """The state the records share (BEGIN), the submission's identity and init_start."""
    return [
        {"BEGIN": {"CODE": (
            "s.update({'init_started': False, 'init_stopped': False, 'run_started': False, "
            "'run_stopped': False, 'first_init_start': None, 'epoch': 0, 'in_epoch': False, "
            "'in_eval': False, 'evals': 0, 'reached': False})"
        )}},
        _key(mllog.SUBMISSION_BENCHMARK, "EXACTLY_ONE", [f"v['value'] == {rules.name!r}"]),
        _key(mllog.SUBMISSION_DIVISION, "EXACTLY_ONE", [f"v['value'] == {division!r}"]),
        _key(mllog.SUBMISSION_ORG, "EXACTLY_ONE", [_TEXT]),
        _key(mllog.SUBMISSION_PLATFORM, "EXACTLY_ONE", [_TEXT]),
        _key(mllog.SUBMISSION_STATUS, "EXACTLY_ONE", [_TEXT]),
        _key(mllog.RULES_VERSION, "EXACTLY_ONE", [f"v['value'] == {rules.version!r}"]),
        _key(mllog.TRIAL, "EXACTLY_ONE", ["type(v['value']) is int and v['value'] >= 1  # MLLOG-004"]),
        _key(mllog.CACHE_CLEAR, "AT_LEAST_ONE", ["v['value'] is True"]),
        _key(mllog.INIT_START, "AT_LEAST_ONE", ["not s['init_stopped']", "not s['run_started']"],
             post="s['init_started'] = True; s['first_init_start'] = "
                  "ll.timestamp if s['first_init_start'] is None else s['first_init_start']"),
    ]


def _setting_records(rules: BenchmarkRules, division: str) -> list[dict[str, Any]]:
    """The trial's settings, init_stop (the untimed init's limit) and run_start."""
    init_ms = int(float(rules.max_init_seconds[division]) * 1000)
    return [
        _key(mllog.SEED, "EXACTLY_ONE", ["type(v['value']) is int  # SEED-001 seed must be an integer"]),
        _key(mllog.TRAIN_SAMPLES, "EXACTLY_ONE", ["type(v['value']) is int and v['value'] > 0"]),
        _key(mllog.EVAL_SAMPLES, "EXACTLY_ONE", ["type(v['value']) is int and v['value'] > 0"]),
        _key(mllog.PRECISION, "EXACTLY_ONE", [f"v['value'] in {precisions_allowed(rules)!r}  # HPARAM-003"]),
        _key(mllog.MODEL_FINGERPRINT, "EXACTLY_ONE", [
            "isinstance(v['value'], str) and len(v['value']) == 64 "
            "and all(c in '0123456789abcdef' for c in v['value'])"]),
        _key(mllog.PARAMETER_COUNT, "EXACTLY_ONE", ["type(v['value']) is int and v['value'] > 0"]),
        _key(mllog.FLOPS_PER_STEP, "EXACTLY_ONE", [
            "v['value'] is None or (" + _NUMBER.format(x="v['value']") + " and v['value'] > 0)"]),
        _key(mllog.ENERGY_METHOD, "EXACTLY_ONE", [f"v['value'] in {ENERGY_METHODS!r}"]),
        _key(mllog.INIT_STOP, "EXACTLY_ONE", [
            "s['init_started']", "not s['run_started']",
            f"ll.timestamp - s['first_init_start'] <= {init_ms}  # MLLOG-003 untimed init at most "
            f"{rules.max_init_seconds[division]} s in the {division} division"],
            post="s['init_stopped'] = True"),
        _key(mllog.RUN_START, "EXACTLY_ONE", ["s['init_stopped']"], post="s['run_started'] = True"),
    ]


def _epoch_records(rules: BenchmarkRules) -> list[dict[str, Any]]:
    """Epoch and evaluation windows, in their order, and the evaluations' metric."""
    every = int(rules.evaluation["every_epochs"])
    epoch_num = _EPOCH_NUM
    return [
        _key(mllog.EPOCH_START, "AT_LEAST_ONE", [
            "s['run_started'] and not s['run_stopped']",
            "not s['in_epoch'] and not s['in_eval']",
            f"{epoch_num} == s['epoch'] + 1",
            f"type({epoch_num}) is int and {epoch_num} <= {int(rules.max_epochs)}  # TARGET-004"],
            post=f"s['in_epoch'] = True; s['epoch'] = {epoch_num} if type({epoch_num}) is int else s['epoch'] + 1"),
        _key(mllog.EPOCH_STOP, "AT_LEAST_ONE", [
            "s['in_epoch']",
            f"{epoch_num} == s['epoch']",
            "'trainmark_train_energy_j' in v['metadata']",
            _ENERGY.format(x="v['metadata'].get('trainmark_train_energy_j')"),
            "type(v['metadata'].get('trainmark_samples')) is int and v['metadata']['trainmark_samples'] > 0"],
            post="s['in_epoch'] = False"),
        _key(mllog.EVAL_START, "AT_LEAST_ONE", [
            "not s['in_epoch'] and not s['in_eval']",
            f"{epoch_num} == s['epoch']",
            f"s['epoch'] % {every} == 0 or s['epoch'] == {int(rules.max_epochs)}  "
            f"# MLLOG-003 evaluate every {every} epoch(s) and after the last"],
            post="s['in_eval'] = True"),
        _key(mllog.EVAL_ACCURACY, "AT_LEAST_ONE", [
            "s['in_eval']",
            f"{epoch_num} == s['epoch']",
            *_metric_checks(rules),
            "not s['reached']  # TARGET-005 an evaluation after the target was reached"],
            post="s['evals'] += 1; s['reached'] = s['reached'] or " + _reached_expression(rules)),
        _key(mllog.EVAL_STOP, "AT_LEAST_ONE", [
            "s['in_eval']",
            f"{epoch_num} == s['epoch']",
            "'trainmark_eval_energy_j' in v['metadata']",
            _ENERGY.format(x="v['metadata'].get('trainmark_eval_energy_j')")],
            post="s['in_eval'] = False"),
    ]


def _result_records(rules: BenchmarkRules) -> list[dict[str, Any]]:
    """The logged trial summary and run_stop (its status agrees with the target being reached)."""
    return [
        _key(mllog.TRIAL_RESULT, "EXACTLY_ONE", [
            "isinstance(v['value'], dict)",
            f"set({TRIAL_RESULT_FIELDS!r}) <= set(v['value'])",
            f"v['value'].get('status') in {TRIAL_STATUSES!r}"]),
        _key(mllog.RUN_STOP, "EXACTLY_ONE", [
            "s['run_started']",
            "not s['in_epoch'] and not s['in_eval']",
            "v['metadata'].get('status') in ['success', 'aborted']",
            "(v['metadata'].get('status') == 'success') == s['reached']  # TARGET-001 status 'success' "
            f"exactly when an evaluation reached the target {rules.target!r}"],
            post="s['run_stopped'] = True"),
    ]


def compliance_yaml(rules: BenchmarkRules, division: str) -> str:
    if division not in layout.DIVISIONS:
        raise ValueError(f"division must be 'closed' or 'open', not {division!r}")
    header = (f"# Generated by trainmark.checker.mlperf.compliance_rules from {rules.name} rules {rules.version} "
              f"({division} division). Do not edit: change the rule file.\n")
    return header + yaml.safe_dump(compliance_records(rules, division), sort_keys=False, width=1000)


def write_compliance_file(rules: BenchmarkRules, division: str, folder: Path) -> Path:
    """Write the generated rules under ``folder`` (named by content hash) and return the path."""
    text = compliance_yaml(rules, division)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = Path(folder) / f"{rules.name}-{rules.version}-{division}-{digest}.yaml"
    if not path.exists():
        write_text_atomic(path, text)
    return path
