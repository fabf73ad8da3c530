"""Fuzz: whatever string a submission logs, the checker opens nothing outside the folder and our code.

An audit hook (``sys.addaudithook``) sees every ``open`` the interpreter makes while a check
runs. Hypothesis replaces the string values of a real MLPerf result file and of a trainmark
result file with paths, dots, slashes, NUL, very long and non-ASCII strings; every opened path
must lie in the checked folder, in trainmark's own source, in mlperf-logging's shipped configs
or in the checker's own temporary folder.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import synthetic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trainmark
from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.mlperf.compliance_configs import MLPERF_CONFIG_DIR
from trainmark.rules import get_rules

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"
REPO = Path(trainmark.__file__).resolve().parents[1]
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())

_recording: list[str] | None = None


def _hook(event, args):
    if _recording is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _recording.append(os.fsdecode(args[0]))


sys.addaudithook(_hook)  # cannot be removed; records only while _recording is a list


def opened_during(fn):
    global _recording
    _recording = []
    try:
        result = fn()
    finally:
        seen, _recording = _recording, None
    return result, seen


def outside(paths: list[str], checked: Path) -> list[str]:
    allowed = [os.path.realpath(p) for p in (checked, REPO, MLPERF_CONFIG_DIR)]
    temp = os.path.realpath(tempfile.gettempdir())
    bad = []
    for p in paths:
        real = os.path.realpath(p)
        if any(real == a or real.startswith(a + os.sep) for a in allowed):
            continue
        if real.startswith(os.path.join(temp, "trainmark-check-")):   # the checker's own generated configs
            continue
        bad.append(p)
    return bad


HOSTILE = st.one_of(
    st.sampled_from(["../../../../etc/passwd", "/etc/passwd", "..", ".", "/", "closed/../../x", "x\x00y",
                     "training_4.0.0/../../x", "~/.bashrc", "C:\\Windows\\win.ini", "file:///etc/passwd",
                     "\u202e\u0000\u00ff", "résumé/ñ", "a" * 100_000, "../" * 200 + "tmp/x", "%s%n", "{}{}"]),
    st.text(min_size=0, max_size=200),
    st.text(alphabet="./\\\x00-_ab", min_size=1, max_size=60),
)


def _replace_value(path: Path, key: str, value: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if line.startswith(":::MLLOG ") and f'"key": "{key}"' in line:
            record = json.loads(line[len(":::MLLOG "):])
            record["value"] = value
            lines[i] = ":::MLLOG " + json.dumps(record)
            break
    path.write_text("\n".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def mlperf_src(tmp_path_factory):
    if not FIXTURE.is_dir():
        pytest.skip("needs ../shared/fixtures/mlperf-training-v4.0")
    root = tmp_path_factory.mktemp("mlperf") / "training_results_v4.0" / "Dell"
    (root / "results").mkdir(parents=True)
    shutil.copytree(FIXTURE / "Dell" / "results" / "R760xax4L40S" / "resnet", root / "results" / "sys" / "resnet")
    check_path(root / "results" / "sys" / "resnet")  # lazy imports happen here, before anything is recorded
    return root / "results" / "sys" / "resnet"


@pytest.fixture(scope="module")
def trainmark_src(tmp_path_factory):
    root = tmp_path_factory.mktemp("tm")
    synthetic.write_submission(root, get_rules("resnet-mini"), synthetic.tiny_reference_model())
    check_path(root, TINY)  # lazy imports happen here, before anything is recorded
    return root


MLPERF_KEYS = ["submission_division", "submission_benchmark", "opt_name", "submission_org", "submission_platform",
               "submission_status"]
TRAINMARK_KEYS = ["submission_division", "submission_benchmark", "trainmark_rules_version", "submission_org",
                  "trainmark_precision", "opt_name", "trainmark_energy_method"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(MLPERF_KEYS), value=HOSTILE, k=st.integers(0, 4))
def test_mlperf_values_open_nothing_outside(mlperf_src, tmp_path_factory, key, value, k):
    work = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())) / "v4.0" / "resnet"
    shutil.copytree(mlperf_src, work)
    _replace_value(work / f"result_{k}.txt", key, value)
    report, opened = opened_during(lambda: check_path(work))
    assert outside(opened, work.parent) == []
    assert report.exit_code in (0, 1)
    shutil.rmtree(work.parent)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(TRAINMARK_KEYS), value=HOSTILE, k=st.integers(1, 5))
def test_trainmark_values_open_nothing_outside(trainmark_src, tmp_path_factory, key, value, k):
    work = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())) / "sub"
    shutil.copytree(trainmark_src, work)
    _replace_value(next(work.glob("closed/*/results/*/resnet-mini")) / f"result_{k}.txt", key, value)
    report, opened = opened_during(lambda: check_path(work, TINY))
    assert outside(opened, work) == []
    assert report.exit_code in (0, 1)
    shutil.rmtree(work.parent)


def test_the_audit_hook_does_see_a_foreign_open(tmp_path):
    """The hook is live: opening a file outside the folder is caught (so the tests above can fail)."""
    foreign = tmp_path / "elsewhere.txt"
    foreign.write_text("x")
    _, opened = opened_during(lambda: foreign.read_text())
    assert outside(opened, tmp_path / "checked") == [str(foreign)]
