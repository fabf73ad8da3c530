"""Issue 42: one fault gives one finding, its consequences named in it, not repeated as findings of their own."""
from __future__ import annotations

import synthetic

from trainmark.checker.check import CheckOptions, check_path

BENCH = "closed/acme/results/sys1/resnet-mini"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())


def _errors(report):
    return sorted((f.rule, f.file.rsplit("/", 1)[-1], f.line) for f in report.findings if f.severity == "error")


def test_a_hyphen_in_epochs_log_is_one_finding(submission_copy):
    path = submission_copy / BENCH / "epochs.log"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[2] = lines[2].replace("\u2013", "-", 1)  # trial 1's third epoch: a hyphen where the en dash belongs
    path.write_text("\n".join(lines), encoding="utf-8")
    report = check_path(submission_copy, TINY)
    assert _errors(report) == [("EPOCHLOG-001", "epochs.log", 3)]
    (finding,) = [f for f in report.findings if f.rule == "EPOCHLOG-001"]
    assert "the gap is not reported again" in finding.message
    assert report.exit_code == 1


def test_a_missing_line_without_a_malformed_one_is_still_reported(submission_copy):
    """The consequence is folded only where a malformed line explains it: a deleted line is still the gap."""
    path = submission_copy / BENCH / "epochs.log"
    lines = path.read_text(encoding="utf-8").split("\n")
    del lines[1]  # trial 1's epoch 2: a gap between epochs 1 and 3
    path.write_text("\n".join(lines), encoding="utf-8")
    rules = {rule for rule, _, _ in _errors(check_path(submission_copy, TINY))}
    assert {"EPOCHLOG-003", "AGREE-002"} <= rules


def test_a_torn_mllog_line_is_one_finding(submission_copy):
    path = submission_copy / BENCH / "result_2.txt"
    number = synthetic.mllog_lines_of(path, "eval_accuracy")[1]
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[number - 1] = lines[number - 1][: lines[number - 1].index('"value"') + 9]  # cut inside the record
    path.write_text("\n".join(lines), encoding="utf-8")
    report = check_path(submission_copy, TINY)
    errors = _errors(report)
    assert errors == [("MLLOG-001", "result_2.txt", number)]  # no MLLOG-002 count, no AGREE-002 epochs
    (finding,) = [f for f in report.findings if f.rule == "MLLOG-001"]
    assert "not reported again" in finding.message
