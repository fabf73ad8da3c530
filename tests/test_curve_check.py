"""Curve conformity: CURVE-001 (warning) / CURVE-002 (error) when a trial leaves the rules' reference band."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import synthetic
import yaml

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks.curve import CURVE_001, clipped, outside
from trainmark.rules import LATEST_VERSION, get_rules
from trainmark.rules.convergence import band_for
from trainmark.rules.ruleset import validate

ROOT = Path(__file__).resolve().parents[1]
BENCH = "closed/acme/results/sys1/resnet-mini"
# the synthetic plans run through the middle of the band, then finish at 0.9131 in epoch 5
BAND = [[1, 0.65, 0.72], [2, 0.70, 0.77], [3, 0.75, 0.82], [4, 0.80, 0.87], [5, 0.85, 0.92], [6, 0.90, 0.92]]


def rules_with_band(tmp_path: Path, severity="warning", batch=256) -> Path:
    """Rules 1.1's resnet-mini (every seed in epoch 5 at batch 256) as the latest version, with this file's band."""
    root = tmp_path / "rules"
    (root / LATEST_VERSION).mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((ROOT / "rules" / "1.1" / "resnet-mini.yaml").read_text())
    data["rules_version"] = LATEST_VERSION
    data["curve_band"] = {"severity": severity, "tolerance": 0.02, "source": "test",
                          "bands": [{"implementation": "resnet-mini", "global_batch_size": batch,
                                     "precision": "fp32", "epochs": BAND}]}
    (root / LATEST_VERSION / "resnet-mini.yaml").write_text(yaml.safe_dump(data))
    return root


def band_plans(tmp_path):
    """The default synthetic trials for rules with this file's band: inside it at every epoch."""
    return synthetic.default_plans(get_rules("resnet-mini", rules_root=rules_with_band(tmp_path / "plans")))


def check(tmp_path, plans=None, division="closed", **band):
    sub = tmp_path / "sub"
    root = rules_with_band(tmp_path, **band)
    synthetic.write_submission(sub, get_rules("resnet-mini", rules_root=rules_with_band(tmp_path / "written")),
                               synthetic.tiny_reference_model(), plans=plans or band_plans(tmp_path),
                               division=division)
    options = CheckOptions(rules_root=root, reference_builder=lambda r: synthetic.tiny_reference_model())
    return sub, check_path(sub, options)


def curve_findings(report):
    return [f for f in report.findings if f.rule.startswith("CURVE-")]


def off_band_plans(tmp_path):
    plans = band_plans(tmp_path)
    plans[1] = synthetic.TrialPlan(plans[1].seed, [0.71, 0.60, 0.81, 0.86, 0.9131], plans[1].epoch_s)  # epoch 2 low
    return plans


def test_outside_measures_the_distance_to_the_band():
    assert outside(0.5, 0.6, 0.7) == pytest.approx(0.1)
    assert outside(0.75, 0.6, 0.7) == pytest.approx(0.05)
    assert outside(0.65, 0.6, 0.7) == 0.0


def test_trials_inside_the_band_give_no_finding(tmp_path):
    _, report = check(tmp_path)
    assert curve_findings(report) == [] and report.exit_code == 0


def test_a_trial_off_the_band_is_a_warning_at_its_line(tmp_path):
    sub, report = check(tmp_path, plans=off_band_plans(tmp_path))
    (f,) = curve_findings(report)
    line = synthetic.mllog_lines_of(sub / BENCH / "result_2.txt", "eval_accuracy")[1]  # epoch 2
    assert (f.rule, f.severity, f.file, f.line) == ("CURVE-001", "warning", f"{BENCH}/result_2.txt", line)
    assert "0.6000 after epoch 2 is below the reference band [0.7000, 0.7700]" in f.message
    assert report.exit_code == 0


def test_severity_error_in_the_rules_fails_the_check(tmp_path):
    _, report = check(tmp_path, plans=off_band_plans(tmp_path), severity="error")
    assert [f.rule for f in curve_findings(report)] == ["CURVE-002"] and report.exit_code == 1


def test_open_division_and_other_batch_sizes_are_not_judged(tmp_path):
    _, report = check(tmp_path / "open", plans=off_band_plans(tmp_path), division="open")
    assert curve_findings(report) == []
    _, report = check(tmp_path / "bs", plans=off_band_plans(tmp_path), batch=512)
    assert curve_findings(report) == []


