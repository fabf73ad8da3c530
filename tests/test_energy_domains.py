"""Energy by domain on fake hardware: the composite meter, amdsmi, IPMI DCMI, faults mid-run."""
import pytest
from energy_fakes import FakeAmdSmi, FakeNVML, add_uj, fake_ipmitool, make_powercap, prepend_path

from trainmark.harness.measure import energy


def test_composite_reports_each_domain_and_the_total_of_its_scope(tmp_path):
    nv = FakeNVML(archs=(7, 8))
    root = make_powercap(tmp_path / "powercap", packages=((0, 10 ** 9),), dram=0)
    m = energy.open_meter("cuda:0", rapl_root=root, pynvml=nv, device_ids=[0, 1], ipmitool=False)
    assert m.scope == "gpu0+gpu1+package-0+dram-0" and m.method == energy.MEASURED_COUNTER and m.reason is None
    m.start()
    nv.energy_mj[0] += 3000
    nv.energy_mj[1] += 1000
    add_uj(root / "intel-rapl:0", 2_000_000)
    add_uj(root / "intel-rapl:0" / "intel-rapl:0:1", 500_000)
    r = m.readings()
    assert r.domains == pytest.approx({"gpu0": 3.0, "gpu1": 1.0, "package-0": 2.0, "dram-0": 0.5})
    assert r.total == pytest.approx(6.5) and m.joules() == pytest.approx(6.5)
    described = m.describe()
    assert described["gpu0"]["method"] == energy.MEASURED_COUNTER and "1 mJ" in described["gpu0"]["resolution"]
    assert {n: (d["kind"], d["in_total"]) for n, d in described.items()} == {
        "gpu0": ("gpu", True), "gpu1": ("gpu", True), "package-0": ("cpu-package", True), "dram-0": ("dram", True)}
    m.stop()


def test_gpu_run_without_a_gpu_meter_has_no_total_but_keeps_cpu_domains(tmp_path):
    nv = FakeNVML()

    def boom():
        raise nv.NVMLError("driver not loaded")
    nv.nvmlInit = boom
    root = make_powercap(tmp_path / "powercap")
    m = energy.open_meter("cuda:0", rapl_root=root, pynvml=nv, amdsmi=None, ipmitool=False)
    assert m.scope is None and m.method == energy.UNAVAILABLE and "driver not loaded" in m.reason
    m.start()
    add_uj(root / "intel-rapl:0", 1_000_000)
    r = m.readings()
    assert r.total is None and r.domains["package-0"] == pytest.approx(1.0)
    m.stop()


def test_a_domain_failing_mid_run_becomes_null_with_its_reason_never_zero(tmp_path):
    nv = FakeNVML()
    root = make_powercap(tmp_path / "powercap")
    m = energy.open_meter("cuda:0", rapl_root=root, pynvml=nv, ipmitool=False)
    m.start()
    nv.energy_mj[0] += 2000
    assert m.readings().total == pytest.approx(2.0)
    nv.fail_energy = True
    add_uj(root / "intel-rapl:0", 1_000_000)
    r = m.readings()
    assert r.domains["gpu0"] is None and r.total is None
    assert r.domains["package-0"] == pytest.approx(1.0)      # the other domain goes on
    assert "GPU is lost" in m.describe()["gpu0"]["reason"] and "gpu0" in m.reason
    nv.fail_energy = False                                   # a failed domain stays failed: no silent restart
    assert m.readings().domains["gpu0"] is None
    m.stop()


def test_rapl_poller_failure_is_reported_not_swallowed(tmp_path):
    root = make_powercap(tmp_path / "powercap")
    m = energy.RaplMeter(root, poll_s=3600)
    m.start()
    (root / "intel-rapl:0" / "energy_uj").write_text("garbage\n")
    with pytest.raises(energy.MeterFailed, match="RAPL"):
        m.by_domain()
    m.stop()


def test_rapl_wraps_per_domain(tmp_path):
    max_uj = 262_143_328_850
    root = make_powercap(tmp_path / "powercap", packages=((max_uj - 1_000_000, max_uj),), dram=max_uj - 10)
    m = energy.RaplMeter(root, poll_s=3600)
    m.start()
    add_uj(root / "intel-rapl:0", 3_000_000, max_uj)                     # wraps: 1 J + 1 uJ + 2 J - 1 uJ
    add_uj(root / "intel-rapl:0" / "intel-rapl:0:1", 1_000_010, max_uj)  # DRAM wraps too
    assert m.by_domain() == pytest.approx({"package-0": 3.0, "dram-0": 1.00001})
    m.stop()


@pytest.mark.parametrize("old_key", [False, True])
def test_amdsmi_energy_accumulator_times_resolution(old_key):
    smi = FakeAmdSmi(gpus=2, resolution=15.3, old_key=old_key)
    m = energy.AmdSmiMeter(amdsmi=smi)
    assert [d.name for d in m.domains] == ["gpu0", "gpu1"] and "15.3 uJ" in m.domains[0].resolution
    m.start()
    smi.acc[0] += 1_000_000          # 15.3 J
    smi.acc[1] += 200_000            # 3.06 J
    assert m.by_domain() == pytest.approx({"gpu0": 15.3, "gpu1": 3.06})


