"""harness/calibration.py: the statistics `trainmark calibrate` prints, without training anything."""
from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from trainmark.harness import calibration


class _Rules:
    target = 0.9

    @staticmethod
    def reached(value, target):
        return value >= target


def _trial(status, epochs, curve, train_s=10.0):
    history = [NS(epoch=k, metric=m, train_s=train_s) for k, m in enumerate(curve, 1)]
    return NS(status=status, epochs=epochs, train_time_s=train_s * epochs, history=history)


def test_target_report_counts_converged_trials():
    summary = NS(results=[_trial("converged", 2, [0.5, 0.95]), _trial("converged", 3, [0.3, 0.6, 0.92], 12.0),
                          _trial("failed", 6, [0.1] * 6)])
    report, ok = calibration.target_report("tiny-test", _Rules, summary, [None, 1.0, 2.0])
    assert not ok
    assert list(report) == ["benchmark", "target", "trials", "converged", "mean_epochs", "std_epochs",
                            "train_time_s", "train_time_cv", "other_cpu_load_pct"]
    assert report["converged"] == 2 and report["mean_epochs"] == 2.5 and report["std_epochs"] == 0.5
    assert report["train_time_s"] == [20.0, 36.0] and report["train_time_cv"] == pytest.approx(0.4041, abs=1e-4)
    assert report["other_cpu_load_pct"] == [None, 1.0, 2.0]


def test_curves_report_judges_every_target():
    summary = NS(results=[_trial("converged", 6, [0.5, 0.8, 0.91, 0.93, 0.95, 0.96]),
                          _trial("converged", 6, [0.4, 0.7, 0.85, 0.92, 0.94, 0.94])])
    report, ok = calibration.curves_report("tiny-test", _Rules, summary, 7, [0.95, 0.99], [None, None])
    assert ok and report["seeds_from"] == 7
    assert report["targets"]["0.9"]["epochs_to_target"] == [3, 4] and report["targets"]["0.9"]["epochs_range"] == [3, 4]
    assert report["targets"]["0.9"]["train_time_s"] == [30.0, 40.0]
    assert report["targets"]["0.95"]["epochs_to_target"] == [5, None] and report["targets"]["0.95"]["converged"] == 1
    assert report["targets"]["0.99"]["epochs_range"] is None and report["targets"]["0.99"]["train_time_cv"] is None
    failing = NS(results=[_trial("converged", 6, [0.5] * 6)])
    assert calibration.curves_report("tiny-test", _Rules, failing, None, [], [None])[1] is False


def test_other_load_reads_trial_json_or_none(tmp_path):
    from trainmark.format import layout

    trial = tmp_path / layout.trial_dir(1)
    trial.mkdir()
    (trial / layout.TRIAL_JSON).write_text(json.dumps({"other_cpu_load_pct": 12.5}))
    (tmp_path / layout.trial_dir(2)).mkdir()
    (tmp_path / layout.trial_dir(2) / layout.TRIAL_JSON).write_text("{not json")
    summary = NS(bench_dir=tmp_path, results=[None, None, None])
    assert calibration.other_loads(summary) == [12.5, None, None]
