"""Each rule, broken alone in a clean synthetic folder, is reported with its id, file and line."""
from __future__ import annotations

import json
import re
import shutil

import pytest
import synthetic

from trainmark.checker.check import CheckOptions, check_path
from trainmark.rules import get_rules

RULES = get_rules("resnet-mini")
EPOCHS = len(synthetic.default_plans(RULES)[0].metrics)  # each synthetic trial's epochs, the reference's (1.2: 3)
SUB = "closed/acme"
BENCH = f"{SUB}/results/sys1/resnet-mini"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())


@pytest.fixture
def root(submission_copy):
    return submission_copy  # conftest: a private copy of the clean synthetic submission


def where(report):
    return [(f.rule, f.file, f.line) for f in report.findings]


def assert_finding(report, rule, file, line="any"):
    found = [f for f in report.findings if f.rule == rule and f.file == file and (line == "any" or f.line == line)]
    assert found, f"no {rule} at {file}:{line}; findings: {where(report)}"
    return found[0]


def result_file(root, k=1):
    return root / BENCH / f"result_{k}.txt"


def edit_epochs_log(root, edit):
    path = root / BENCH / "epochs.log"
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    edit(lines)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_clean_folder_passes_with_exact_scores(root):
    report = check_path(root, TINY)
    assert where(report) == []
    assert report.exit_code == 0
    (bench,) = report.benchmarks
    # train time of trial k = E epochs * (30 + 1.5 k) s + 0.005 s, E the reference's epochs (rules 1.2: 3):
    # 94.505, 99.005, 103.505, 108.005, 112.505
    epochs = len(synthetic.default_plans(RULES)[0].metrics)
    times = [epochs * (30 + 1.5 * k) + 0.005 for k in range(1, 6)]
    assert bench.score["mean_train_time_s"] == pytest.approx(sum(times) / 5)
    assert bench.score["score_train_time_s"] == pytest.approx(sum(times[1:4]) / 3)
    assert bench.score["mean_train_energy_j"] == pytest.approx(1500 * epochs)
    assert [t["train_time_s"] for t in bench.trials] == pytest.approx(times)


# -- epochs.log ---------------------------------------------------------------------------
def test_epochlog_001_malformed_line(root):
    edit_epochs_log(root, lambda lines: lines.__setitem__(2, lines[2].replace("\u2013", "-")))
    assert_finding(check_path(root, TINY), "EPOCHLOG-001", f"{BENCH}/epochs.log", 3)


def test_epochlog_001_invalid_utf8(root):
    path = root / BENCH / "epochs.log"
    data = path.read_bytes().split(b"\n")
    data[1] = b"\xff\xfe" + data[1]
    path.write_bytes(b"\n".join(data))
    assert_finding(check_path(root, TINY), "EPOCHLOG-001", f"{BENCH}/epochs.log", 2)


def test_epochlog_002_duplicate_trial(root):
    edit_epochs_log(root, lambda lines: lines.append(lines[0]))
    assert_finding(check_path(root, TINY), "EPOCHLOG-002", f"{BENCH}/epochs.log", 5 * EPOCHS + 1)


def test_epochlog_002_trial_zero(root):
    edit_epochs_log(root, lambda lines: lines.__setitem__(0, lines[0].replace("] \u2013 [1] \u2013 [1]",
                                                                               "] \u2013 [0] \u2013 [1]")))
    assert_finding(check_path(root, TINY), "EPOCHLOG-002", f"{BENCH}/epochs.log", 1)


def test_epochlog_003_epoch_skipped(root):
    edit_epochs_log(root, lambda lines: lines.__setitem__(1, lines[1].replace("] \u2013 [2] \u2013",
                                                                               "] \u2013 [3] \u2013")))
    assert_finding(check_path(root, TINY), "EPOCHLOG-003", f"{BENCH}/epochs.log", 2)


