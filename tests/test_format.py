"""The result format has one owner (trainmark.format): the harness writes through it, the checker
reads through it, the compliance config takes its lists from it, and the checker needs no harness."""
import json
import logging
import subprocess
import sys

import pytest

from trainmark.checker import benchmark as benchmark_check
from trainmark.checker.mlperf import compliance_rules
from trainmark.checker.read import levels as checker_layout
from trainmark.format import labels, layout, mllog
from trainmark.rules import get_rules


def test_names_and_patterns_agree():
    for k in (1, 7, 123456):
        assert layout.trial_of(layout.result_file(k)) == k and layout.trial_of(layout.trial_dir(k)) == k
    for name in ("result_01.txt", "result_1234567.txt", "trial_-1", "result_1.txt.bak", "trial_1/"):
        assert layout.trial_of(name) is None, name
    assert layout.trial_of("result_0.txt") == 0  # matched, so that the checker can say trials count from 1


def test_the_checker_matches_names_with_the_formats_patterns():
    from trainmark.checker.read import evidence
    assert benchmark_check.RESULT_FILE is layout.RESULT_FILE and evidence.TRIAL_DIR is layout.TRIAL_DIR
    assert evidence.RESULT_FILE is layout.RESULT_FILE
    assert benchmark_check.TRIAL_FILES == layout.TRIAL_FILES
    assert checker_layout.NAME is layout.NAME and checker_layout.DIVISIONS == layout.DIVISIONS


def test_compliance_config_allows_exactly_the_format_labels():
    rules = get_rules("resnet-mini")
    text = compliance_rules.compliance_yaml(rules, "closed")
    assert repr(labels.TRIAL_STATUSES) in text and repr(labels.ENERGY_METHODS) in text
    assert compliance_rules.precisions_allowed(rules) == [p for f in rules.precisions for p in labels.PRECISIONS[f]]
    assert repr(mllog.TRIAL_RESULT_FIELDS) in text


def test_run_stop_status_is_success_only_for_converged():
    assert {s.value: labels.run_stop_status(s.value) for s in labels.TrialStatus} == {
        "converged": "success", "not_converged": "aborted", "diverged": "aborted", "aborted": "aborted",
        "crashed": "aborted"}


def test_writer_writes_the_documented_boundaries_and_the_reader_reads_them_back(tmp_path):
    path = tmp_path / "result_1.txt"
    log = mllog.TrialLogWriter(path)
    log.header(5, benchmark="b", division="closed", org="o", platform="p", rules_version="1.0", trial=1)
    log.boundary(mllog.INIT_START, 5, metered=False)
    log.settings([(mllog.SEED, 3)], 5)
    log.boundary(mllog.INIT_STOP, 6, metered=False)
    log.boundary(mllog.RUN_START, 7, energy_j=0.0, nodes={"trainmark_node_energy_j": [0.0]})
    log.boundary(mllog.EPOCH_START, 7, epoch=1, energy_j=0.0, domains_j={"cpu0": 0.0})
    log.boundary(mllog.EPOCH_STOP, 9, epoch=1, energy_j=4.0, fields={mllog.TRAIN_ENERGY_J: 4.0, mllog.SAMPLES: 8},
                 domains_j={"cpu0": 4.0})
    log.eval_accuracy(10, 1, 0.5)
    log.trial_result(11, {"status": "converged"})
    log.boundary(mllog.RUN_STOP, 11, status="success", energy_j=None)
    log.close()
    log.event("seed", 1, 99)  # closed: a no-op, not an error
    records = mllog.read(path)
    assert [r.key for r in records] == [
        "submission_benchmark", "submission_division", "submission_org", "submission_platform",
        "submission_status", "trainmark_rules_version", "trainmark_trial", "cache_clear", "init_start", "seed",
        "init_stop", "run_start", "epoch_start", "epoch_stop", "eval_accuracy", "trainmark_trial_result", "run_stop"]
    by_key = {r.key: r for r in records}
    assert [r.line for r in records] == list(range(1, len(records) + 1))
    assert by_key["init_start"].event_type == "INTERVAL_START" and by_key["run_stop"].event_type == "INTERVAL_END"
    assert set(by_key["init_start"].metadata) == {"file", "lineno"}  # init is untimed: no energy
    fields = lambda key: [k for k in by_key[key].metadata if k not in ("file", "lineno")]  # noqa: E731
    assert fields("epoch_stop") == ["epoch_num", "trainmark_energy_j", "trainmark_train_energy_j",
                                                       "trainmark_samples", "trainmark_energy_domains_j"]
    assert fields("run_stop") == ["status", "trainmark_energy_j"]
    assert by_key["run_stop"].metadata["trainmark_energy_j"] is None  # unmeasured: null, never 0
    assert by_key["run_start"].metadata["trainmark_node_energy_j"] == [0.0]
    assert by_key["eval_accuracy"].value == 0.5 and by_key["eval_accuracy"].metadata["epoch_num"] == 1
    assert by_key["submission_status"].value == "onprem" and by_key["cache_clear"].value is True
    # the metadata names the caller relative to the package, never a checkout's absolute path
    assert all(not r.metadata["file"].startswith("/") for r in records)
    assert by_key["seed"].metadata["file"] == "tests/test_format.py"


