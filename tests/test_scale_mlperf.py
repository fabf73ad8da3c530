"""MLPerf throughput for validating the projection (harness/scale/mlperf_throughput.py), on the shared v4.0 fixture."""
from pathlib import Path

import pytest

from trainmark.harness.scale import mlperf_throughput as sm
from trainmark.harness.scale import projection as scale_model

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"


@pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
def test_fixture_throughput_and_why_it_cannot_validate_scaling():
    h100 = sm.system_throughput(FIXTURE / "Dell", "XE8640x4H100-SXM-80GB", "resnet")
    l40s = sm.system_throughput(FIXTURE / "Dell", "R760xax4L40S", "resnet")
    assert (h100.accelerators, l40s.accelerators) == (4, 4)
    assert h100.global_batch == l40s.global_batch == 1600
    assert len(h100.samples_per_s) == len(l40s.samples_per_s) == 5
    # runs of one system agree within 1 %; the H100 system is the faster
    for t in (h100, l40s):
        assert max(t.samples_per_s) / min(t.samples_per_s) < 1.01
    assert h100.median > 2 * l40s.median
    link = scale_model.Link(1e-5, 1e11, "test")
    with pytest.raises(ValueError, match="not one system at two sizes"):
        sm.validate_pair(l40s, h100, link, 102_000_000)


def test_a_pair_generated_by_the_model_is_predicted_exactly():
    link = scale_model.Link(latency_s=8e-6, bandwidth_bps=40e9, source="test")
    profile = scale_model.ComputeProfile(compute_s=0.05, local_batch=64, gradient_bytes=100_000_000, overlap=0.3)
    def system(n):
        step = scale_model.step_seconds(n, 64, profile, link)[0]
        return sm.SystemThroughput("box", "resnet", "X", n, 64 * n, [64 * n / step])
    out = sm.validate_pair(system(8), system(64), link, 100_000_000, overlap=0.3)
    assert out["error"] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="both systems have 8"):
        sm.validate_pair(system(8), system(8), link, 100_000_000)
