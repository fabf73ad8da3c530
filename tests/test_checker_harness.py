"""A folder the real harness wrote (``trainmark run`` on the test benchmark) passes the checker."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainmark.checker.check import CheckOptions, check_path
from trainmark.cli import main

TEST_RULES = Path(__file__).parent / "rules"


@pytest.fixture(scope="module")
def harness_output(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    code = main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", str(out), "--quiet", "--seed", "11",
                 "--submitter", "acme"])
    assert code == 0
    return out


def test_harness_folder_passes_and_scores_match_its_own_summary(harness_output):
    report = check_path(harness_output, CheckOptions(rules_root=TEST_RULES))
    assert [(f.rule, f.file, f.line) for f in report.findings if f.severity == "error"] == []
    (bench,) = report.benchmarks
    assert bench.score["trials"] == 3
    bench_dir = harness_output / bench.path
    for trial in bench.trials:
        own = json.loads((bench_dir / f"trial_{trial['trial']}" / "trial.json").read_text())
        assert trial["train_time_s"] == pytest.approx(own["train_time_s"], abs=0.05)
        assert trial["final_metric"] == pytest.approx(own["final_metric"])
        assert trial["converged"] == (own["status"] == "converged")


def test_tampered_harness_folder_fails(harness_output, tmp_path):
    import shutil
    root = tmp_path / "copy"
    shutil.copytree(harness_output, root)
    (log,) = root.glob("closed/acme/results/*/tiny-test/epochs.log")
    lines = log.read_text(encoding="utf-8").split("\n")
    lines[0] = lines[0][:-7] + "0.0001]"
    log.write_text("\n".join(lines), encoding="utf-8")
    report = check_path(root, CheckOptions(rules_root=TEST_RULES))
    assert report.exit_code == 1
    assert ("AGREE-003", 1) in {(f.rule, f.line) for f in report.findings}
