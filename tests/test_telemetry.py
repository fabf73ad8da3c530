"""The telemetry sampler: rows on the trial's clock, gaps recorded, failing sources, per-epoch summaries."""
import csv

import pytest
from energy_fakes import FakeNVML, add_uj, make_powercap

from trainmark.harness.measure import energy, telemetry


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Broken:
    columns = ["x.value"]

    def sample(self):
        raise OSError("sensor went away")


class Counter:
    columns = ["c.n"]

    def __init__(self):
        self.n = 0

    def sample(self):
        self.n += 1
        return [self.n]


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_rows_gaps_and_a_failing_source(tmp_path):
    clock = Clock()
    s = telemetry.Sampler(tmp_path / "t.csv", [Counter(), Broken()], period_s=3600, clock=clock,
                          to_ms=lambda x: int(1_800_000_000_000 + x * 1000))
    s.start()                       # a row at t=0; the thread's first tick is an hour away
    s._stop.set()                   # the test drives the ticks itself
    s._thread.join()
    for t in (0.1, 0.2, 3.2):       # 3 s without a sample: the sampler fell behind
        clock.t = t
        s.sample_now()
    record = s.stop()
    table = rows(tmp_path / "t.csv")
    assert table[0] == ["time_ms", "c.n", "x.value"]
    assert [r[0] for r in table[1:]] == ["1800000000000", "1800000000100", "1800000000200", "1800000003200"]
    assert all(r[2] == "" for r in table[1:])          # the broken sensor: empty cells, never 0
    assert [r[1] for r in table[1:]] == ["1", "2", "3", "4"]
    assert record["gaps"] == [{"from_ms": 1800000000200, "to_ms": 1800000003200, "seconds": 3.0}]
    assert "sensor went away" in record["errors"]["Broken"] and record["samples"] == 4
    assert record["format"] == telemetry.FORMAT and record["columns"] == ["c.n", "x.value"]


def test_summary_per_window_with_throttle_reasons(tmp_path):
    clock = Clock()
    nv = FakeNVML(archs=(7,))
    source = telemetry.NvmlTelemetry(nv, [0], ["gpu0"])
    s = telemetry.Sampler(tmp_path / "t.csv", [source], clock=clock)
    s._file = open(tmp_path / "t.csv", "w")  # rows without the background thread
    s._writer = csv.writer(s._file)
    for t, temp, bits in ((1.0, 60, 0), (2.0, 80, 0x20), (3.0, 70, 0x1), (9.0, 90, 0x40)):
        clock.t, nv.temp_c[0], nv.throttle[0] = t, temp, bits
        s.sample_now()
    epoch = s.summarize(0.5, 3.5)
    assert epoch["samples"] == 3 and epoch["max_interval_s"] == 1.0
    assert epoch["mean"]["gpu0.temp_c"] == 70 and epoch["max"]["gpu0.temp_c"] == 80
    assert epoch["throttle"] == {"gpu0": {"samples": 1, "reasons": ["sw_thermal_slowdown"]}}  # idle (0x1) is not
    assert "gpu0.mem_used_mib" not in epoch["mean"]                   # refused by the device: no number
    assert s.summarize(8.0, 10.0)["throttle"]["gpu0"]["reasons"] == ["hw_thermal_slowdown"]
    record = s.stop()
    assert "not supported" in record["errors"]["gpu0.mem_used_mib"]


def test_power_per_domain_from_the_meter_and_linux_cpu_sensors(tmp_path):
    root = make_powercap(tmp_path / "powercap", dram=0)
    meter = energy.open_meter("cpu", rapl_root=root, ipmitool=False)
    meter.start()
    sys_root = tmp_path / "sys"
    for cpu, khz in ((0, 2_000_000), (1, 3_000_000)):
        d = sys_root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_cur_freq").write_text(f"{khz}\n")
    zone = sys_root / "class" / "thermal" / "thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "type").write_text("x86_pkg_temp\n")
    (zone / "temp").write_text("55000\n")
    clock = Clock()
    sources = telemetry.sources_for(meter, sys_root, clock, proc_root=tmp_path / "no-proc")
    s = telemetry.Sampler(tmp_path / "t.csv", sources, clock=clock)
    assert s.columns == ["package-0.power_w", "dram-0.power_w", "cpu.freq_mhz", "cpu0.freq_mhz", "cpu1.freq_mhz",
                         "tz0-x86_pkg_temp.temp_c"]
    s._file = open(tmp_path / "t.csv", "w")
    s._writer = csv.writer(s._file)
    s.sample_now()
    clock.t = 2.0
    add_uj(root / "intel-rapl:0", 100_000_000)                      # 100 J in 2 s
    add_uj(root / "intel-rapl:0" / "intel-rapl:0:1", 10_000_000)    # 10 J
    s.sample_now()
    summary = s.summarize(1.0, 3.0)
    assert summary["mean"] == {"package-0.power_w": 50.0, "dram-0.power_w": 5.0, "cpu.freq_mhz": 2500.0,
                               "tz0-x86_pkg_temp.temp_c": 55.0}   # per-CPU columns: in the file only
    s.stop()
    meter.stop()