def test_epochlog_004_reordered_timestamps(root):
    def swap(lines):
        a, b = lines[1][1:20], lines[2][1:20]
        lines[1], lines[2] = lines[1].replace(a, b), lines[2].replace(b, a)
    edit_epochs_log(root, swap)
    report = check_path(root, TINY)
    assert_finding(report, "EPOCHLOG-004", f"{BENCH}/epochs.log", 3)
    assert "EPOCHLOG-004" not in {f.rule for f in report.findings if f.line != 3}


@pytest.mark.parametrize("metric", ["1.5000", "nan", "-0.2000"])
def test_epochlog_005_metric_outside_range(root, metric):
    edit_epochs_log(root, lambda lines: lines.__setitem__(0, re.sub(r"\[[^\]]+\]$", f"[{metric}]", lines[0])))
    assert_finding(check_path(root, TINY), "EPOCHLOG-005", f"{BENCH}/epochs.log", 1)


def test_epochlog_006_truncated(root):
    path = root / BENCH / "epochs.log"
    path.write_bytes(path.read_bytes()[:-1])
    assert_finding(check_path(root, TINY), "EPOCHLOG-006", f"{BENCH}/epochs.log", 5 * EPOCHS)
    path.write_bytes(b"")
    assert_finding(check_path(root, TINY), "EPOCHLOG-006", f"{BENCH}/epochs.log", None)


# -- MLLOG ----------------------------------------------------------------------------------
@pytest.mark.parametrize("broken", [':::MLLOG {"key": "seed", "value": 1}', ":::MLLOG {not json",
                                    ':::MLLOG [1, 2]', "stray shell output", ':::MLLOG ' + "[" * 5000,
                                    ':::MLLOG {"time_ms": 1, "key": "seed", "metadata": {}, "value": '
                                    + "[" * 500 + "]" * 500 + "}"])
def test_mllog_001_invalid_record(root, broken):
    lines = result_file(root, 2).read_text(encoding="utf-8").split("\n")
    lines[11] = broken
    result_file(root, 2).write_text("\n".join(lines), encoding="utf-8")
    assert_finding(check_path(root, TINY), "MLLOG-001", f"{BENCH}/result_2.txt", 12)


def test_mllog_002_key_missing_and_repeated(root):
    synthetic.edit_mllog(result_file(root, 1), "eval_samples", lambda r: None)
    path = result_file(root, 2)
    lines = path.read_text(encoding="utf-8").split("\n")
    n = synthetic.mllog_lines_of(path, "train_samples")[0]
    lines.insert(n, lines[n - 1].replace('"value": 60000', '"value": 50000'))
    path.write_text("\n".join(lines), encoding="utf-8")
    report = check_path(root, TINY)
    assert_finding(report, "MLLOG-002", f"{BENCH}/result_1.txt", None)
    assert_finding(report, "MLLOG-002", f"{BENCH}/result_2.txt", n + 1)


def test_mllog_003_failed_compliance_check(root):
    line = synthetic.edit_mllog(result_file(root, 3), "submission_status", synthetic.set_value(""))
    line_acc = synthetic.edit_mllog(result_file(root, 4), "eval_accuracy", synthetic.set_value(1.5))
    report = check_path(root, TINY)
    assert_finding(report, "MLLOG-003", f"{BENCH}/result_3.txt", line)
    assert_finding(report, "MLLOG-003", f"{BENCH}/result_4.txt", line_acc)


def test_mllog_004_trial_number(root):
    line = synthetic.edit_mllog(result_file(root, 2), "trainmark_trial", synthetic.set_value(1))
    assert_finding(check_path(root, TINY), "MLLOG-004", f"{BENCH}/result_2.txt", line)


def test_mllog_005_time_goes_back(root):
    def earlier(record):
        record["time_ms"] -= 1000
        return record
    line = synthetic.edit_mllog(result_file(root, 1), "train_samples", earlier)
    report = check_path(root, TINY)
    assert_finding(report, "MLLOG-005", f"{BENCH}/result_1.txt", line)
    assert [f.line for f in report.findings if f.rule == "MLLOG-005"] == [line]


