"""The harness and the checker read the same target from the same rule file."""
import yaml

from trainmark.checker.check import CheckOptions, check_path
from trainmark.harness.run import RunOptions, run_benchmark


def test_changing_the_target_moves_harness_and_checker_together(rules_copy, tmp_path):
    path = rules_copy / "1.2" / "tiny-test.yaml"
    rule = yaml.safe_load(path.read_text())
    rule["metric"].update(direction="lower", target=0.01)  # an accuracy this low is never reached
    rule["max_epochs"] = 2
    path.write_text(yaml.safe_dump(rule))
    summary = run_benchmark(RunOptions(benchmark="tiny-test", out=tmp_path / "out", rules_dir=rules_copy,
                                       quiet=True, trials=3, seed=1, submitter="acme", system_name="box"))
    assert [r.status for r in summary.results] == ["not_converged"] * 3
    report = check_path(tmp_path / "out", CheckOptions(rules_root=rules_copy))
    missed = [f for f in report.findings if f.rule == "TARGET-002"]
    assert len(missed) == 3 and all("<= 0.01" in str(f.expected) for f in missed)
    assert any(f.rule == "TARGET-003" for f in report.findings) and report.exit_code == 1
