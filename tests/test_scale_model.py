"""The projection model (harness/scale/projection.py): ring all-reduce, step time, saturation, link fit."""
import math

import pytest

from trainmark.harness.scale import projection as sm


def test_ring_allreduce_follows_the_equation():
    link = sm.Link(latency_s=1e-5, bandwidth_bps=1e9, source="test")
    assert sm.allreduce_seconds(1, 1e6, link) == 0.0
    assert sm.allreduce_seconds(2, 1e6, link) == pytest.approx(2 * 1e-5 + 1e6 / 1e9)
    # bandwidth term tends to 2 S / B, latency term grows linearly with N
    big = sm.allreduce_seconds(4096, 1e6, link)
    assert big == pytest.approx(2 * 4095 * 1e-5 + 2 * 4095 / 4096 * 1e-3)


def test_fit_link_recovers_latency_and_bandwidth():
    true = sm.Link(latency_s=3e-5, bandwidth_bps=2.5e9, source="truth")
    points = [(b, sm.allreduce_seconds(4, b, true)) for b in (1 << 16, 1 << 18, 1 << 20, 1 << 22)]
    fitted = sm.fit_link(4, points, "fit")
    assert fitted.latency_s == pytest.approx(true.latency_s, rel=1e-6)
    assert fitted.bandwidth_bps == pytest.approx(true.bandwidth_bps, rel=1e-6)


def test_fit_link_refuses_what_cannot_be_fitted():
    with pytest.raises(ValueError, match="two message sizes"):
        sm.fit_link(2, [(1024, 1e-3), (1024, 2e-3)], "x")
    with pytest.raises(ValueError, match="does not grow"):
        sm.fit_link(2, [(1024, 2e-3), (4096, 1e-3)], "x")
    with pytest.raises(ValueError, match="2 ranks"):
        sm.fit_link(1, [(1024, 1e-3), (4096, 2e-3)], "x")


def test_weak_scaling_efficiency_falls_as_communication_grows():
    profile = sm.ComputeProfile(compute_s=0.1, local_batch=32, gradient_bytes=100_000_000)
    link = sm.Link(latency_s=5e-6, bandwidth_bps=25e9, source="test")
    rows = sm.project(profile, link, [1, 8, 64, 4096], mode="weak")
    assert rows[0]["efficiency"] == pytest.approx(1.0)
    effs = [r["efficiency"] for r in rows]
    assert all(a >= b for a, b in zip(effs, effs[1:])) and effs[-1] < 1
    for r in rows:
        assert r["step_s"] == pytest.approx(r["compute_s"] + r["exposed_comm_s"])
        assert r["samples_per_s"] == pytest.approx(r["global_batch"] / r["step_s"])
        assert r["efficiency"] == pytest.approx(r["samples_per_s"] / (r["n"] * rows[0]["samples_per_s"]))


def test_overlap_hides_communication_up_to_the_compute_time():
    link = sm.Link(latency_s=0.0, bandwidth_bps=1e9, source="test")
    hidden = sm.ComputeProfile(compute_s=1.0, local_batch=8, gradient_bytes=100_000_000, overlap=1.0)
    step, compute, exposed = sm.step_seconds(8, 8, hidden, link)  # t_ar = 2*7/8*0.1 = 0.175 s < 1 s
    assert exposed == 0.0 and step == compute == 1.0
    half = sm.ComputeProfile(compute_s=0.1, local_batch=8, gradient_bytes=100_000_000, overlap=0.5)
    assert sm.step_seconds(8, 8, half, link)[2] == pytest.approx(0.175 - 0.05)


def test_strong_scaling_splits_the_global_batch_and_skips_non_divisors():
    profile = sm.ComputeProfile(compute_s=0.2, local_batch=64, gradient_bytes=1000)
    link = sm.Link(latency_s=1e-6, bandwidth_bps=1e10, source="test")
    rows = sm.project(profile, link, [1, 2, 3, 4], mode="strong", global_batch=64)
    assert [r["n"] for r in rows] == [1, 2, 4]
    assert [r["local_batch"] for r in rows] == [64, 32, 16]
    assert rows[2]["compute_s"] == pytest.approx(0.05)


def test_saturation_point_is_where_the_next_size_adds_too_little():
    rows = [{"n": 1, "samples_per_s": 100}, {"n": 2, "samples_per_s": 190}, {"n": 4, "samples_per_s": 200},
            {"n": 8, "samples_per_s": 400}]
    assert sm.saturation_point(rows, 0.10) == 2          # 190 -> 200 is +5 %
    assert sm.saturation_point(rows, 0.01) is None       # every step adds more than 1 %
    assert sm.saturation_point(list(reversed(rows)), 0.10) == 2


def test_link_rejects_nonsense():
    with pytest.raises(ValueError):
        sm.Link(latency_s=-1, bandwidth_bps=1e9, source="x")
    with pytest.raises(ValueError):
        sm.Link(latency_s=0, bandwidth_bps=math.inf, source="x")