def test_mllog_006_org_of_another_folder(root):
    line = synthetic.edit_mllog(result_file(root, 1), "submission_org", synthetic.set_value("someone-else"))
    assert_finding(check_path(root, TINY), "MLLOG-006", f"{BENCH}/result_1.txt", line)


def test_mllog_007_summary_edited(root):
    def faster(record):
        record["value"]["train_time_s"] -= 10
        return record
    line = synthetic.edit_mllog(result_file(root, 5), "trainmark_trial_result", faster)
    report = check_path(root, TINY)
    assert_finding(report, "MLLOG-007", f"{BENCH}/result_5.txt", line)
    assert report.benchmarks[0].trials[4]["train_time_s"] == pytest.approx(EPOCHS * 37.5 + 0.005)  # not the summary's


def test_mllog_008_energy_summary_is_a_warning_and_energy_004_an_error(root):
    """The summary's energy disagreeing with the recomputed one is MLLOG-008 (a warning, as for any summary
    field); that a figure disagrees with the meter's readings is also ENERGY-004, an error (issue 30)."""
    def energy(record):
        record["value"]["train_energy_j"] = 1.0
        return record
    line = synthetic.edit_mllog(result_file(root, 1), "trainmark_trial_result", energy)
    report = check_path(root, TINY)
    assert assert_finding(report, "MLLOG-008", f"{BENCH}/result_1.txt", line).severity == "warning"
    assert assert_finding(report, "ENERGY-004", f"{BENCH}/result_1.txt").severity == "error"
    assert report.exit_code == 1


def test_mllog_009_engine_failure_is_a_finding(root, monkeypatch):
    from mlperf_logging.compliance_checker import mlp_compliance

    def explode(self, loglines, config):
        raise KeyError("time_ms")
    monkeypatch.setattr(mlp_compliance.ComplianceChecker, "check_loglines", explode)
    report = check_path(root, TINY)
    assert_finding(report, "MLLOG-009", f"{BENCH}/result_3.txt", None)
    assert report.exit_code == 1


def test_checker_001_a_checker_bug_is_a_finding_for_that_folder_only(root, monkeypatch):
    from trainmark.checker import benchmark

    def bug(*args, **kwargs):
        raise ZeroDivisionError("oops")
    monkeypatch.setattr(benchmark, "check_agreement", bug)
    report = check_path(root, TINY)
    assert_finding(report, "CHECKER-001", BENCH, None)
    assert report.exit_code == 1 and report.benchmarks == []


# -- agreement of the logs ----------------------------------------------------------------
def test_agree_001_trial_missing_from_text_log(root):
    edit_epochs_log(root, lambda lines: lines.__delitem__(slice(4 * EPOCHS, 5 * EPOCHS)))  # trial 5
    assert_finding(check_path(root, TINY), "AGREE-001", f"{BENCH}/result_5.txt", 1)


def test_agree_002_epoch_missing_from_text_log(root):
    edit_epochs_log(root, lambda lines: lines.__delitem__(EPOCHS - 1))  # trial 1's last epoch
    assert_finding(check_path(root, TINY), "AGREE-002", f"{BENCH}/epochs.log", EPOCHS - 1)


def test_agree_003_tampered_metric(root):
    edit_epochs_log(root, lambda lines: lines.__setitem__(1, re.sub(r"\[0\.(\d)", lambda m: f"[0.{int(m[1]) - 1}",
                                                                     lines[1])))
    report = check_path(root, TINY)
    finding = assert_finding(report, "AGREE-003", f"{BENCH}/epochs.log", 2)
    assert finding.seen != finding.expected
    assert {f.rule for f in report.findings} == {"AGREE-003"}


def test_agree_004_timestamp_off(root):
    edit_epochs_log(root, lambda lines: lines.__setitem__(0, lines[0][:15] + "00:00" + lines[0][20:]))
    assert_finding(check_path(root, TINY), "AGREE-004", f"{BENCH}/epochs.log", 1)


# -- target, trials, seeds ----------------------------------------------------------------
def test_target_001_status_contradicts_metric(root):
    def abort(record):
        record["metadata"]["status"] = "aborted"
        return record
    line = synthetic.edit_mllog(result_file(root, 2), "run_stop", abort)
    assert_finding(check_path(root, TINY), "TARGET-001", f"{BENCH}/result_2.txt", line)


