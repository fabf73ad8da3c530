"""Compliance findings in words, with the line that proves them (issue 42)."""
from __future__ import annotations

from pathlib import Path

import pytest
import synthetic

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks.mllog import engine_findings
from trainmark.checker.mlperf.engine import EngineMessage, EngineResult
from trainmark.checker.verdict.findings import Findings
from trainmark.format import mllog
from trainmark.format.mllog_read import read_records
from trainmark.reference import registry
from trainmark.rules import get_rules

TEST_RULES = Path(__file__).parent / "rules"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("words")
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    synthetic.write_submission(root, rules, registry.for_rules(rules).build_model())
    return root


def test_run_stop_inside_an_open_evaluation_names_where_it_opened(tree, tmp_path):
    import shutil

    root = tmp_path / "sub"
    shutil.copytree(tree, root)
    result = next(root.glob("closed/*/results/*/tiny-test/result_1.txt"))
    stops = synthetic.mllog_lines_of(result, mllog.EVAL_STOP)
    starts = synthetic.mllog_lines_of(result, mllog.EVAL_START)
    synthetic.edit_mllog(result, mllog.EVAL_STOP, lambda r: None, nth=len(stops) - 1)  # the last eval never closes
    run_stop = synthetic.mllog_lines_of(result, mllog.RUN_STOP)[0]
    report = check_path(root, CheckOptions(rules_root=TEST_RULES))
    (f,) = [f for f in report.findings if f.rule == "MLLOG-003" and f.file.endswith("result_1.txt")]
    assert f.line == run_stop
    opened = f"eval window opened at line {starts[-1]}"
    assert f.message == f"run_stop at line {run_stop} inside an open eval window ({opened})"
    assert "s['" not in f.message + str(f.expected)


def test_an_evaluation_after_the_target_says_where_it_was_reached(tree):
    result = next(tree.glob("closed/*/results/*/tiny-test/result_1.txt"))
    events = read_records(result.read_bytes(), strict=True)
    evals = [e for e in events if e.key == mllog.EVAL_ACCURACY]
    later = evals[-1]
    message = EngineMessage("TARGET-005", "check", mllog.EVAL_ACCURACY, later.line, "not s['reached']", "")
    findings = Findings()
    engine_findings(EngineResult([message], None), events, "r.txt", {}, findings)
    (f,) = list(findings)
    reached = evals[-2]
    assert f.rule == "TARGET-005" and f.message == (
        f"the target was reached at epoch {reached.metadata[mllog.EPOCH_NUM]} (line {reached.line}) and the run "
        f"went on: another evaluation at line {later.line}")
    assert f.expected == "the run stops at the first evaluation that reaches the target"
