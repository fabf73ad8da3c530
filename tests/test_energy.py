"""Energy meters on fake hardware: a fake sysfs RAPL tree and a fake pynvml module."""
import pytest
from energy_fakes import FakeNVML, make_powercap

from trainmark.harness.measure import energy

make_rapl = make_powercap  # the fake RAPL tree the energy tests share (tests/energy_fakes.py)


def set_uj(zone_dir, value):
    (zone_dir / "energy_uj").write_text(f"{value}\n")


def test_rapl_counts_package_and_dram_not_core(tmp_path):
    root = make_rapl(tmp_path, packages=((1_000_000, 10**9),), dram=0)
    m = energy.RaplMeter(root, poll_s=3600)
    assert [(d.name, d.kind) for d in m.domains] == [("package-0", "cpu-package"), ("dram-0", "dram")]
    m.start()
    set_uj(root / "intel-rapl:0", 3_000_000)      # +2 J package
    set_uj(root / "intel-rapl:0" / "intel-rapl:0:1", 500_000)      # +0.5 J dram
    set_uj(root / "intel-rapl:0" / "intel-rapl:0:0", 999_999_999)  # core: inside package
    assert m.joules() == pytest.approx(2.5)
    assert m.by_domain() == pytest.approx({"package-0": 2.0, "dram-0": 0.5})
    m.stop()


def test_rapl_wraparound(tmp_path):
    max_uj = 262_143_328_850
    root = make_rapl(tmp_path, packages=((max_uj - 1_000_000, max_uj),))
    m = energy.RaplMeter(root, poll_s=3600)
    m.start()
    set_uj(root / "intel-rapl:0", 2_000_000)       # wrapped: 1 J to the top, +1 uJ wrap step, +2 J
    assert m.joules() == pytest.approx(3.000001)
    set_uj(root / "intel-rapl:0", 5_000_000)
    assert m.joules() == pytest.approx(6.000001)
    m.stop()


def test_rapl_missing_or_root_only_is_unavailable_with_reason(tmp_path):
    with pytest.raises(energy.MeterUnavailable, match="no RAPL zones"):
        energy.RaplMeter(tmp_path)
    meter = energy.open_meter("cpu", rapl_root=tmp_path, ipmitool=False)
    assert meter.method == energy.UNAVAILABLE and meter.joules() is None and "RAPL" in meter.reason


def test_estimate_only_when_asked_and_labelled(tmp_path):
    meter = energy.open_meter("cpu", estimate_watts=100, rapl_root=tmp_path, ipmitool=False)
    assert meter.method == energy.ESTIMATED
    assert "estimated" in meter.reason and "no measurement" in meter.reason
    clock = iter([0.0, 2.0]).__next__
    m = energy.TdpEstimateMeter(50, clock=clock)
    m.start()
    assert m.joules() == 100.0


def test_nvml_counter_sums_all_gpus():
    nv = FakeNVML(archs=(7, 9))
    m = energy.NvmlMeter([0, 1], pynvml=nv)
    assert m.method == energy.MEASURED_COUNTER
    m.start()
    nv.energy_mj[0] += 1500
    nv.energy_mj[1] += 2500
    assert m.joules() == pytest.approx(4.0)


def test_nvml_power_integration_on_old_gpus():
    nv = FakeNVML(archs=(1,))
    t = [0.0]
    m = energy.NvmlMeter([0], pynvml=nv, poll_s=3600, clock=lambda: t[0])
    assert m.method == energy.MEASURED_POWER
    m.start()                    # 200 W at t=0
    t[0] = 1.0
    nv.power_mw[0] = 400_000     # 400 W at t=1: trapezoid 300 J
    assert m.joules() == pytest.approx(300.0)
    t[0] = 3.0                   # 400 W held for 2 s: +800 J
    assert m.joules() == pytest.approx(1100.0)
    m.stop()


def test_nvml_init_failure_is_unavailable():
    nv = FakeNVML(archs=(7, 7))

    def boom():
        raise nv.NVMLError("driver not loaded")
    nv.nvmlInit = boom
    meter = energy.open_meter("cuda:0", pynvml=nv)
    assert meter.method == energy.UNAVAILABLE and "driver not loaded" in meter.reason


def test_nvml_by_uuid():
    nv = FakeNVML(archs=(7, 7))
    nv.nvmlDeviceGetHandleByUUID = lambda uuid: {"GPU-b": 1}[uuid]
    m = energy.NvmlMeter(["GPU-b"], pynvml=nv)
    m.start()
    nv.energy_mj[1] += 2000
    nv.energy_mj[0] += 9000  # another process's GPU: not ours
    assert m.joules() == pytest.approx(2.0)