def missed_plans(count_missed):
    plans = synthetic.default_plans(RULES)
    for plan in plans[:count_missed]:
        plan.metrics = [m - 0.1 for m in plan.metrics]
    return plans


def test_target_002_one_miss_is_scored_as_slowest(tmp_path):
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(), plans=missed_plans(1))
    report = check_path(tmp_path, TINY)
    finding = assert_finding(report, "TARGET-002", f"{BENCH}/result_1.txt")
    assert finding.severity == "warning" and report.exit_code == 0
    score = report.benchmarks[0].score
    # trial 1 missed: dropped as the slowest; drop the fastest (trial 2): mean of the other three
    assert score["score_train_time_s"] == pytest.approx(sum(EPOCHS * (30 + 1.5 * k) + 0.005 for k in (3, 4, 5)) / 3)
    assert score["trials_in_mean"] == 4


def test_target_003_too_many_misses_no_score(tmp_path):
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(), plans=missed_plans(2))
    report = check_path(tmp_path, TINY)
    assert_finding(report, "TARGET-003", BENCH, None)
    assert report.benchmarks[0].score["score_train_time_s"] is None
    assert "2 trials" in report.benchmarks[0].score["score_reason"]


def test_target_004_and_005_epochs(tmp_path):
    plans = synthetic.default_plans(RULES)
    plans[0].metrics = [0.5] * 16 + [0.95]      # 17 epochs: max_epochs is 16
    plans[1].metrics = [0.8, 0.92, 0.93]        # goes on after reaching 0.91
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(), plans=plans)
    report = check_path(tmp_path, TINY)
    path1, path2 = tmp_path / BENCH / "result_1.txt", tmp_path / BENCH / "result_2.txt"
    assert_finding(report, "TARGET-004", f"{BENCH}/result_1.txt", synthetic.mllog_lines_of(path1, "epoch_start")[16])
    assert_finding(report, "TARGET-005", f"{BENCH}/result_2.txt", synthetic.mllog_lines_of(path2, "eval_accuracy")[2])


def test_trial_001_missing_trial(root):
    (root / BENCH / "result_3.txt").unlink()
    shutil.rmtree(root / BENCH / "trial_3")
    edit_epochs_log(root, lambda lines: lines.__delitem__(slice(9, 12)))
    report = check_path(root, TINY)
    assert "ask for 5 trials" in assert_finding(report, "TRIAL-001", f"{BENCH}/result_3.txt", None).message
    assert not [f for f in report.findings if f.rule == "TRIAL-002"]  # one finding per problem (issue 32)


def test_trial_002_wrong_count(tmp_path):
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(),
                               plans=synthetic.default_plans(RULES, 6))
    report = check_path(tmp_path, TINY)
    assert assert_finding(report, "TRIAL-002", BENCH, None).seen == "6"


def test_seed_001_not_an_integer_or_missing(root):
    line = synthetic.edit_mllog(result_file(root, 1), "seed", synthetic.set_value("1017"))
    synthetic.edit_mllog(result_file(root, 2), "seed", lambda r: None)
    report = check_path(root, TINY)
    assert_finding(report, "SEED-001", f"{BENCH}/result_1.txt", line)
    assert_finding(report, "SEED-001", f"{BENCH}/result_2.txt", None)


def test_seed_002_duplicate_seed(tmp_path):
    plans = synthetic.default_plans(RULES)
    plans[3].seed = plans[1].seed
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(), plans=plans)
    report = check_path(tmp_path, TINY)
    path = tmp_path / BENCH / "result_4.txt"
    assert_finding(report, "SEED-002", f"{BENCH}/result_4.txt", synthetic.mllog_lines_of(path, "seed")[0])
    assert [f.rule for f in report.findings] == ["SEED-002"]