def test_a_twin_is_judged_by_its_own_band(tmp_path):
    """Bands are kept per implementation: TensorFlow trials are held to ``resnet-mini@tensorflow``'s band,
    not to the PyTorch reference's, and have none when the rules give none."""
    plans = off_band_plans(tmp_path)
    for plan in plans:
        plan.framework = "tensorflow"
    _, report = check(tmp_path / "none", plans=plans)
    assert curve_findings(report) == []  # no band of the twin: not judged
    root = rules_with_band(tmp_path / "twin")
    path = root / LATEST_VERSION / "resnet-mini.yaml"
    data = yaml.safe_load(path.read_text())
    twin_band = [[e, round(low - 0.2, 4), high] for e, low, high in BAND]  # wide enough for the low epoch 2
    data["curve_band"]["bands"].append({**data["curve_band"]["bands"][0], "implementation": "resnet-mini@tensorflow",
                                        "epochs": twin_band})
    path.write_text(yaml.safe_dump(data))
    rules = get_rules("resnet-mini", rules_root=root)
    assert band_for(rules, 256, "fp32", "tensorflow")[2] == (0.5, 0.77)
    assert band_for(rules, 256, "fp32")[2] == (0.7, 0.77)
    sub = tmp_path / "sub"
    synthetic.write_submission(sub, get_rules("resnet-mini", rules_root=rules_with_band(tmp_path / "written")),
                               synthetic.tiny_reference_model(), plans=plans)
    report = check_path(sub, CheckOptions(rules_root=root,
                                          reference_builder=lambda r: synthetic.tiny_reference_model()))
    assert curve_findings(report) == []
    # the twin's own band narrow, the reference's wide: the TensorFlow trial 2 is flagged by the twin's band
    data["curve_band"]["bands"][0]["epochs"] = twin_band
    data["curve_band"]["bands"][1]["epochs"] = BAND
    path.write_text(yaml.safe_dump(data))
    report = check_path(sub, CheckOptions(rules_root=root,
                                          reference_builder=lambda r: synthetic.tiny_reference_model()))
    (f,) = curve_findings(report)
    assert (f.rule, f.severity, f.file) == ("CURVE-001", "warning", f"{BENCH}/result_2.txt")
    assert "0.6000 after epoch 2 is below the reference band [0.7000, 0.7700]" in f.message


def test_a_band_widened_by_the_tolerance_stays_inside_the_metrics_range():
    """A WER band [0.0082, 0.0898] with tolerance 0.01 is 'within [0.0000, 0.0998]', never below 0; an
    accuracy band is never above 1 (issue 42); an end the rules leave open is not clipped."""
    assert clipped(-0.0018, 0.0998, [0.0, None]) == (0.0, 0.0998)
    assert clipped(0.85, 1.01, [0.0, 1.0]) == (0.85, 1.0)
    assert clipped(-5.0, 5.0, [None, None]) == (-5.0, 5.0)


def test_shipped_bands_validate_and_match_their_calibration():
    for name in ("resnet-mini", "inception-mini", "vgg-mini", "ds2-mini", "lstm-mini", "transformer-mini"):
        rules = get_rules(name)
        batch = rules.defaults()["global_batch_size"]
        band = band_for(rules, batch, "fp32")
        assert band and all(low <= high for low, high in band.values()), name
        every = rules.evaluation["every_epochs"]  # a band holds the evaluated epochs, every one of them
        assert sorted(band) == list(range(every, max(band) + 1, every)), name
    # inception-mini's epoch-1 band under rules 1.2: seeds 1006 and 1005 of docs/calibration.md's table (2026-12-05)
    assert band_for(get_rules("inception-mini"), 128, "fp32")[1] == (0.8079, 0.8777)


def test_schema_refuses_a_malformed_band(tmp_path):
    from trainmark.rules.ruleset import RulesError

    rules = get_rules("inception-mini")
    data = copy.deepcopy(rules.data)
    data["curve_band"]["bands"][0]["epochs"][0] = [1, 0.5]
    with pytest.raises(RulesError, match="curve_band"):
        validate(data, rules.path)
    data = copy.deepcopy(rules.data)
    data["curve_band"]["severity"] = "fatal"
    with pytest.raises(RulesError, match="curve_band"):
        validate(data, rules.path)


@pytest.mark.skipif(not (ROOT / "submissions").is_dir(), reason="no example submissions")
def test_example_submissions_stay_near_their_bands():
    """Our own reference runs stay inside the calibrated bands: since 2026-12-07 no trial of the examples leaves its
    band (docs/submissions.md). A warning, never an error; a new one fails here until it is documented."""
    report = check_path(ROOT / "submissions")
    seen_at = set()
    for f in curve_findings(report):
        assert f.rule == CURVE_001 and "epochs out of the band" not in f.message, f.message
        parts = Path(f.file).parts
        trial, epoch = (int(x) for x in re.search(r"trial (\d+): .* after epoch (\d+)", f.message).groups())
        seen_at.add((parts[-2], parts[-3], trial, epoch, float(f.seen)))
        low, high = (float(x) for x in re.fullmatch(r"within \[(\S+), (\S+)\]", f.expected).groups())
        assert 0.0 <= low <= high  # a WER band is clipped at 0 (issue 42), never below
    assert seen_at == set()
