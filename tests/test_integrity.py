"""A submitter must not pass with a result the rules forbid (issue 16, items 5-8)."""
from __future__ import annotations

import json

import pytest
import synthetic

from trainmark.checker.check import CheckOptions, check_path
from trainmark.rules import get_rules

RULES = get_rules("resnet-mini")
BENCH = "closed/acme/results/sys1/resnet-mini"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())


def rules_of(report):
    return {f.rule for f in report.findings}


def too_fast(tmp_path):
    """Trials that reach the target after 3 epochs, under rules calibrated at batches 128 and 256 (every seed in
    epoch 5): the folder's benchmark and the options that check it against those rules."""
    root = synthetic.two_point_rules(tmp_path / "rules")
    rules = get_rules("resnet-mini", rules_root=root)
    plans = synthetic.default_plans(rules)
    for plan in plans:
        plan.metrics = plan.metrics[-3:]  # every trial reaches the target after 3 epochs
    synthetic.write_submission(tmp_path / "sub", rules, synthetic.tiny_reference_model(), plans=plans)
    return tmp_path / "sub" / BENCH, CheckOptions(rules_root=root, reference_builder=TINY.reference_builder)


def test_one_changed_batch_size_no_longer_hides_too_fast_trials(tmp_path):
    """The reported bypass: batch 255 in one trial made the convergence check return silently."""
    bench, options = too_fast(tmp_path)
    synthetic.edit_mllog(bench / "result_3.txt", "global_batch_size", lambda r: {**r, "value": 255})
    report = check_path(tmp_path / "sub", options)
    converge = [f for f in report.findings if f.rule == "CONVERGE-001"]
    assert any("trials 1, 2, 4, 5" in f.message for f in converge)
    assert any("trials 3:" in f.message and "at batch 255" in f.message for f in converge)  # 128..256: judged too
    mixed = [f for f in report.findings if f.rule == "HPARAM-004"]
    assert mixed and mixed[0].file == f"{BENCH}/result_3.txt" and mixed[0].severity == "error"
    assert report.exit_code == 1


def test_each_batch_size_is_judged_against_its_own_reference(tmp_path):
    """Two groups, both measured by the rules: each gets its own verdict."""
    bench, options = too_fast(tmp_path)
    for k in (4, 5):
        synthetic.edit_mllog(bench / f"result_{k}.txt", "global_batch_size", lambda r: {**r, "value": 1024})
    report = check_path(tmp_path / "sub", options)
    assert any(f.rule == "CONVERGE-001" and "trials 1, 2, 3" in f.message for f in report.findings)
    assert any(f.rule == "CONVERGE-003" and "trials 4, 5" in f.message for f in report.findings)


def test_mixed_precision_across_trials_is_an_error_in_closed(submission_copy):
    bench = submission_copy / BENCH
    clean = check_path(submission_copy, TINY)
    synthetic.edit_mllog(bench / "result_2.txt", "trainmark_precision", lambda r: {**r, "value": "amp-bf16"})
    report = check_path(submission_copy, TINY)
    (f,) = [f for f in report.findings if f.rule == "HPARAM-004"]
    assert (f.severity, f.file) == ("error", f"{BENCH}/result_2.txt") and "amp-bf16" in f"{f.message} {f.seen}"
    errors = [(e.rule, e.file) for e in report.findings if e.severity == "error"]
    before = [(e.rule, e.file) for e in clean.findings if e.severity == "error"]
    new = [e for e in errors if e not in before]  # TRIALJSON-003: trial.json still says the first precision
    assert report.exit_code == 1 and ("HPARAM-004", f.file) in new and {r for r, _ in new} <= {"HPARAM-004",
                                                                                               "TRIALJSON-003"}


def test_mixed_settings_in_open_division_are_a_warning(tmp_path):
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(), division="open")
    bench = tmp_path / "open/acme/results/sys1/resnet-mini"
    synthetic.edit_mllog(bench / "result_2.txt", "opt_base_learning_rate", lambda r: {**r, "value": 0.3})
    report = check_path(tmp_path, TINY)
    found = [f for f in report.findings if f.rule == "HPARAM-005"]
    assert found and found[0].severity == "warning"
    assert "HPARAM-004" not in rules_of(report)


def test_a_crashed_trial_is_an_error_not_an_allowed_miss(submission_copy):
    bench = submission_copy / BENCH

    def crash(record):
        value = {**record["value"], "status": "crashed", "error": "RuntimeError: overflow"}
        return {**record, "value": value}

    synthetic.edit_mllog(bench / "result_5.txt", "trainmark_trial_result", crash)
    trial_json = bench / "trial_5" / "trial.json"
    trial_json.write_text(json.dumps({**json.loads(trial_json.read_text()), "status": "crashed"}))
    report = check_path(submission_copy, TINY)
    found = [f for f in report.findings if f.rule == "TRIAL-003"]
    assert found and "overflow" in found[0].message and found[0].line is not None
    assert report.exit_code == 1


