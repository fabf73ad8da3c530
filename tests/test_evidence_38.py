"""Issue 38, "no number on the submitter's word": each class of forgery rebuilt from a copy of a committed example
(tests/forge.py; the MLPerf v4.0 fixture for MLPerf) exits 1 with its own finding."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trainmark.checker.check import check_path

MLPERF_FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"


@pytest.mark.skipif(not MLPERF_FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
def test_an_mlperf_run_logging_open_under_a_closed_system_is_mlperf_018(tmp_path):
    root = tmp_path / "v4.0"
    shutil.copytree(MLPERF_FIXTURE, root)
    path = root / "Dell" / "results" / "R760xax4L40S" / "resnet" / "result_0.txt"
    text = path.read_text(encoding="latin-1")
    path.write_text(text.replace('"key": "submission_division", "value": "closed"',
                                 '"key": "submission_division", "value": "open"'), encoding="latin-1")
    report = check_path(root)
    found = [f for f in report.findings if f.rule == "MLPERF-018"]
    assert report.exit_code == 1 and found and found[0].file.endswith("resnet/result_0.txt")
    assert "'open'" in found[0].message and found[0].severity == "error"
