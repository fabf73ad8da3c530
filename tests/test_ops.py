"""Operator microbenchmarks: FLOPs of the shapes, the timing loop, the report schema, the CLI."""
import json

import pytest
import torch

from trainmark.cli import main
from trainmark.harness.measure.peaks import DevicePeak
from trainmark.harness.throughput import ops


def test_default_shapes_are_named_sourced_and_unique():
    for device in ("cpu", "cuda"):
        shapes = ops.default_shapes(device)
        assert len({s.name for s in shapes}) == len(shapes)
        assert {s.op for s in shapes} == {"matmul", "conv2d"}
        assert all(len(s.source) > 20 for s in shapes)
    names = {s.name for s in ops.default_shapes("cpu")}
    assert {"resnet50.layer1.conv3x3", "vgg16.conv1_2", "transformer.ffn1", "gnmt.lstm_gates"} <= names


def test_shape_flops_match_closed_forms():
    mm = ops.Shape("t", "matmul", {"m": 6, "n": 5, "k": 7}, "test")
    assert ops.shape_flops(mm) == (2 * 6 * 5 * 7, 4 * 6 * 5 * 7)
    conv = ops.Shape("c", "conv2d", {"n": 2, "c": 3, "h": 9, "w": 9, "k": 4, "r": 3, "s": 3,
                                     "stride": 2, "pad": 1}, "test")
    fwd = 2 * 2 * 4 * 5 * 5 * 3 * 3 * 3          # output 5x5
    assert ops.shape_flops(conv) == (fwd, 2 * fwd)  # input + weight gradients


class FakeTimer:
    """Every call 'takes' 2 ms; timings come from the call count, not the wall clock."""

    def __init__(self):
        self.calls = []

    def sync(self):
        pass

    def time(self, fn, inner):
        for _ in range(inner):
            fn()
        self.calls.append(inner)
        return 0.002


def test_measure_picks_inner_and_repeats():
    timer, count = FakeTimer(), []
    t = ops.measure(lambda: count.append(1), timer, warmup_s=0.0, repeats=4, target_s=0.02, min_warmup_calls=3)
    assert t.inner == 10 and len(t.samples) == 4 and t.median == 0.002
    assert timer.calls == [1, 10, 10, 10, 10]
    assert len(count) == 3 + 1 + 40
    assert t.as_dict()["spread_pct"] == 0.0


def test_device_timer_uses_events_and_divides_by_inner(monkeypatch):
    """An accelerator's path without one: fake device events (torch.Event) report 50 ms for the loop."""
    from trainmark.harness.frameworks import pytorch_device
    synced = []

    class Event:
        def __init__(self, device=None, enable_timing=False):
            assert enable_timing and torch.device(device).type == "cuda"

        def record(self):
            pass

        def synchronize(self):
            synced.append("end")

        def elapsed_time(self, other):
            return 50.0

    monkeypatch.setattr(torch, "Event", Event)
    monkeypatch.setattr(pytorch_device, "synchronize", lambda device=None: synced.append("dev"))
    calls = []
    seconds = ops.DeviceTimer("cuda:0").time(lambda: calls.append(1), 5)
    assert seconds == pytest.approx(0.010) and len(calls) == 5 and synced == ["dev", "end"]


def _peak(tflops, bw=None):
    return DevicePeak("fake", "Fake", tflops, "test figures", mem_bw_gbs=bw)


SMALL = [ops.Shape("mm", "matmul", {"m": 64, "n": 64, "k": 64}, "test shape"),
         ops.Shape("conv", "conv2d", {"n": 1, "c": 8, "h": 8, "w": 8, "k": 8, "r": 3, "s": 3,
                                      "stride": 1, "pad": 1}, "test shape")]


def _run(peak, **kw):
    return ops.run_ops("cpu", ["fp32", "bf16", "fp8"], quick=True, shapes=SMALL, peak=peak,
                       repeats=2, target_s=0.002, warmup_s=0.0, **kw)


def test_report_schema_and_summary_consistency():
    report = _run(_peak({"fp32": 1e-9, "bf16": 1e9}, bw=1e-9))
    assert report["format"] == ops.FORMAT
    assert {"device", "peak", "settings", "results", "bandwidth", "summary", "skipped", "created_utc"} <= set(report)
    rows = report["results"]
    torch_rows = [r for r in rows if r["backend"] == "torch"]
    assert len(torch_rows) == 2 * 2 * 2                      # shapes x dtypes x passes
    assert [r for r in rows if r["backend"] == "numpy"] and all(
        r["op"] == "matmul" and r["dtype"] == "fp32" and r["pass"] == "fwd" for r in rows if r["backend"] == "numpy")
    for r in rows:
        assert r["min_s"] <= r["median_s"] <= r["max_s"]
        assert r["tflops"] == pytest.approx(r["flops"] / r["median_s"] / 1e12)
        assert r["flops"] == ops.shape_flops(SMALL[0] if r["name"] == "mm" else SMALL[1])[r["pass"] == "bwd"]
    s = report["summary"]
    for dtype in ("fp32", "bf16"):
        assert s[dtype]["ceiling_tflops"] == max(r["tflops"] for r in rows if r["dtype"] == dtype)
    assert s["fp32"]["confirmed"] is True and s["bf16"]["confirmed"] is False   # tiny vs huge "peak"
    assert s["memory"]["confirmed"] is True and {b["op"] for b in report["bandwidth"]} == {"copy", "add"}
    assert any(sk["dtype"] == "fp8" for sk in report["skipped"])
    assert ops.measured_ceilings(report) == {"fp32": s["fp32"]["ceiling_tflops"], "bf16": s["bf16"]["ceiling_tflops"],
                                             "memory_gbs": s["memory"]["ceiling_gbs"]}
    text = ops.format_report(report)
    assert "NOT confirmed" in text and "fp32: ceiling" in text
    json.dumps(report)  # serialisable as written by --json


def test_no_peak_means_nothing_to_confirm():
    report = ops.run_ops("cpu", ["fp32"], ops=["matmul"], passes=["fwd"], shapes=SMALL[:1], peak=None,
                         numpy_backend=False, repeats=2, target_s=0.001, warmup_s=0.0)
    assert report["summary"]["fp32"]["confirmed"] is None and report["bandwidth"] == []
    assert [r["backend"] for r in report["results"]] == ["torch"]


def test_cli_quick_json(tmp_path, capsys):
    out = tmp_path / "ops.json"
    assert main(["ops", "--quick", "--op", "matmul", "--pass", "fwd", "--dtype", "fp32", "--shapes", "square",
                 "--repeats", "2", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["settings"]["quick"] and report["peak"]["kind"] == "derived"
    assert {r["name"] for r in report["results"]} == {"square"}
    assert "fp32: ceiling" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["ops", "--dtype", "int3"], ["ops", "--op", "fft"], ["ops", "--shapes", "nope"],
                                  ["ops", "--device", "tpu"]])
def test_cli_rejects_bad_arguments(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err