# -- hyperparameters ------------------------------------------------------------------------
def test_hparam_001_value_not_allowed_closed_but_open_is_free(root, tmp_path):
    line = synthetic.edit_mllog(result_file(root, 1), "opt_momentum", synthetic.set_value(0.95))
    report = check_path(root, TINY)
    finding = assert_finding(report, "HPARAM-001", f"{BENCH}/result_1.txt", line)
    assert "0.9" in finding.expected
    open_root = tmp_path / "open"
    synthetic.write_submission(open_root, RULES, synthetic.tiny_reference_model(), division="open")
    bench = open_root / "open/acme/results/sys1/resnet-mini"
    synthetic.edit_mllog(bench / "result_1.txt", "opt_momentum", synthetic.set_value(0.95))
    assert "HPARAM-001" not in {f.rule for f in check_path(open_root, TINY).findings}


def test_hparam_002_not_logged(root):
    synthetic.edit_mllog(result_file(root, 1), "label_smoothing", lambda r: None)
    assert_finding(check_path(root, TINY), "HPARAM-002", f"{BENCH}/result_1.txt", None)


def test_hparam_003_precision(root):
    line = synthetic.edit_mllog(result_file(root, 2), "trainmark_precision", synthetic.set_value("fp8"))
    assert_finding(check_path(root, TINY), "HPARAM-003", f"{BENCH}/result_2.txt", line)


# -- layout and system description ---------------------------------------------------------
def test_layout_001_systems_missing(root):
    shutil.rmtree(root / SUB / "systems")
    assert_finding(check_path(root, TINY), "LAYOUT-001", f"{SUB}/systems", None)


def test_layout_002_system_without_description(root):
    (root / SUB / "systems" / "sys1.json").rename(root / SUB / "systems" / "other.json")
    assert_finding(check_path(root, TINY), "LAYOUT-002", f"{SUB}/results/sys1", None)


def test_layout_003_required_files_missing(root):
    (root / BENCH / "epochs.log").unlink()
    (root / BENCH / "trial_2" / "structure.json").unlink()
    report = check_path(root, TINY)
    assert_finding(report, "LAYOUT-003", f"{BENCH}/epochs.log", None)
    assert_finding(report, "LAYOUT-003", f"{BENCH}/trial_2/structure.json", None)


def test_layout_004_unexpected_entry_is_a_warning(root):
    (root / BENCH / "notes.txt").write_text("hello")
    report = check_path(root, TINY)
    assert assert_finding(report, "LAYOUT-004", f"{BENCH}/notes.txt", None).severity == "warning"
    assert report.exit_code == 0


def test_layout_005_bad_names(root):
    (root / "semi").mkdir()
    (root / SUB / "results" / "sys1").rename(root / SUB / "results" / "sys 1")
    (root / SUB / "systems" / "sys1.json").rename(root / SUB / "systems" / "sys 1.json")
    report = check_path(root, TINY)
    assert_finding(report, "LAYOUT-005", "semi", None)
    assert_finding(report, "LAYOUT-005", f"{SUB}/results/sys 1", None)


def test_layout_006_unknown_benchmark(root):
    (root / BENCH).rename(root / SUB / "results" / "sys1" / "no-such-bench")
    assert_finding(check_path(root, TINY), "LAYOUT-006", f"{SUB}/results/sys1/no-such-bench", None)


def test_system_001_not_json(root):
    (root / SUB / "systems" / "sys1.json").write_text('{"system_name": "sys1",')
    assert_finding(check_path(root, TINY), "SYSTEM-001", f"{SUB}/systems/sys1.json", 1)


def test_system_002_breaks_schema(root):
    path = root / SUB / "systems" / "sys1.json"
    path.write_text(path.read_text().replace('"framework"', '"frame_work"'))
    finding = assert_finding(check_path(root, TINY), "SYSTEM-002", f"{SUB}/systems/sys1.json")
    assert "framework" in finding.message


