"""Sweeps: the out-of-memory search on a fake allocator limit, energy per sample, outputs' schema."""
import csv
import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from trainmark.cli import main
from trainmark.harness.measure.energy import MeterBase, NullMeter
from trainmark.harness.measure.peaks import DevicePeak
from trainmark.harness.throughput import oom, sweep, sweep_output


class TinyRef:
    """A reference with the interface the harness uses, small enough for milliseconds per step."""

    name = "tiny"
    channels_last = False

    def build_model(self):
        return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))

    def synthetic_batch(self, batch_size, device="cpu"):
        return torch.randn(batch_size, 32, device=device), torch.randint(0, 10, (batch_size,), device=device)

    def to_device(self, batch, device, train):
        return tuple(t.to(device) for t in batch)

    def split_batch(self, batch):
        return tuple(batch[:-1]), batch[-1]

    def criterion(self, out, targets, hp):
        return F.cross_entropy(out, targets)

    def loss(self, model, batch, hp):
        inputs, targets = self.split_batch(batch)
        return self.criterion(model(*inputs), targets, hp)

    def make_optimizer(self, model, hp, steps_per_epoch):
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), None


TINY_FLOPS_PER_SAMPLE = 2 * 2 * 32 * 64 + 3 * 2 * 64 * 10   # layer 1: fwd + weight grad; layer 2: + input grad


class FakeMeter(MeterBase):
    """10 J per reading: energy grows with every window boundary, like a counter."""

    method, reason = "measured-counter", None

    def __init__(self):
        self.j = 0.0
        self.started = self.stopped = False

    def start(self):
        self.started = True

    def joules(self):
        self.j += 10.0
        return self.j

    def stop(self):
        self.stopped = True


def _settings(**kw):
    base = dict(batch_sizes=[4, 16], precisions=["fp32"], warmup_steps=1, steps=2)
    base.update(kw)
    return sweep.SweepSettings(**base)


# ---------------------------------------------------------------- the search itself

@pytest.mark.parametrize("threshold", [1, 2, 37, 64, 1000])
def test_largest_fitting_finds_the_threshold_in_log_probes(threshold):
    probed = []
    result = oom.largest_fitting(lambda b: probed.append(b) or b <= threshold, start=1, limit=4096)
    assert result.max_fit == threshold and not result.capped
    assert len(probed) == len(set(probed)) <= 2 * threshold.bit_length() + 2
    assert [b for b, _ in result.probes] == probed


def test_largest_fitting_edges():
    assert oom.largest_fitting(lambda b: False, start=8).max_fit is None
    capped = oom.largest_fitting(lambda b: True, start=3, limit=50)
    assert capped.max_fit == 50 and capped.capped
    down = oom.largest_fitting(lambda b: b <= 5, start=64, limit=1000)
    assert down.max_fit == 5
    calls = []
    known = oom.largest_fitting(lambda b: calls.append(b) or b <= 20, start=16, limit=100, known={16: True, 32: False})
    assert known.max_fit == 20 and 16 not in calls and 32 not in calls


def test_fake_allocator_raises_the_cuda_oom_type():
    with oom.FakeAllocatorLimit(100_000) as fake:
        torch.ones(1000)                      # 4000 bytes
        torch.ones(1000).add_(1)              # 4000; the in-place add allocates nothing
        torch.ones(1000).view(10, 100)        # 4000; the view allocates nothing
        torch.ones(1000) + 1                  # 8000: two new tensors
    assert fake.allocated == 20_000
    with pytest.raises(torch.OutOfMemoryError):
        with oom.FakeAllocatorLimit(10_000):
            torch.ones(3000)
    assert oom.is_oom(torch.OutOfMemoryError("x")) and oom.is_oom(RuntimeError("CUDA out of memory. Tried"))
    assert not oom.is_oom(RuntimeError("shape mismatch"))


# ---------------------------------------------------------------- the sweep

def _step_fits(batch_size, limit_bytes):
    """Ground truth: does one real training step of TinyRef fit under the fake limit?"""
    ref = TinyRef()
    step = sweep._Step(ref, {}, torch.device("cpu"), batch_size, "fp32", None,
                       lambda: oom.FakeAllocatorLimit(limit_bytes))
    try:
        step()
        return True
    except torch.OutOfMemoryError:
        return False


def test_sweep_oom_search_on_fake_allocator_limit():
    limit = 200_000
    result = sweep.run_sweep(TinyRef(), {}, "cpu", _settings(batch_sizes=[4, 64, 1024, 2048], oom_search=True,
                                                              max_batch=100_000),
                             allocator_limit=lambda: oom.FakeAllocatorLimit(limit), peak=None)
    best = result["oom_search"]["fp32"]["max_batch_size"]
    assert _step_fits(best, limit) and not _step_fits(best + 1, limit)
    status = {p["batch_size"]: p["status"] for p in result["points"]}
    assert status[4] == "ok" and status[64] == "ok" and status[1024] == "oom" and status[2048] == "skipped"
    assert best in status and status[best] == "ok"            # the largest batch that fits is also timed
    assert [p for p in result["points"] if p["batch_size"] == best][0]["in_grid"] is False
    assert result["best"]["fp32"]["throughput"]["batch_size"] in {4, 64, best}