def test_the_background_thread_samples_and_stops(tmp_path):
    s = telemetry.Sampler(tmp_path / "t.csv", [Counter()], period_s=0.01).start()
    record = s.stop()
    assert record["samples"] >= 2 and not s._thread.is_alive()      # one row at start, one at stop
    assert len(rows(tmp_path / "t.csv")) == record["samples"] + 1
    assert s.stop()["samples"] == record["samples"]                  # idempotent: no row after the file closed


def test_period_must_be_positive(tmp_path):
    with pytest.raises(ValueError):
        telemetry.Sampler(tmp_path / "t.csv", [], period_s=0)


@pytest.mark.parametrize("text,ok", [("0", True), ("1", True), ("10", True), ("0.5", False), ("101", False),
                                     ("nan", False), ("x", False)])
def test_telemetry_hz_is_off_or_at_least_1_hz(text, ok, capsys):
    from trainmark.cli import main

    if ok:
        assert telemetry.parse_hz(text) == float(text)
        return
    with pytest.raises(SystemExit) as stop:
        main(["run", "tiny-test", "--telemetry-hz", text])
    assert stop.value.code == 2 and "--telemetry-hz" in capsys.readouterr().err


def fake_proc(root, ticks, tree_ticks, cpuinfo=True):
    """A /proc with a 2-CPU /proc/stat, a run of two processes (1 parent, 2 child) and no cpufreq."""
    root.mkdir(exist_ok=True)
    user, steal = ticks
    (root / "stat").write_text(f"cpu  {user} 0 0 {1000 - user} 0 0 0 {steal} 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    (root / "loadavg").write_text("1.50 1.00 0.50 3/120 999\n")
    if cpuinfo:
        (root / "cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2600.000\n\nprocessor\t: 1\ncpu MHz\t\t: 2400.0\n")
    for pid, child, t in ((1, "2", tree_ticks[0]), (2, "", tree_ticks[1])):
        d = root / str(pid) / "task" / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        (d / "children").write_text(child)
        (root / str(pid) / "stat").write_text(f"{pid} (py (x)) R 1 " + "0 " * 9 + f"{t} 0 0 0 20 0\n")
        (root / str(pid) / "status").write_text("Name: x\nVmHWM:\t 204800 kB\nVmRSS:\t 102400 kB\n")


def test_proc_columns_on_a_machine_without_sensors(tmp_path):
    proc = tmp_path / "proc"
    fake_proc(proc, (100, 0), (10, 5))
    source = telemetry.ProcTelemetry(proc, root_pid=1)
    assert source.columns == ["run.cpu_pct", "other.cpu_pct", "cpu.steal_pct", "run.rss_mib", "run.peak_rss_mib",
                              "load.avg1", "load.runnable"]
    assert source.sample() == [None, None, None, 100.0, 200.0, 1.5, 3]    # CPU shares need two rows
    fake_proc(proc, (400, 50), (110, 105))     # 1000 ticks later: run 200, all busy 300, steal 50
    (proc / "stat").write_text("cpu  400 0 0 1550 0 0 0 50 0 0\n")
    assert source.sample()[:3] == [20.0, 10.0, 5.0]
    cpus = telemetry.LinuxCpuTelemetry(tmp_path / "no-sys", proc)   # no cpufreq: /proc/cpuinfo's cpu MHz
    assert cpus.columns == ["cpu.freq_mhz", "cpu0.freq_mhz", "cpu1.freq_mhz"]
    assert cpus.sample() == [2500.0, 2600.0, 2400.0]


def test_proc_source_on_this_machine_counts_a_busy_child(tmp_path):
    import subprocess
    import sys
    import time

    source = telemetry.ProcTelemetry()
    source.sample()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1: pass"])
    child.wait()
    time.sleep(0.05)
    run_pct, other_pct, steal_pct, rss, peak, load, runnable = source.sample()
    assert run_pct > 5 and other_pct >= 0 and steal_pct >= 0 and 0 < rss <= peak and runnable >= 1
    assert not source.errors


def test_a_closing_window_gets_a_row_at_its_own_end_instant_and_none_between(tmp_path):
    """Result format 3: the row written as an epoch closes carries the window's end instant, so the checker
    can ask for a row at each epoch_stop's very millisecond (TELEMETRY-007)."""
    clock = Clock()
    s = telemetry.Sampler(tmp_path / "t.csv", [Counter()], period_s=3600, clock=clock,
                          to_ms=lambda x: int(round(1_800_000_000_000 + x * 1000)))
    s.start()
    s._stop.set()
    s._thread.join()

    class Window:
        end_s = None

    def close():  # the window reads the clock late (a device sync, the meters): its instant is the row's
        clock.t = 2.3456
        w = Window()
        w.end_s = clock.t
        clock.t = 2.9           # time goes on while the row is written
        return w
    clock.t = 2.0
    w = s.sample_closing(close)
    clock.t = 3.0
    s.sample_now()
    s.stop()
    times = [int(r[0]) for r in rows(tmp_path / "t.csv")[1:]]
    assert w.end_s == 2.3456 and times[1] == 1_800_000_002_346      # the window's instant, not the clock's
    assert times == [1_800_000_000_000, 1_800_000_002_346, 1_800_000_003_000]
