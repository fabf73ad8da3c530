"""Issue 31: the MLPerf ruleset is known, never guessed (path, --mlperf-ruleset, or unique evidence; else exit 2)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.mlperf.results import choose_ruleset, in_ruleset
from trainmark.cli import main
from trainmark.errors import UserError

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"
needs_fixture = pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")


def _scores(report) -> dict:
    return {b.path: b.score.get("score_minutes") for b in report.benchmarks}


def test_membership_comes_from_mlperf_loggings_own_configs():
    assert in_ruleset("resnet", "4.0.0") and not in_ruleset("resnet", "4.1.0")
    assert in_ruleset("llama31_405b", "5.0.0") and not in_ruleset("llama31_405b", "4.0.0")
    assert in_ruleset("mask", "1.0.0") == in_ruleset("maskrcnn", "1.0.0")


def test_a_path_naming_no_round_and_ambiguous_benchmarks_asks_for_the_ruleset(tmp_path):
    with pytest.raises(UserError, match="--mlperf-ruleset") as err:
        choose_ruleset(tmp_path, None, {"bert"})
    assert "candidates: 0.7.0" in str(err.value) and "5.1.0" in str(err.value)
    assert choose_ruleset(tmp_path, None, {"gnn", "resnet"})[0] == "4.0.0"       # only 4.0 has both
    assert choose_ruleset(tmp_path / "training_results_v3.1" / "x", None, {"bert"})[0] == "3.1.0"
    assert choose_ruleset(tmp_path, "5.0.0", {"bert"})[1].endswith("(from --mlperf-ruleset)")


@needs_fixture
def test_a_copy_without_the_round_in_its_path_is_refused_with_exit_2(tmp_path, capsys):
    dest = tmp_path / "some-results" / "Dell"
    shutil.copytree(FIXTURE / "Dell", dest, ignore=shutil.ignore_patterns("gnn", "resnet", "ssd"))
    assert main(["check", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "--mlperf-ruleset" in err and "candidates" in err
    for command in (["table", str(dest)], ["report", str(dest), "--output", str(tmp_path / "r.html")]):
        assert main(command) == 2, command
    capsys.readouterr()
    assert main(["check", str(dest), "--mlperf-ruleset", "4.0.0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"][0].endswith("(from --mlperf-ruleset)")


@needs_fixture
def test_evidence_that_names_one_ruleset_gives_the_same_scores_as_the_path(tmp_path):
    dest = tmp_path / "results"
    shutil.copytree(FIXTURE, dest)
    by_path, by_evidence = check_path(FIXTURE), check_path(dest)
    assert _scores(by_path) == _scores(by_evidence) and any(_scores(by_path).values())
    assert "the only ruleset with every benchmark present" in by_evidence.notes[0]


@needs_fixture
def test_a_benchmark_outside_the_ruleset_is_mlperf_006_not_security_001():
    report = check_path(FIXTURE, CheckOptions(mlperf_ruleset="4.1.0"))  # 4.1 dropped resnet
    rules = {f.rule for f in report.findings}
    assert "MLPERF-006" in rules and "SECURITY-001" not in rules
    assert not [b for b in report.benchmarks if b.benchmark == "resnet"]
