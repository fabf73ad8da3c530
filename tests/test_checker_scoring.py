"""Score arithmetic: olympic mean as MLPerf computes it, spread and confidence interval."""
from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainmark.checker.read.trial_record import EvalRecord, TrialRecord
from trainmark.checker.verdict.scoring import confidence_interval, olympic_mean, score_benchmark


def test_olympic_mean_drops_fastest_and_slowest():
    assert olympic_mean([5.0, 1.0, 3.0, 2.0, 4.0], 1, 1) == (3.0, "")


def test_non_converged_counts_as_the_slowest():
    assert olympic_mean([None, 1.0, 2.0, 3.0, 4.0], 1, 1) == (3.0, "")


def test_more_misses_than_allowed_gives_no_score():
    value, reason = olympic_mean([None, None, 2.0, 3.0, 4.0], 1, 1)
    assert value is None and "2 trials" in reason
    value, reason = olympic_mean([None, None, 2.0, 3.0, 4.0], 1, 2)
    assert value is None and "only 1 slowest" in reason


@settings(max_examples=200, deadline=None)
@given(times=st.lists(st.floats(1, 1e4), min_size=1, max_size=12), dropped=st.integers(0, 5),
       max_dropped=st.integers(1, 4))
def test_olympic_mean_equals_mlperf_summarizer(times, dropped, max_dropped):
    from mlperf_logging.result_summarizer.result_summarizer import _compute_olympic_average

    ours, _ = olympic_mean(times + [None] * dropped, max_dropped, max_dropped)
    if dropped > max_dropped:  # the summarizer prints an error and publishes no score
        assert ours is None
        return
    theirs = _compute_olympic_average(list(times), dropped, max_dropped)
    assert (ours is None and theirs is None) or ours == pytest.approx(theirs)


def test_confidence_interval_uses_the_t_distribution_on_the_log_scale():
    values = [10.0, 12.0, 14.0]
    low, high = confidence_interval(values)
    logs = [math.log(v) for v in values]
    half = 4.302652729911275 * statistics.stdev(logs) / math.sqrt(3)  # t(0.975, 2 dof) from tables
    centre = statistics.fmean(logs)
    assert (low, high) == pytest.approx((math.exp(centre - half), math.exp(centre + half)))
    assert confidence_interval([5.0]) is None


def test_a_times_interval_never_goes_below_zero():
    """Five trials with one slow outlier: the plain t-interval was -1262.94..1699.36 s (issue 42)."""
    values = [60.0, 61.0, 62.0, 63.0, 1950.0]
    plain_half = 2.7764451051977987 * statistics.stdev(values) / math.sqrt(5)
    assert statistics.fmean(values) - plain_half < 0  # what the plain interval gave
    low, high = confidence_interval(values)
    assert 0 < low < min(values) and high > statistics.fmean(values)
    assert confidence_interval([0.0, 0.0, 30.0])[0] == 0.0  # not all above zero: plain, held at zero


def record(k, train, converged=True, energy=100.0, metric=0.92):
    r = TrialRecord(k, f"result_{k}.txt")
    r.train_time_s, r.total_time_s = train, train + 10
    r.converged, r.final_metric = converged, metric
    r.train_energy_j, r.total_energy_j = energy, None if energy is None else energy + 5
    r.energy_reason = "" if energy is not None else "epoch 1's trainmark_train_energy_j is None"
    r.evals = [EvalRecord(1, metric, 1)]
    return r


def test_benchmark_score_figures():
    s = score_benchmark([record(1, 10.0), record(2, 20.0), record(3, 30.0), record(4, 40.0, energy=200.0)], 1, 1)
    assert s.mean_train_time_s == 25.0 and s.score_train_time_s == 25.0
    assert s.cv_train_time == pytest.approx(math.sqrt(500 / 3) / 25)
    assert s.mean_train_energy_j == 125.0 and s.mean_total_energy_j == 130.0
    assert s.trials_in_mean == 4


def test_unmeasured_energy_is_null_with_a_reason_never_zero():
    s = score_benchmark([record(1, 10.0), record(2, 20.0, energy=None), record(3, 30.0)], 1, 1)
    assert s.mean_train_energy_j is None and s.mean_total_energy_j is None
    assert "trial 2" in s.energy_reason and "None" in s.energy_reason


def test_means_are_over_converged_trials():
    s = score_benchmark([record(1, 10.0), record(2, 99.0, converged=False, metric=0.5), record(3, 30.0)], 1, 1)
    assert s.mean_train_time_s == 20.0 and s.trials_in_mean == 2 and s.converged == 2
    assert s.score_train_time_s == 30.0  # drop 10 (fastest) and the miss (slowest)
    assert s.mean_final_metric == pytest.approx((0.92 + 0.5 + 0.92) / 3)
