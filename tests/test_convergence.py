import pytest

from trainmark.rules import convergence, get_rules

POINTS = [{"global_batch_size": 256, "epochs_to_target": [6, 6, 7, 6, 7, 7, 6, 8, 6, 7]},
          {"global_batch_size": 1024, "epochs_to_target": [9, 10, 9, 10, 11, 9, 10, 10, 9, 10]}]


def test_reference_runs_pass_their_own_check():
    """Each reference point's own runs pass, and runs reaching the target in half the epochs fail (so a check
    that passed everything would fail this test)."""
    for p in POINTS:
        v = convergence.check(POINTS, p["global_batch_size"], p["epochs_to_target"][:5])
        assert v.ok, v.message
        fast = convergence.check(POINTS, p["global_batch_size"], [e // 2 for e in p["epochs_to_target"][:5]])
        assert fast.ok is False and " < " in fast.message, p["global_batch_size"]


def test_too_fast_is_flagged():
    v = convergence.check(POINTS, 256, [4, 4, 4, 5, 4])
    assert v.ok is False and v.submission_mean == 4.0 and v.min_allowed > 4.0


def test_threshold_matches_the_t_test_formula():
    ref = convergence.ref_points(POINTS)[0]
    # olympic mean of 6,6,7,6,7,7,6,8,6,7 without one 6 and the 8: mean 6.5, n 8
    assert ref.mean == pytest.approx(6.5) and ref.n == 8
    from scipy import stats
    expect = 6.5 - stats.t.ppf(0.95, 8 + 3 - 2) * ref.std * (1 / 8 + 1 / 3) ** 0.5
    assert convergence.min_allowed_mean(ref, 3) == pytest.approx(expect)


def test_interpolation_between_batch_sizes_and_no_verdict_outside():
    ref = convergence.reference_at(convergence.ref_points(POINTS), 640)
    lo, hi = convergence.ref_points(POINTS)
    assert lo.mean < ref.mean < hi.mean and ref.mean == pytest.approx((lo.mean + hi.mean) / 2)
    assert convergence.check(POINTS, 128, [5, 5, 5]).ok is None
    assert convergence.check(POINTS, 4096, [5, 5, 5]).ok is None


def test_slow_middle_point_is_pruned():
    pts = POINTS[:1] + [{"global_batch_size": 512, "epochs_to_target": [20] * 10}] + POINTS[1:]
    assert [p.batch_size for p in convergence.ref_points(pts)] == [256, 1024]


def test_shipped_rules_pass_their_own_reference_runs():
    r = get_rules("resnet-mini")
    for p in r.convergence["points"]:
        assert len(p["epochs_to_target"]) >= 2 * r.trials
        assert convergence.check(r.convergence["points"], p["global_batch_size"], p["epochs_to_target"]).ok