# -- convergence against the reference (rules' convergence points) ----------------------------
def test_converge_001_closed_submission_too_fast(tmp_path):
    plans = synthetic.default_plans(RULES)
    for plan in plans:
        plan.metrics = plan.metrics[1:]  # every trial reaches the target an epoch before the reference's seeds
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(), plans=plans)
    report = check_path(tmp_path, TINY)
    finding = assert_finding(report, "CONVERGE-001", BENCH, None)
    assert finding.severity == "error" and report.exit_code == 1 and finding.seen == f"{len(plans[0].metrics)}.00"


def test_converge_001_counts_epochs_not_evaluations(tmp_path):
    """ds2-mini evaluates every fourth epoch: a trial that meets the target at the evaluation after
    epoch 4 needed 4 epochs, as every reference seed did, though it logged 1 evaluation."""
    rules = get_rules("ds2-mini")
    assert rules.evaluation["every_epochs"] == 4 and set(rules.convergence["points"][0]["epochs_to_target"]) == {4}
    plans = [synthetic.TrialPlan(seed=2000 + k, metrics=[0.09, 0.03, 0.02, 0.005], epoch_s=38.0 + k, eval_every=4)
             for k in range(1, 6)]
    synthetic.write_submission(tmp_path, rules, synthetic.tiny_reference_model(), plans=plans)
    report = check_path(tmp_path, TINY)
    assert not [f for f in report.findings if f.rule.startswith(("CONVERGE", "SPREAD", "EPOCHLOG", "AGREE"))], \
        [f"{f.rule}: {f.message}" for f in report.findings]
    plans = [synthetic.TrialPlan(seed=2000 + k, metrics=[0.09, 0.005], epoch_s=38.0 + k, eval_every=4)
             for k in range(1, 6)]  # one evaluation after 2 epochs (the last): faster than the reference allows
    synthetic.write_submission(tmp_path / "fast", rules, synthetic.tiny_reference_model(), plans=plans)
    assert assert_finding(check_path(tmp_path / "fast", TINY), "CONVERGE-001", BENCH.replace("resnet-mini", "ds2-mini"),
                          None).seen == "2.00"


def test_convergence_points_are_kept_per_implementation(tmp_path):
    """A TensorFlow twin's trials are judged by the points of ``resnet-mini@tensorflow``: without them,
    CONVERGE-003 says they cannot be judged, an error (the PyTorch reference's points do not judge them); with
    them, a twin faster than its own calibration is CONVERGE-001."""
    import yaml

    def rules_with_twin_points(folder, epochs):
        (folder / RULES.version).mkdir(parents=True)
        data = yaml.safe_load(RULES.path.read_text())
        data["convergence"]["points"] = [p for p in data["convergence"]["points"] if "implementation" not in p]
        if epochs:
            batch = RULES.defaults()["global_batch_size"]
            data["convergence"]["points"].append({"implementation": "resnet-mini@tensorflow",
                                                  "global_batch_size": batch, "epochs_to_target": [epochs] * 10})
        (folder / RULES.version / "resnet-mini.yaml").write_text(yaml.safe_dump(data))
        return CheckOptions(rules_root=folder, reference_builder=TINY.reference_builder)

    plans = synthetic.default_plans(RULES)  # every trial in the reference's epoch (rules 1.2: 3)
    epochs = len(plans[0].metrics)
    for plan in plans:
        plan.framework = "tensorflow"
    synthetic.write_submission(tmp_path / "sub", RULES, synthetic.tiny_reference_model(), plans=plans)
    report = check_path(tmp_path / "sub", rules_with_twin_points(tmp_path / "none", None))
    finding = assert_finding(report, "CONVERGE-003", BENCH, None)
    assert "resnet-mini@tensorflow" in finding.message and finding.severity == "error"
    assert not [f for f in report.findings if f.rule == "CONVERGE-001"]
    slow_twin = rules_with_twin_points(tmp_path / "seven", 7)  # the twin's calibration: 7 epochs
    report = check_path(tmp_path / "sub", slow_twin)
    assert assert_finding(report, "CONVERGE-001", BENCH, None).seen == f"{epochs}.00" and report.exit_code == 1
    for plan in plans:  # the same trials under PyTorch meet the PyTorch reference's points
        plan.framework = None
    synthetic.write_submission(tmp_path / "pt", RULES, synthetic.tiny_reference_model(), plans=plans)
    assert not [f for f in check_path(tmp_path / "pt", slow_twin).findings if f.rule.startswith("CONVERGE")]
    # the shipped rules hold the twin's own points (10 seeds, all in the same epoch as the reference's)
    assert not [f for f in check_path(tmp_path / "sub", TINY).findings if f.rule.startswith("CONVERGE")]