# -- trial.json: validated, never trusted unread ----------------------------------------------
def test_clean_trial_json_passes(submission_copy):
    assert not {r for r in rules_of(check_path(submission_copy, TINY)) if r.startswith("TRIALJSON")}


@pytest.mark.parametrize("field,value", [("train_time_s", 1.0), ("status", "converged"), ("seed", 7),
                                         ("final_metric", 0.99), ("total_energy_j", None),
                                         ("flops_per_step", 10 ** 15)])
def test_trial_json_claiming_other_figures_is_an_error(submission_copy, field, value):
    path = submission_copy / BENCH / "trial_2" / "trial.json"
    data = json.loads(path.read_text())
    if data.get(field) == value:
        value = "not_converged" if field == "status" else value
    path.write_text(json.dumps({**data, field: value}))
    report = check_path(submission_copy, TINY)
    found = [f for f in report.findings if f.rule in ("TRIALJSON-003", "TRIALJSON-002") and f.file.endswith(
        "trial_2/trial.json")]
    assert found, [(f.rule, f.file) for f in report.findings]
    assert report.exit_code == 1


def test_deeply_nested_trial_json_is_refused_quickly(submission_copy):
    path = submission_copy / BENCH / "trial_1" / "trial.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    report = check_path(submission_copy, TINY)
    found = [f for f in report.findings if f.rule == "TRIALJSON-001"]
    assert found and "100000 levels" in found[0].message


def test_trial_json_missing_a_field_breaks_the_schema(submission_copy):
    path = submission_copy / BENCH / "trial_1" / "trial.json"
    data = json.loads(path.read_text())
    del data["train_time_s"]
    path.write_text(json.dumps(data))
    found = [f for f in check_path(submission_copy, TINY).findings if f.rule == "TRIALJSON-002"]
    assert found and "train_time_s" in found[0].message


# -- a noisy score is explained by the data (SPREAD-001) ---------------------------------------
def _spread_submission(tmp_path, epoch_s, other_load):
    """Rules that bound the train-time CV at 0.10, and trials with the given epoch times and other load."""
    (tmp_path / "rules" / RULES.version).mkdir(parents=True)
    (tmp_path / "rules" / RULES.version / "resnet-mini.yaml").write_text(
        f"benchmark: resnet-mini\nrules_version: '{RULES.version}'\ninclude: resnet-mini\n"
        "scoring:\n  max_train_time_cv: 0.10\n")
    plans = synthetic.default_plans(RULES)
    for plan, s in zip(plans, epoch_s):
        plan.epoch_s = s
    synthetic.write_submission(tmp_path / "sub", RULES, synthetic.tiny_reference_model(), plans=plans)
    for k, load in enumerate(other_load, 1):
        path = tmp_path / "sub" / BENCH / f"trial_{k}" / "trial.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "other_cpu_load_pct": load}))
    return check_path(tmp_path / "sub", CheckOptions(rules_root=tmp_path / "rules",
                                                     reference_builder=TINY.reference_builder))


def test_a_noisy_set_of_trials_is_a_warning_naming_the_other_load(tmp_path):
    report = _spread_submission(tmp_path, [30, 30, 90, 30, 30], [0.5, 1.0, 62.0, 0.4, 0.8])
    found = [f for f in report.findings if f.rule == "SPREAD-001"]
    assert found and found[0].severity == "warning" and "62% (trial 3)" in found[0].message
    assert report.exit_code == 0


def test_steady_trials_give_no_spread_warning(tmp_path):
    report = _spread_submission(tmp_path, [30, 32, 30, 32, 30], [0.5, 1.0, 2.0, 0.4, 0.8])
    assert "SPREAD-001" not in rules_of(report)


@pytest.mark.parametrize("text,why", [('"train_time_s": 1' + "0" * 400, "beyond 64 bits"),
                                      ('"seed": 1, "seed": 2', "more than once")])
def test_trial_json_with_huge_numbers_or_repeated_keys_is_one_finding(submission_copy, text, why):
    path = submission_copy / BENCH / "trial_1" / "trial.json"
    path.write_text(path.read_text().replace("{", "{" + text + ", ", 1))
    report = check_path(submission_copy, TINY)
    found = [f for f in report.findings if f.rule == "TRIALJSON-001"]
    assert found and why in found[0].message
    assert "CHECKER-001" not in rules_of(report)
