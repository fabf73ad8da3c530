"""``--precision auto`` (harness/precision_choice.py): amp only where the rules calibrate the reference in amp-bf16
and the device computes bf16 in its own units; fp32 otherwise, and the banner says why."""
from __future__ import annotations

import shutil

import pytest
import yaml
from conftest import TEST_RULES

from trainmark.cli import main
from trainmark.harness import precision_choice
from trainmark.harness.measure import peaks
from trainmark.rules import get_rules


@pytest.fixture
def bf16_units(monkeypatch):
    """This CPU computes bf16 itself (AVX512-BF16), whatever the test machine's CPU is."""
    monkeypatch.setattr(peaks, "cpu_native", lambda dtype: "avx512_bf16" if dtype == "bf16" else None)


@pytest.fixture
def no_bf16_units(monkeypatch):
    monkeypatch.setattr(peaks, "cpu_native", lambda dtype: None)


def test_amp_where_the_rules_calibrate_it_and_the_cpu_has_bf16_units(bf16_units):
    rules = get_rules("resnet-mini")   # rules 1.2 carry an amp-bf16 band at batch 128
    precision, why = precision_choice.choose(rules, 128, "pytorch", "cpu")
    assert precision == "amp" and "resnet-mini in amp-bf16" in why and "avx512_bf16" in why


def test_fp32_without_bf16_units_or_without_a_calibration(no_bf16_units, monkeypatch):
    assert precision_choice.choose(get_rules("resnet-mini"), 128, "pytorch", "cpu")[0] == "fp32"
    monkeypatch.setattr(peaks, "cpu_native", lambda dtype: "avx512_bf16")
    precision, why = precision_choice.choose(get_rules("ds2-mini"), 32, "pytorch", "cpu")   # no amp band
    assert precision == "fp32" and "ds2-mini at batch 32 in fp32 only" in why
    precision, why = precision_choice.choose(get_rules("resnet-mini"), 128, "tensorflow", "cpu")  # the twin's: fp32
    assert precision == "fp32" and "resnet-mini@tensorflow" in why


def _rules_with_an_amp_band(tmp_path):
    root = tmp_path / "rules"
    shutil.copytree(TEST_RULES, root)
    path = root / "1.2" / "tiny-test.yaml"
    data = yaml.safe_load(path.read_text())
    data["curve_band"] = {"severity": "warning", "tolerance": 0.05, "source": "tests only",
                          "bands": [{"implementation": "tiny-test", "global_batch_size": 32, "precision": "amp-bf16",
                                     "epochs": [[1, 0.5, 1.0], [2, 0.5, 1.0]]}]}
    path.write_text(yaml.safe_dump(data))
    return root


def _run(tmp_path, rules_dir, out: str) -> int:
    return main(["run", "tiny-test", "--rules-dir", str(rules_dir), "--out", str(tmp_path / out), "--trials", "1",
                 "--seed", "3", "--telemetry-hz", "0", "--precision", "auto"])


def test_a_run_with_precision_auto_logs_what_it_chose_and_says_why(tmp_path, capsys, bf16_units):
    rules_dir = _rules_with_an_amp_band(tmp_path)
    assert _run(tmp_path, rules_dir, "amp") == 0
    err = capsys.readouterr().err
    assert "precision amp (auto: rules 1.2 calibrate tiny-test in amp-bf16, and this CPU computes bf16" in err
    logs = "".join(p.read_text() for p in (tmp_path / "amp").rglob("result_1.txt"))
    assert '"key": "trainmark_precision", "value": "amp-bf16"' in logs


def test_a_run_with_precision_auto_stays_fp32_where_the_rules_have_no_amp_band(tmp_path, capsys, bf16_units):
    assert _run(tmp_path, TEST_RULES, "fp32") == 0
    err = capsys.readouterr().err
    assert "precision fp32 (auto: rules 1.2 calibrate tiny-test at batch 32 in fp32 only)" in err
    logs = "".join(p.read_text() for p in (tmp_path / "fp32").rglob("result_1.txt"))
    assert '"key": "trainmark_precision", "value": "fp32"' in logs