def test_sweep_points_rates_energy_and_best():
    peak = DevicePeak("fake", "Fake CPU", {"fp32": 1.0}, "test", kind="derived")
    meter = FakeMeter()
    result = sweep.run_sweep(TinyRef(), {}, "cpu", _settings(), meter=meter, peak=peak, ceilings={"fp32": 0.5})
    assert meter.started and meter.stopped
    pts = result["points"]
    assert [p["batch_size"] for p in pts] == [4, 16] and all(p["status"] == "ok" for p in pts)
    for p in pts:
        assert set(p) == set(sweep.POINT_FIELDS)
        assert p["flops_per_step"] == TINY_FLOPS_PER_SAMPLE * p["batch_size"]
        assert p["samples"] == p["steps"] * p["batch_size"] and p["steps"] == 2
        assert p["samples_per_s"] == pytest.approx(p["samples"] / p["seconds"])
        assert p["tflops"] == pytest.approx(p["flops_per_step"] * p["steps"] / p["seconds"] / 1e12)
        assert p["utilization"] == pytest.approx(p["tflops"] / 1.0)
        assert p["utilization_of_ceiling"] == pytest.approx(p["tflops"] / 0.5)
        assert p["peak_dtype"] == "fp32" and p["peak_kind"] == "derived"
        assert p["energy_j"] == pytest.approx(10.0) and p["j_per_sample"] == pytest.approx(10.0 / p["samples"])
        assert p["energy_method"] == "measured-counter" and p["loss_finite"]
    # equal energy per window: the larger batch has the least energy per sample
    assert result["best"]["fp32"]["energy"]["batch_size"] == 16
    assert result["best"]["overall"]["throughput"]["samples_per_s"] == max(p["samples_per_s"] for p in pts)


def test_sweep_amp_uses_training_autocast():
    result = sweep.run_sweep(TinyRef(), {}, "cpu", _settings(batch_sizes=[8], precisions=["amp"]), peak=None)
    assert result["points"][0]["precision_used"] == "amp-bf16" and result["points"][0]["status"] == "ok"


def test_outputs_csv_json_plots(tmp_path):
    result = sweep.run_sweep(TinyRef(), {}, "cpu", _settings(precisions=["fp32", "amp"]), meter=FakeMeter(), peak=None)
    paths = sweep_output.write_outputs(result, tmp_path)
    with open(paths["csv"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == sweep.POINT_FIELDS and len(rows) == 4
    assert {r["precision"] for r in rows} == {"fp32", "amp"} and all(float(r["samples_per_s"]) > 0 for r in rows)
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert data["format"] == sweep.FORMAT
    assert {"benchmark", "device", "settings", "peak", "energy", "oom_search", "points", "best", "plots"} <= set(data)
    assert data["points"] == json.loads(json.dumps(result["points"]))
    for name in ("throughput.png", "energy.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "least energy at batch" in sweep_output.format_summary(result)


def test_no_energy_meter_means_null_energy_with_reason(tmp_path):
    result = sweep.run_sweep(TinyRef(), {}, "cpu", _settings(batch_sizes=[4]),
                             meter=NullMeter("no RAPL in this VM"), peak=None)
    p = result["points"][0]
    assert p["energy_j"] is None and p["j_per_sample"] is None and p["energy_reason"] == "no RAPL in this VM"
    assert result["best"]["fp32"]["energy"] is None and "no RAPL" in result["best"]["fp32"]["energy_reason"]
    sweep_output.write_outputs(result, tmp_path)
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert data["plots"]["energy.png"] is None and "no RAPL" in data["plots"]["energy.png_reason"]
    assert not (tmp_path / "energy.png").exists()


def _fake_proc(tmp_path, status="Name:\tpython\nVmHWM:\t  204800 kB\nVmRSS:\t  1024 kB\n"):
    """A stand-in for /proc/self: a writable clear_refs and a status file (the CPU's peak-RSS fallback)."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "clear_refs").write_text("")
    (proc / "status").write_text(status)
    return proc


def test_cpu_peak_memory_is_reported(tmp_path, monkeypatch):
    """On the CPU the sweep resets the process's peak RSS (clear_refs <- 5) and reports VmHWM: here from a fake
    /proc, so a kernel without clear_refs cannot turn a regression into a skip."""
    proc = _fake_proc(tmp_path)
    real = oom.PeakMemory
    monkeypatch.setattr(oom, "PeakMemory", lambda device: real(device, proc=str(proc)))
    result = sweep.run_sweep(TinyRef(), {}, "cpu", _settings(batch_sizes=[4]), peak=None)
    p = result["points"][0]
    assert (p["peak_memory_method"], p["peak_memory_bytes"]) == ("process-peak-rss", 204800 * 1024)
    assert (proc / "clear_refs").read_text() == "5"


def test_cpu_peak_memory_fallback_says_why_it_has_none(tmp_path):
    missing = oom.PeakMemory(torch.device("cpu"), proc=str(tmp_path / "absent"))
    missing.begin()
    assert missing.method is None and missing.reason.startswith("cannot reset the peak RSS")
    assert missing.end() is None
    no_line = oom.PeakMemory(torch.device("cpu"), proc=str(_fake_proc(tmp_path, status="Name:\tpython\n")))
    no_line.begin()
    assert no_line.method == "process-peak-rss"
    assert no_line.end() is None and (no_line.method, no_line.reason) == (None, "no VmHWM line in /proc/self/status")


def test_cli_sweep_resnet_mini(tmp_path, capsys):
    out = tmp_path / "sw"
    assert main(["sweep", "resnet-mini", "--batch-sizes", "4", "--precisions", "fp32", "--steps", "1",
                 "--warmup-steps", "0", "--out", str(out), "--no-plots"]) == 0
    data = json.loads((out / "sweep.json").read_text())
    assert data["benchmark"] == "resnet-mini" and data["points"][0]["status"] == "ok"
    assert data["points"][0]["flops_per_step"] > 0 and (out / "sweep.csv").exists()
    assert main(["sweep", "resnet-mini", "--oom-search"]) == 2
    assert main(["sweep", "resnet-mini", "--precisions", "fp64"]) == 2
