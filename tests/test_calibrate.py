"""``trainmark calibrate``: epochs-to-target at the rules' target, and from full curves."""
from __future__ import annotations

import json

from conftest import TEST_RULES
from tiny_reference import TinyTest

from trainmark.cli import main


def _metrics(values):
    it = iter(values)
    return lambda: next(it)


def test_calibrate_stops_at_target_and_reports_epochs(capsys):
    TinyTest.metric_override = _metrics([0.5, 0.95] + [0.3, 0.6, 0.92] + [0.91])
    rc = main(["calibrate", "tiny-test", "--trials", "3", "--seed", "7", "--quiet", "--rules-dir", str(TEST_RULES)])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert report["converged"] == 3 and report["target"] == 0.9
    assert report["mean_epochs"] == 2.0


def test_full_curves_train_to_max_epochs_and_judge_other_targets(capsys):
    # tiny-test: target 0.9, max_epochs 6; each trial here sees six evaluations
    curves = [[0.5, 0.8, 0.91, 0.93, 0.95, 0.96], [0.4, 0.7, 0.85, 0.92, 0.94, 0.94]]
    TinyTest.metric_override = _metrics([v for c in curves for v in c])
    rc = main(["calibrate", "tiny-test", "--trials", "2", "--seed", "7", "--quiet", "--full-curves",
               "--what-if", "0.95", "--what-if", "0.99", "--rules-dir", str(TEST_RULES)])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0                      # every trial reaches the rules' own target (0.9)
    assert report["curves"] == curves   # no trial stopped early
    assert report["targets"]["0.9"]["epochs_to_target"] == [3, 4]
    assert report["targets"]["0.95"]["epochs_to_target"] == [5, None]
    assert report["targets"]["0.95"]["converged"] == 1
    assert report["targets"]["0.99"]["converged"] == 0
    t = report["targets"]["0.9"]                                  # the spread the rules record
    assert t["epochs_range"] == [3, 4] and len(t["train_time_s"]) == 2 and t["train_time_cv"] >= 0
    assert report["targets"]["0.99"]["epochs_range"] is None and report["targets"]["0.99"]["train_time_cv"] is None
    assert len(report["other_cpu_load_pct"]) == 2                 # one reading per trial (CPU run)
    assert all(v is None or 0 <= v <= 100 for v in report["other_cpu_load_pct"])


def test_full_curves_fail_when_a_trial_misses_the_rules_target(capsys):
    TinyTest.metric_override = _metrics([0.5] * 6)
    rc = main(["calibrate", "tiny-test", "--trials", "1", "--seed", "7", "--quiet", "--full-curves",
               "--rules-dir", str(TEST_RULES)])
    assert rc == 1
    assert json.loads(capsys.readouterr().out)["targets"]["0.9"]["converged"] == 0


def test_a_full_curve_trial_is_not_said_to_have_missed_the_target(capsys):
    """--full-curves trains past the target (here 0.95 in epoch 6 of 6): its trial line says so, rather than
    "missed the target" beside a metric above it."""
    TinyTest.metric_override = _metrics([0.5, 0.6, 0.7, 0.8, 0.85, 0.95])
    rc = main(["calibrate", "tiny-test", "--trials", "1", "--seed", "7", "--full-curves",
               "--rules-dir", str(TEST_RULES)])
    err = capsys.readouterr().err
    assert rc == 0 and "trial 1 of 1: trained its full curve after 6 epochs" in err and "missed the target" not in err
