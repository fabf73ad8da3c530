"""`trainmark compare BASE NEW`: ratios, Welch's t on log times, bootstrap interval, exit status for CI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import synthetic

from trainmark.checker.check import CheckOptions, check_path
from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.reference import registry
from trainmark.report.compare import bootstrap_ratio, compare_reports, welch_log
from trainmark.rules import get_rules

TEST_RULES = Path(__file__).parent / "rules"
TINY_RULES = get_rules("tiny-test", rules_root=TEST_RULES)
OPTIONS = CheckOptions(rules_root=TEST_RULES)


def plans(scale: float, energy: float = 1500.0):
    # tiny-test: 3 trials, target 0.9; epoch times spread a little so that the test has a variance
    return [synthetic.TrialPlan(seed=100 + k, metrics=[0.5, 0.95], epoch_s=scale * (30.0 + 1.5 * k),
                                train_energy_j=energy * scale) for k in range(3)]


def folder(root: Path, scale: float, energy: float = 1500.0) -> Path:
    synthetic.write_submission(root, TINY_RULES, registry.for_rules(TINY_RULES).build_model(),
                               plans=plans(scale, energy))
    return root


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return folder(tmp_path_factory.mktemp("base"), 1.0)


@pytest.fixture(scope="module")
def slower(tmp_path_factory):
    return folder(tmp_path_factory.mktemp("slow"), 1.3)


def report(path):
    return check_path(path, OPTIONS).to_dict()


def test_slower_new_is_a_significant_regression(base, slower):
    result = compare_reports(report(base), report(slower), threshold=0.1)
    (row,) = result["benchmarks"]
    assert row["verdict"] == "slower" and result["regressed"] == ["tiny-test"]
    assert row["mean_time_ratio"] == pytest.approx(1.3, rel=1e-3)  # 5 ms of run_stop slack per trial
    assert row["energy_ratio"] == pytest.approx(1.3, rel=1e-6)
    assert row["welch_log_time"]["p_slower"] < 0.05
    low, high = row["ci95_mean_time_ratio"]
    assert low <= 1.3 <= high and low > 1.0


def test_same_folder_is_no_change_and_a_threshold_above_the_slowdown_passes(base, slower):
    same = compare_reports(report(base), report(base))
    assert same["benchmarks"][0]["verdict"] == "no significant change" and same["regressed"] == []
    assert same["benchmarks"][0]["mean_time_ratio"] == 1.0
    # 30 % slower, but the gate is 50 %: significant, yet within the threshold
    assert compare_reports(report(base), report(slower), threshold=0.5)["regressed"] == []
    # the other way round NEW is faster
    assert compare_reports(report(slower), report(base), threshold=0.1)["benchmarks"][0]["verdict"] == "faster"


def test_welch_and_bootstrap_need_two_trials_a_side():
    test = welch_log([10.0], [12.0, 13.0])
    assert test["p_slower"] is None and "needs 2 timed trials" in test["reason"]
    assert bootstrap_ratio([10.0], [12.0, 13.0]) is None
    # the interval is reproducible: a fixed seed
    assert bootstrap_ratio([10, 11, 12], [13, 14, 15]) == bootstrap_ratio([10, 11, 12], [13, 14, 15])


def test_cli_exit_status_json_and_markdown(base, slower, capsys):
    args = ["--rules-dir", str(TEST_RULES)]
    assert main(["compare", str(base), str(slower), "--threshold", "0.1", "--json", *args]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "trainmark-compare/1" and out["regressed"] == ["tiny-test"]
    assert main(["compare", str(base), str(base), "--format", "md", *args]) == 0
    md = capsys.readouterr().out
    assert md.startswith("## trainmark compare: no significant slowdown")
    assert "| tiny-test | no significant change | 3/3 |" in md
    assert main(["compare", str(base), str(slower), "--threshold", "-1", *args]) == 2


def test_no_common_benchmark_exits_2_with_one_line(base, tmp_path, capsys):
    rules = get_rules("resnet-mini")
    synthetic.write_submission(tmp_path / "other", rules, synthetic.tiny_reference_model())
    with pytest.raises(UserError, match="no benchmark in common"):
        compare_reports(report(base), check_path(tmp_path / "other", CheckOptions(
            reference_builder=lambda r: synthetic.tiny_reference_model())).to_dict())
    assert main(["compare", str(base), str(tmp_path / "other"), "--rules-dir", str(TEST_RULES)]) == 2
    err = capsys.readouterr().err
    assert "no benchmark in common" in err and err.count("\n") == 1


def test_missing_energy_gives_no_ratio_and_says_why(base, tmp_path):
    plain = tmp_path / "plain"
    synthetic.write_submission(plain, TINY_RULES, registry.for_rules(TINY_RULES).build_model(), plans=[
        synthetic.TrialPlan(seed=100 + k, metrics=[0.5, 0.95], train_energy_j=None, eval_energy_j=None)
        for k in range(3)])
    (row,) = compare_reports(report(base), report(plain))["benchmarks"]
    assert row["energy_ratio"] is None and row["energy_reason"].startswith("NEW: ")


def test_an_archive_compares_like_its_folder(base, slower, tmp_path, capsys):
    from trainmark.checker.pack import write_archive

    tgz, _, _ = write_archive(base, tmp_path / "base.tar.gz")
    assert main(["compare", str(tgz), str(slower), "--threshold", "0.1", "--json", "--rules-dir", str(TEST_RULES)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["base"] == str(tgz.resolve()) and out["regressed"] == ["tiny-test"]


MLPERF = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"


@pytest.mark.skipif(not MLPERF.is_dir(), reason=f"no MLPerf fixture at {MLPERF}")
def test_mlperf_runs_compare_in_seconds():
    system = MLPERF / "Dell" / "results" / "XE8640x4H100-SXM-80GB"
    rep = check_path(system).to_dict()
    result = compare_reports(rep, rep)
    assert [r["benchmark"] for r in result["benchmarks"]] == ["gnn", "resnet"]
    for row, bench in zip(result["benchmarks"], sorted(rep["benchmarks"], key=lambda b: b["benchmark"])):
        assert row["verdict"] == "no significant change" and row["score_ratio"] == 1.0
        assert row["base_score_s"] == pytest.approx(bench["score"]["score_minutes"] * 60)
        assert row["energy_ratio"] is None and "MLPerf" in row["energy_reason"]