def test_amd_gpus_are_used_when_nvml_is_missing(tmp_path):
    nv = FakeNVML()
    nv.nvmlInit = lambda: (_ for _ in ()).throw(nv.NVMLError("no NVIDIA driver"))
    smi = FakeAmdSmi(gpus=2)
    m = energy.open_meter("cuda:1", rapl_root=tmp_path, pynvml=nv, amdsmi=smi, device_ids=[1], ipmitool=False)
    assert m.scope == "gpu0" and isinstance(m.meters[0], energy.AmdSmiMeter) and m.meters[0].handles == [1]


def test_ipmitool_node_power_is_integrated_and_becomes_the_total(tmp_path, monkeypatch):
    watts = tmp_path / "watts"
    watts.write_text("200")
    prepend_path(monkeypatch, fake_ipmitool(tmp_path / "bin", watts).parent)
    t = [0.0]
    node = energy.IpmiDcmiMeter(poll_s=3600, clock=lambda: t[0])
    node.start()                     # 200 W at t=0
    t[0] = 1.0
    watts.write_text("400")
    node._sample()                   # 400 W at t=1: trapezoid 300 J
    t[0] = 3.0                       # 400 W held: +800 J up to now
    assert node.by_domain() == {"node": pytest.approx(1100.0)}
    node.stop()
    nv = FakeNVML()
    m = energy.open_meter("cuda:0", rapl_root=make_powercap(tmp_path / "pc"), pynvml=nv)
    assert m.scope == "node" and m.method == energy.MEASURED_POWER   # node already includes GPU and CPU
    assert {d.name for d in m.domains} == {"gpu0", "package-0", "node"}
    m.stop()


def test_ipmitool_three_failures_in_a_row_fail_the_node_domain(tmp_path, monkeypatch):
    watts = tmp_path / "watts"
    watts.write_text("300")
    exe = fake_ipmitool(tmp_path / "bin", watts)
    node = energy.IpmiDcmiMeter(str(exe), poll_s=3600)
    node.start()
    watts.write_text("fail")
    node._sample()
    node._sample()
    assert node.by_domain()["node"] >= 0      # two misses: still measuring
    node._sample()
    with pytest.raises(energy.MeterFailed, match="3 times in a row"):
        node.by_domain()
    node.stop()


def test_no_ipmitool_or_a_bmc_that_does_not_answer_is_unavailable(tmp_path, monkeypatch):
    watts = tmp_path / "watts"
    watts.write_text("fail")
    with pytest.raises(energy.MeterUnavailable, match="Unable to open SDR"):
        energy.IpmiDcmiMeter(str(fake_ipmitool(tmp_path / "bin", watts)))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(energy.MeterUnavailable, match="not installed"):
        energy.IpmiDcmiMeter()


def test_rapl_psys_is_reported_but_never_added_to_the_packages(tmp_path):
    root = make_powercap(tmp_path / "powercap", packages=((0, 10 ** 9), (0, 10 ** 9)))
    (root / "intel-rapl:1" / "name").write_text("psys\n")   # a laptop's platform zone
    m = energy.open_meter("cpu", rapl_root=root, ipmitool=False)
    assert m.scope == "package-0" and m.describe()["psys"]["kind"] == "platform"
    m.start()
    add_uj(root / "intel-rapl:0", 1_000_000)
    add_uj(root / "intel-rapl:1", 3_000_000)
    r = m.readings()
    assert r.total == pytest.approx(1.0) and r.domains["psys"] == pytest.approx(3.0)
    m.stop()


def test_every_meter_implements_the_whole_protocol(tmp_path):
    """The trial loop, the windows and the telemetry call every member of ``Meter``: no meter lacks one."""
    from trainmark.harness.measure.nodes import NodeSumMeter

    root = make_powercap(tmp_path / "powercap", packages=((0, 10 ** 9),))
    meters = [energy.open_meter("cpu", rapl_root=root, ipmitool=False), energy.NullMeter("none"),
              energy.TdpEstimateMeter(10.0), energy.open_meter("cpu", rapl_root=tmp_path / "none", ipmitool=False)]
    assert [type(m).__name__ for m in meters] == ["CompositeMeter", "NullMeter", "TdpEstimateMeter", "NullMeter"]
    assert all(isinstance(m, energy.Meter) for m in meters)
    assert issubclass(NodeSumMeter, energy.MeterBase)


def test_a_meter_without_domains_reads_its_total_alone():
    class Fixed(energy.MeterBase):
        method = energy.MEASURED_COUNTER

        def joules(self):
            return 5.0

    m = Fixed()
    assert isinstance(m, energy.Meter)
    assert m.readings() == energy.Reading(5.0, {}) and m.describe() == {} and m.scope is None
    assert list(m.domains) == [] and list(m.meters) == []
    estimate = energy.TdpEstimateMeter(10.0, clock=lambda: 3.0)
    estimate.start()
    assert estimate.readings().domains == {} and estimate.describe() == {} and estimate.scope == "estimate"