def test_a_writer_without_a_path_writes_nothing(tmp_path, monkeypatch, capsys):
    """Every record any logging handler is handed is seen (the control with a path proves the spy sees them);
    without a path none is, nothing lands in the working folder and nothing is printed."""
    handled = []
    real = logging.Handler.handle
    monkeypatch.setattr(logging.Handler, "handle", lambda self, record: handled.append(record) or real(self, record))
    monkeypatch.chdir(tmp_path)

    def write(path):
        log = mllog.TrialLogWriter(path)
        log.header(1, benchmark="b", division="closed", org="o", platform="p", rules_version="1.0", trial=1)
        log.boundary(mllog.RUN_START, 1, energy_j=1.0)
        log.close()

    write(None)
    assert handled == [] and list(tmp_path.iterdir()) == [] and capsys.readouterr() == ("", "")
    write(tmp_path / "result_1.txt")
    assert len(handled) > 2 and (tmp_path / "result_1.txt").read_text().count(mllog.PREFIX) == len(handled)


def test_reader_skips_lines_that_are_not_records(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text('hello\n:::MLLOG {"key": "seed", "value": 4, "time_ms": 1, "event_type": "POINT_IN_TIME", '
                    '"metadata": {}}\n')
    (record,) = mllog.read(path)
    assert (record.line, record.key, record.value, record.metadata) == (2, "seed", 4, {})
    assert mllog.first_value([record], "seed") == 4 and mllog.first_value([record], "x", "none") == "none"


@pytest.mark.parametrize("modules", [["trainmark.checker.check", "trainmark.cli.check"]])
def test_the_checker_imports_neither_the_harness_nor_torch(modules):
    code = ("import sys, " + ", ".join(modules) + "; "
            "print(sorted(m for m in sys.modules if m.startswith('trainmark.harness') or m == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.replace("'", '"')) == []


def test_checking_a_folder_loads_no_harness_code(clean_submission):
    """The checker reads through trainmark.format; checking a whole submission imports no trainmark.harness."""
    code = ("import sys; from trainmark.checker.check import check_path; "
            f"report = check_path({str(clean_submission)!r}); "
            "print(report.exit_code == 0, sorted(m for m in sys.modules if m.startswith('trainmark.harness')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[-1] == "[]", out  # (the check itself fails conformity: the fixture's model is not resnet-mini's)


def test_one_folder_name_rule_with_each_callers_limits():
    from trainmark.cli.arguments import folder_name
    from trainmark.errors import UserError
    from trainmark.harness.measure.system import default_system_name

    for bad in ("", "a b", "a/b", "x\n", "é", "a\\b"):
        assert layout.name_refusal(bad), bad
    for good in ("closed", "a.b_c-1", "...", "x" * 500):  # the checker: any length, even dots only
        assert layout.name_refusal(good) is None, good
    assert layout.name_refusal("x" * 101, max_len=100) and not layout.name_refusal("x" * 100, max_len=100)
    assert layout.name_refusal("..", dots=False) and layout.name_refusal(".", dots=False)
    assert layout.name_refusal(".a", dots=False) is None
    for bad in (".", "..", "...", "x" * 129, "a b", "x\n"):  # the command line: 1-128, not dots only
        with pytest.raises(UserError, match="it names a folder"):
            folder_name(bad, "--submitter")
    folder_name("x" * 128, "--submitter")
    folder_name("a.b_c-1", "--system-name")
    assert layout.to_name("8x NVIDIA H200 (SXM)/x") == "8x-NVIDIA-H200-SXM-x"
    assert default_system_name({"accelerators_per_node": "1", "accelerator_model_name": "é" * 300}) == "1x"
    assert len(layout.to_name("a" * 300)) == layout.RUN_NAME_MAX


def test_run_keeps_its_own_name_limit():
    from pathlib import Path

    from trainmark.errors import UserError
    from trainmark.harness import run
    from trainmark.rules import LATEST_VERSION

    rules = Path(__file__).parent / "rules"
    for bad in ("x" * 101, "a b", "x\n"):  # trainmark run (the Python API too): at most 100 characters
        with pytest.raises(UserError, match="use letters, digits"):
            run.prepare(run.RunOptions("tiny-test", submitter=bad, rules_version=LATEST_VERSION, rules_dir=rules))


def test_the_tools_artifacts_have_one_definition():
    from trainmark.format import artifacts
    from trainmark.harness.scale import saturation, worker
    from trainmark.harness.throughput import ops, sweep, sweep_output
    from trainmark.report import sweeps

    assert sweep.FORMAT is sweeps.SWEEP_FORMAT is artifacts.SWEEP_FORMAT == "trainmark-sweep/1"
    assert sweep.POINT_FIELDS is sweep_output.POINT_FIELDS is artifacts.SWEEP_POINT_FIELDS
    assert ops.FORMAT is artifacts.OPS_FORMAT == "trainmark-ops/1"
    assert saturation.FORMAT is artifacts.SCALE_FORMAT == "trainmark-scale/1"
    assert saturation.POINT_FIELDS is artifacts.SCALE_POINT_FIELDS
    assert worker.FORMAT is artifacts.SCALE_POINT_FORMAT == "trainmark-scale-point/1"
    assert saturation.ALLREDUCE_FORMAT is artifacts.ALLREDUCE_FORMAT == "trainmark-allreduce/1"
    # what the report reads of a sweep point, and what a scale point takes of a worker's figures, are columns
    assert {k for k, _ in sweeps.SERIES} | {"status", "batch_size", "precision", "precision_used"} \
        <= set(artifacts.SWEEP_POINT_FIELDS)
    assert set(artifacts.SCALE_POINT_MEASURED) <= set(artifacts.SCALE_POINT_FIELDS)
    assert artifacts.scale_point_file(4) == "point-4.json"


def test_no_file_name_of_the_format_is_spelled_outside_it():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    names = [layout.EPOCHS_LOG, layout.MODEL_FILE, layout.STRUCTURE_FILE, layout.TRIAL_JSON, layout.TELEMETRY_FILE,
             layout.IMPLEMENTATION_JSON, layout.ENVIRONMENT_JSON, layout.COMMAND_JSON, layout.MANIFEST,
             layout.RELEASED_CODE_FILE, layout.SCALING_JSON, "sweep.json", "sweep.csv", "scale.json", "scale.csv"]
    literal = re.compile("|".join(rf"""["']{re.escape(n)}["']""" for n in names) + r"""|f?["']result_\{""")
    offenders = []
    for folder in ("harness", "checker", "report", "rules", "reference", "trainmark"):
        for path in (root / folder).rglob("*.py"):
            if path.parent.name == "format" and path.parent.parent.name == "trainmark":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if literal.search(line.split("#")[0]):
                    offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_system_file_names_round_trip():
    assert layout.system_of(layout.system_file("1xNVIDIA-H200")) == "1xNVIDIA-H200"
    assert layout.system_of("notes.txt") is None and layout.system_of(".json") == ""
    assert layout.is_result_name("result_7.txt") and layout.is_result_name("result_x.txt")  # loosely: MLPerf's too
    assert not layout.is_result_name("result_1.txt.bak")