def test_a_hostile_framework_name_stays_out_of_the_findings(tmp_path):
    """trainmark_framework comes from the submitted log: a long value with control characters is not
    echoed into the convergence finding, and names no implementation of the rules."""
    plans = synthetic.default_plans(RULES)
    for plan in plans:
        plan.framework = "\x1b[2J" + "x" * 200  # a longer line is refused whole (MLLOG-010)
    synthetic.write_submission(tmp_path, RULES, synthetic.tiny_reference_model(), plans=plans)
    finding = assert_finding(check_path(tmp_path, TINY), "CONVERGE-003", BENCH, None)
    assert "resnet-mini@unknown-framework" in finding.message
    assert "\x1b" not in finding.message and len(finding.message) < 300


def test_a_log_without_epoch_stops_cannot_pass_as_converged(tmp_path):
    """The convergence check counts epoch_stop events: a log that drops them (and names an epoch NaN)
    is refused with errors, not scored as a fast trial."""
    rules = get_rules("ds2-mini")
    plans = [synthetic.TrialPlan(seed=2000 + k, metrics=[0.09, 0.03, 0.02, 0.005], epoch_s=38.0 + k, eval_every=2)
             for k in range(1, 6)]
    synthetic.write_submission(tmp_path, rules, synthetic.tiny_reference_model(), plans=plans)
    log = next(tmp_path.rglob("result_1.txt"))
    lines = [line for line in log.read_text().splitlines() if '"epoch_stop"' not in line]
    log.write_text("\n".join(lines).replace('"epoch_num": 2', '"epoch_num": NaN', 1) + "\n")
    report = check_path(tmp_path, TINY)
    errors = {f.rule for f in report.findings if f.severity == "error"}
    assert report.exit_code == 1 and {"MLLOG-002", "MLLOG-007"} <= errors, errors


def test_converge_003_batch_size_outside_the_calibrated_range_is_an_error(root):
    """Issue 30: a closed result at a batch size nobody calibrated cannot pass unjudged."""
    for k in range(1, 6):
        synthetic.edit_mllog(result_file(root, k), "global_batch_size", lambda r: {**r, "value": 1024})
        trial_json = root / BENCH / f"trial_{k}" / "trial.json"  # trial.json must agree with the MLLOG
        data = json.loads(trial_json.read_text())
        trial_json.write_text(json.dumps({**data, "hparams": {**data["hparams"], "global_batch_size": 1024}}))
    report = check_path(root, TINY)
    assert assert_finding(report, "CONVERGE-003", BENCH, None).severity == "error"
    assert report.exit_code == 1


def test_converge_002_rules_without_any_points_warn_that_nothing_was_verified(root, tmp_path):
    """A full-size benchmark whose rules carry no points yet: the rules lack the evidence, not the submitter."""
    import yaml

    folder = tmp_path / "rules" / RULES.version
    folder.mkdir(parents=True)
    data = yaml.safe_load(RULES.path.read_text())
    data["convergence"]["points"] = []
    (folder / "resnet-mini.yaml").write_text(yaml.safe_dump(data))
    report = check_path(root, CheckOptions(rules_root=folder.parent, reference_builder=TINY.reference_builder))
    assert assert_finding(report, "CONVERGE-002", BENCH, None).severity == "warning"


def test_rules_001_unknown_rules_version_is_refused(root):
    for k in range(1, 6):
        synthetic.edit_mllog(result_file(root, k), "trainmark_rules_version", lambda r: {**r, "value": "9.9"})
    report = check_path(root, TINY)
    assert_finding(report, "RULES-001", BENCH, None)
    assert report.exit_code == 1
