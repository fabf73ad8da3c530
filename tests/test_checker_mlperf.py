"""MLPerf Training result folders: read them and score them the way MLPerf does."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.mlperf.results import infer_ruleset

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"
pytestmark = pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")

# Provenance: computed once with mlperf-logging 4.1.68's own summarizer on a copy of the fixture,
#   python -m mlperf_logging.result_summarizer <copy>/Dell training 4.0.0 --csv summary.csv
# (bert includes the review's scaling.json factor 1.029979955725132; result_9.txt of bert
# fails compliance and is the one dropped run).
MLPERF_SUMMARIZER_MINUTES = {
    ("R760xax4L40S", "bert"): 82.69514655800441,
    ("R760xax4L40S", "resnet"): 85.95998333333334,
    ("R760xax4L40S", "ssd"): 203.3843888888889,
    ("XE8640x4H100-SXM-80GB", "gnn"): 28.60275625,
    ("XE8640x4H100-SXM-80GB", "resnet"): 26.881916666666665,
}


def scores(report):
    return {(b.system, b.benchmark): b.score for b in report.benchmarks}


def test_fixture_scores_match_mlperfs_summarizer():
    report = check_path(FIXTURE)
    assert report.level == "submission"
    got = {k: s["score_minutes"] for k, s in scores(report).items()}
    assert got == pytest.approx(MLPERF_SUMMARIZER_MINUTES, rel=1e-12)
    assert report.exit_code == 0
    assert [(f.rule, f.file) for f in report.findings if f.severity != "info"] == [
        ("MLPERF-001", "Dell/results/R760xax4L40S/bert/result_9.txt")]
    assert {b.division for b in report.benchmarks} == {"closed"}


@pytest.mark.parametrize("sub", ["Dell", "Dell/results/R760xax4L40S", "Dell/results/R760xax4L40S/resnet"])
def test_every_level_of_the_fixture(sub):
    report = check_path(FIXTURE / sub)
    assert scores(report)[("R760xax4L40S", "resnet")]["score_minutes"] == pytest.approx(85.95998333333334)


def test_a_compliance_failure_names_its_line_and_what_was_logged_there():
    """MLPERF-001 carries the line (an AT_LEAST_ONE check no occurrence passed: the key's last line) and, as
    seen, the value logged on it rather than the message again (issue 42)."""
    (f,) = [f for f in check_path(FIXTURE).findings if f.rule == "MLPERF-001"]
    path = FIXTURE / f.file
    line = path.read_text(encoding="latin-1").splitlines()[f.line - 1]
    assert '"key": "eval_accuracy"' in line and f"{float(f.seen):.4f}" == "0.7194" and f.seen in line
    assert f.seen not in f.message and float(f.seen) < 0.72


def test_ruleset_from_path():
    assert infer_ruleset(FIXTURE) == "4.0.0"


@pytest.fixture
def copy(tmp_path):
    dest = tmp_path / "mlperf-training-v4.0"
    shutil.copytree(FIXTURE, dest)
    return dest / "Dell" / "results" / "R760xax4L40S"


def abort_run(path: Path) -> None:
    text = path.read_text(encoding="latin-1").replace('"status": "success"', '"status": "aborted"')
    path.write_text(text, encoding="latin-1")


def test_mlperf_002_run_without_success_is_dropped_as_slowest(copy):
    abort_run(copy / "resnet" / "result_0.txt")
    report = check_path(copy / "resnet", CheckOptions(mlperf_ruleset="4.0.0"))
    (finding,) = [f for f in report.findings if f.rule == "MLPERF-002"]
    assert finding.file == "result_0.txt" and finding.line is not None
    score = report.benchmarks[0].score
    runs = sorted(r["minutes"] for r in score["runs"] if not r["dropped"])
    assert score["score_minutes"] == pytest.approx(sum(runs[1:]) / 3)  # fastest dropped; the failed one as slowest


def test_mlperf_003_too_many_dropped_no_score(copy):
    abort_run(copy / "resnet" / "result_0.txt")
    (copy / "resnet" / "result_1.txt").write_text("garbage\n")
    report = check_path(copy / "resnet")
    assert report.benchmarks[0].score["score_minutes"] is None
    assert report.exit_code == 1
    assert any(f.rule == "MLPERF-003" for f in report.findings)


def test_mlperf_004_too_few_files_and_005_bad_scaling(copy):
    (copy / "resnet" / "result_4.txt").unlink()
    (copy / "bert" / "scaling.json").write_text(json.dumps({"scaling_factor": "big"}))
    report = check_path(copy)
    rules = {(f.rule, f.file) for f in report.findings}
    assert ("MLPERF-004", "resnet") in rules and ("MLPERF-005", "bert/scaling.json") in rules
    # the factor is computed from MLPerf's reference convergence points, never read from scaling.json
    assert scores(report)[("R760xax4L40S", "bert")]["scaling_factor"] == 1.029979955725132


def test_malformed_mlperf_line_drops_the_run_without_crashing(copy):
    path = copy / "ssd" / "result_2.txt"
    path.write_text(path.read_text(encoding="latin-1") + ':::MLLOG {"key": "run_stop"}\n', encoding="latin-1")
    report = check_path(copy / "ssd")
    (finding,) = [f for f in report.findings if f.rule == "MLPERF-001"]
    assert finding.file == "result_2.txt" and "time_ms" in finding.message
    assert report.benchmarks[0].score["dropped"] == 1
