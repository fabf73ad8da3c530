"""Issue 41: one device seam (harness/frameworks/), vendor meters against fakes, peaks by driver names."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch

from trainmark.errors import UserError
from trainmark.harness.frameworks import pytorch_device
from trainmark.harness.measure import energy, peaks, vendor_meters
from trainmark.harness.measure.energy import MeterFailed, MeterUnavailable

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = ["harness", "reference", "rules", "checker", "report", "trainmark"]
DEVICE_TYPES = {"cuda", "xpu", "mps", "hpu", "npu", "xla", "mtia", "privateuseone"}
# The seam, and the meters that talk to one vendor's library each (they name their vendor's device type).
ALLOWED = {"harness/frameworks", "harness/measure/energy.py", "harness/measure/vendor_meters.py"}


def _allowed(rel: str) -> bool:
    return any(rel == a or rel.startswith(a + "/") for a in ALLOWED)


def _device_type_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """Where code branches on a device type's name or reaches for a type's torch module (torch.cuda, ...)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in DEVICE_TYPES and \
                isinstance(node.value, ast.Name) and node.value.id == "torch":
            found.append((node.lineno, f"torch.{node.attr}"))
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and side.value in DEVICE_TYPES:
                    found.append((node.lineno, f"compares with {side.value!r}"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value in DEVICE_TYPES:
                    found.append((node.lineno, f"startswith({arg.value!r})"))
    return found


def test_no_device_type_is_named_outside_the_seam_and_the_meters():
    offenders = []
    for folder in PACKAGE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if _allowed(rel):
                continue
            offenders += [f"{rel}:{line}: {what}" for line, what in _device_type_uses(ast.parse(path.read_text()))]
    assert offenders == []


def test_the_walk_finds_what_it_looks_for():
    """The AST walk above is not vacuous: each form it forbids is found in a sample."""
    sample = ast.parse("import torch\nif d.type == 'cuda': torch.cuda.synchronize()\nx = s.startswith('xpu')")
    assert sorted(w for _, w in _device_type_uses(sample)) == \
        ["compares with 'cuda'", "startswith('xpu')", "torch.cuda"]


def test_auto_is_the_cpu_without_an_accelerator(monkeypatch):
    monkeypatch.setattr(pytorch_device, "accelerator", lambda: None)
    assert pytorch_device.resolve("auto") == torch.device("cpu")
    with pytest.raises(UserError, match=r"--device cuda:0: no cuda device here \(found only the cpu\)"):
        pytorch_device.resolve("cuda:0")
    with pytest.raises(UserError, match="use auto, cpu or TYPE"):
        pytorch_device.resolve("GPU 0")


class _FakeModule:
    """A device-type module as torch.get_device_module returns (torch.xpu, a plug-in's)."""

    def __init__(self):
        self.calls = []

    def device_count(self):
        return 2

    def synchronize(self, device=None):
        self.calls.append(("synchronize", device))

    def is_bf16_supported(self):
        return False

    def get_device_name(self, device):
        return "Intel(R) Data Center GPU Max 1550"


def test_auto_and_an_index_resolve_through_the_generic_api(monkeypatch):
    """A vendor's type (here 'xpu', faked) is found through torch.accelerator and its device module alone."""
    fake = _FakeModule()
    monkeypatch.setattr(pytorch_device, "accelerator", lambda: torch.device("xpu"))
    monkeypatch.setattr(torch, "get_device_module", lambda kind: fake)
    assert pytorch_device.resolve("auto") == torch.device("xpu", 0)
    assert pytorch_device.resolve("xpu:1") == torch.device("xpu", 1)
    with pytest.raises(UserError, match=r"only 2 xpu device\(s\) here"):
        pytorch_device.resolve("xpu:2")
    with pytest.raises(UserError, match="no cuda device here"):
        pytorch_device.resolve("cuda")
    pytorch_device.synchronize("xpu:1")
    assert fake.calls == [("synchronize", torch.device("xpu", 1))]
    assert pytorch_device.amp_dtype("xpu:0") == torch.float16  # the module says no bf16: fp16 with a scaler
    assert pytorch_device.name("xpu:0") == "Intel(R) Data Center GPU Max 1550"


def test_native_bf16_asks_the_cpu_flags_and_a_gpu_module_without_emulation(monkeypatch):
    """The mini suite's PRECISION=auto: amp where the device has bf16 units, fp32 where bf16 is emulated."""
    monkeypatch.setattr(peaks, "cpu_native", lambda dtype: "avx512_bf16" if dtype == "bf16" else None)
    assert pytorch_device.native_bf16("cpu") == "this CPU computes bf16 (avx512_bf16)"
    monkeypatch.setattr(peaks, "cpu_native", lambda dtype: None)
    assert pytorch_device.native_bf16("cpu") is None

    class Emulating(_FakeModule):  # as torch.cuda on a V100: bf16 only by emulation
        def is_bf16_supported(self, including_emulation=True):
            return including_emulation

    monkeypatch.setattr(torch, "get_device_module", lambda kind: Emulating())
    assert pytorch_device.native_bf16("xpu:0") is None
    monkeypatch.setattr(Emulating, "is_bf16_supported", lambda self, including_emulation=True: True)
    assert pytorch_device.native_bf16("xpu:0") == "Intel(R) Data Center GPU Max 1550 computes bf16"
    monkeypatch.setattr(torch, "get_device_module", lambda kind: _FakeModule())   # no emulation argument
    assert pytorch_device.native_bf16("xpu:0") is None


def test_the_cpu_path_goes_through_the_seam(monkeypatch):
    """A CPU trainer's amp steps go through pytorch_device: autocast dtype, autocast, step hook, synchronize."""
    from conftest import TEST_RULES, TinyTest

    from trainmark.harness.frameworks import pytorch_backend
    from trainmark.rules import get_rules

    called = []
    for fn in ("amp_dtype", "autocast", "step_hook", "synchronize"):
        original = getattr(pytorch_device, fn)
        monkeypatch.setattr(pytorch_device, fn,
                            lambda *a, _o=original, _n=fn, **k: (called.append(_n), _o(*a, **k))[1])
    ref = TinyTest()
    hp = get_rules("tiny-test", rules_root=TEST_RULES).defaults()
    backend = pytorch_backend.PyTorchBackend(torch.device("cpu"), "amp")
    trainer = backend.trainer(ref, ref.build_model, hp, ref.load_data(None), 1, count_flops=False)
    trainer.step(next(iter(trainer.epoch_batches(1))))
    backend.sync()
    assert trainer.precision_used == "amp-bf16" and trainer.scaler is None
    assert {"amp_dtype", "autocast", "step_hook", "synchronize"} <= set(called)
    assert called.count("autocast") >= 1


# ---------------------------------------------------------------- vendor meters against fakes

class FakeHlml:
    class HLMLError(Exception):
        pass

    def __init__(self, counters):
        self.counters = counters
        self.gone = False

    def hlmlInit(self):
        pass

    def hlmlDeviceGetHandleByIndex(self, i):
        return i

    def hlmlDeviceGetTotalEnergyConsumption(self, h):
        if self.gone:
            raise self.HLMLError("device lost")
        return self.counters[h]


def test_gaudi_meter_reads_the_energy_counter_and_fails_loudly_when_it_disappears():
    hlml = FakeHlml({0: 1_000_000, 1: 5_000})
    m = vendor_meters.HlmlMeter([0, 1], pyhlml=hlml)
    m.start()
    hlml.counters[0] += 250_000   # mJ
    hlml.counters[1] += 1_500
    assert m.by_domain() == {"gpu0": 250.0, "gpu1": 1.5}
    assert m.method == energy.MEASURED_COUNTER
    hlml.gone = True
    with pytest.raises(MeterFailed, match="HLML: device lost"):
        m.by_domain()


def test_counter_tracker_counts_wraps():
    t = vendor_meters.CounterTracker(bits=8)
    t.begin(250)
    assert t.update(255) == 5
    assert t.update(4) == 10      # wrapped once: 256 + 4 - 250
    assert t.update(200) == 206


def _xpu_run(values, gone):
    def run(argv):
        if gone:
            raise OSError("xpu-smi: no device")
        device = int(argv[argv.index("-d") + 1])
        return json.dumps({"device_id": device, "device_level": [
            {"metrics_type": "XPUM_STATS_POWER", "value": 300},
            {"metrics_type": "XPUM_STATS_ENERGY", "value": values[device]}]})
    return run


def test_intel_gpu_meter_counts_a_wrapping_32_bit_counter_and_a_vanished_tool():
    values, gone = {0: 2**32 - 1000}, []
    m = vendor_meters.XpuSmiMeter([0], run=lambda argv: _xpu_run(values, gone)(argv), poll_s=3600)
    m.start()
    values[0] = 500               # the 32-bit millijoule counter wrapped: 1,500 mJ later
    assert m.by_domain() == {"gpu0": 1.5}
    gone.append(True)
    with pytest.raises(MeterFailed, match="xpu-smi"):
        m.by_domain()


def test_ascend_meter_integrates_power_and_fails_when_npu_smi_vanishes():
    clock, watts, gone = [0.0], [100.0], []

    def run(argv):
        if gone:
            raise OSError("npu-smi: command failed")
        return f"        Power Dissipation(W)           : {watts[0]}\n"
    m = vendor_meters.NpuSmiMeter([0], run=run, poll_s=3600, clock=lambda: clock[0])
    m.start()
    clock[0], watts[0] = 10.0, 300.0
    assert m.by_domain() == {"gpu0": pytest.approx(2000.0)}   # trapezoid: 10 s x (100 + 300) / 2
    assert m.method == energy.MEASURED_POWER
    gone.append(True)
    with pytest.raises(MeterFailed, match="npu-smi"):
        m.by_domain()
    m.stop()


def test_open_meter_names_why_a_device_type_has_no_meter(tmp_path):
    meter = energy.open_meter("mps:0", rapl_root=tmp_path, ipmitool=False)
    assert meter.scope is None and "no energy meter for mps devices" in (meter.reason or "")
    with pytest.raises(MeterUnavailable, match="habana-pyhlml is not installed"):
        vendor_meters.HlmlMeter([0])


def test_open_meter_uses_the_vendor_meter_of_the_device_type(tmp_path):
    hlml = FakeHlml({0: 0})
    meter = energy.open_meter("hpu:0", rapl_root=tmp_path, ipmitool=False, device_ids=[0], pyhlml=hlml)
    assert meter.scope == "gpu0"
    meter.start()
    hlml.counters[0] = 42_000
    assert meter.joules() == pytest.approx(42.0)


# ---------------------------------------------------------------- peaks by driver names

@pytest.mark.parametrize("driver_name, key", [
    ("AMD Instinct MI300X", "amd-mi300x"), ("AMD Instinct MI325X", "amd-mi325x"),
    ("AMD Instinct MI355X", "amd-mi355x"), ("GAUDI2", "intel-gaudi2"), ("HL-225", "intel-gaudi2"),
    ("GAUDI3", "intel-gaudi3"), ("HL-325L", "intel-gaudi3"), ("TPU v5 lite", "google-tpu-v5e"),
    ("TPU v5p", "google-tpu-v5p"), ("TPU v6 lite", "google-tpu-v6e"), ("NVIDIA B200", "nvidia-b200"),
    ("NVIDIA GB200", "nvidia-gb200"), ("NVIDIA B300 SXM6 AC", "nvidia-b300"), ("NVIDIA GB300", "nvidia-b300"),
    ("Intel(R) Data Center GPU Max 1550", "intel-max-1550"), ("Intel(R) Data Center GPU Max 1100", "intel-max-1100"),
])
def test_peaks_resolve_each_accelerator_from_its_driver_name(driver_name, key):
    entry = peaks.lookup(driver_name)
    assert entry is not None and entry.key == key and entry.source
    assert entry.tflops.get("bf16")


ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve sve2 bf16 i8mm
CPU implementer\t: 0x41
CPU part\t: 0xd4f

processor\t: 1
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve sve2 bf16 i8mm
CPU implementer\t: 0x41
CPU part\t: 0xd4f
"""


def test_an_arm_cpu_peak_is_derived_from_its_features(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(ARM_CPUINFO)
    p = peaks.cpu_peak(str(info), clock_ghz=3.0, max_freq_path=None)
    assert p.name == "Arm Neoverse V2 (2 cores)"
    assert p.tflops["fp32"] == pytest.approx(2 * 3.0 * 32 / 1000)
    assert p.tflops["bf16"] == pytest.approx(2 * 3.0 * 64 / 1000)
