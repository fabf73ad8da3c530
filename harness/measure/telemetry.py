"""Telemetry during every trial: power per energy domain, GPU temperature, clocks, throttling,
utilization and memory, each CPU's frequency and thermal zones, and from /proc (every Linux machine,
virtual ones included) the CPU use of the run and of everything else, memory and load, sampled on a
background thread (only global rank 0 samples; the run is its node's process tree, ``run_root_pid``).

Rows go to ``trial_<k>/telemetry.csv`` as they are taken (format and why: docs/energy.md):
a header ``time_ms,<device>.<metric>,...`` then one row per sample, ``time_ms`` on the
MLLOG's clock so rows line up with the run and eval windows; an empty cell is a value that
could not be read. A sampler that falls behind skips the missed ticks and records the gap
(rows are never invented); a source that fails leaves empty cells, never stops the trial.
``summarize`` gives the per-epoch summary written to trial.json and the MLLOG.
"""
from __future__ import annotations

import csv
import math
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol

from trainmark.format.telemetry import (
    FILE_NAME,
    FORMAT,
    GAP_S,
    MAX_PERIOD_S,
    MIN_PERIOD_S,
    PER_CPU_COLUMN,
    THROTTLE_MASK,
    throttle_names,
)

DEFAULT_PERIOD_S = MAX_PERIOD_S  # MLPerf Power samples at 1 Hz or faster


def parse_hz(text: str) -> float:
    """``--telemetry-hz``: 0 (off) or 1..100 samples per second (MLPerf Power asks for 1 Hz or faster)."""
    import argparse

    try:
        hz = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if hz != 0 and not 1 / MAX_PERIOD_S <= hz <= 1 / MIN_PERIOD_S:  # the periods the checker accepts
        raise argparse.ArgumentTypeError(f"{text}: use 0 (off) or 1 to 100 samples per second")
    return hz


class Source(Protocol):
    """One group of columns, read together at every tick."""

    columns: list[str]

    def sample(self) -> list[float | int | None]: ...


class EnergyPower:
    """Power per energy domain as joules between two ticks over the time between them."""

    def __init__(self, meter, clock: Callable[[], float] = time.perf_counter):
        self.meter, self._clock = meter, clock
        self.names = [d.name for d in meter.domains if not d.reason]
        self.columns = [f"{n}.power_w" for n in self.names]
        self._last: tuple[float, dict] | None = None

    def sample(self) -> list[float | None]:
        now, values = self._clock(), self.meter.readings().domains
        last, self._last = self._last, (now, values)
        if last is None or now <= last[0]:
            return [None] * len(self.names)
        dt = now - last[0]
        return [None if values.get(n) is None or last[1].get(n) is None else (values[n] - last[1][n]) / dt
                for n in self.names]


class _Guarded:
    """Reads each metric on its own: one that fails is an empty cell, the others still count."""

    errors: dict[str, str]

    def _read(self, column: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - a metric the device refuses is an empty cell
            self.errors.setdefault(column, f"{type(exc).__name__}: {exc}")
            return None


class NvmlTelemetry(_Guarded):
    """Per NVIDIA GPU: temperature, SM and memory clocks, throttle reasons, utilization, memory used."""

    METRICS = ("temp_c", "sm_mhz", "mem_mhz", "throttle", "util_pct", "mem_used_mib")

    def __init__(self, pynvml, handles: list, names: list[str]):
        self.n, self.handles, self.names = pynvml, handles, names
        self.columns = [f"{g}.{m}" for g in names for m in self.METRICS]
        self.errors: dict[str, str] = {}
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons  # before driver 535

    def sample(self) -> list:
        n, out = self.n, []
        for g, h in zip(self.names, self.handles):
            out += [self._read(f"{g}.temp_c", lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
                    self._read(f"{g}.sm_mhz", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
                    self._read(f"{g}.mem_mhz", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
                    self._read(f"{g}.throttle", lambda: int(self._reasons(h))),
                    self._read(f"{g}.util_pct", lambda: n.nvmlDeviceGetUtilizationRates(h).gpu),
                    self._read(f"{g}.mem_used_mib", lambda: n.nvmlDeviceGetMemoryInfo(h).used / 2 ** 20)]
        return out


class AmdTelemetry(_Guarded):
    """Per AMD GPU (amdsmi): hotspot temperature, GFX and memory clocks, activity, VRAM used.

    amdsmi reports throttling in a format that differs by GPU generation, so it is not mapped
    onto NVML's reasons: AMD GPUs have no throttle column (docs/energy.md).
    """

    METRICS = ("temp_c", "sm_mhz", "mem_mhz", "util_pct", "mem_used_mib")

    def __init__(self, amdsmi, handles: list, names: list[str]):
        self.s, self.handles, self.names = amdsmi, handles, names
        self.columns = [f"{g}.{m}" for g in names for m in self.METRICS]
        self.errors: dict[str, str] = {}

    def sample(self) -> list:
        s, out = self.s, []
        for g, h in zip(self.names, self.handles):
            out += [self._read(f"{g}.temp_c", lambda: s.amdsmi_get_temp_metric(
                        h, s.AmdSmiTemperatureType.HOTSPOT, s.AmdSmiTemperatureMetric.CURRENT)),
                    self._read(f"{g}.sm_mhz", lambda: s.amdsmi_get_clock_info(h, s.AmdSmiClkType.GFX)["clk"]),
                    self._read(f"{g}.mem_mhz", lambda: s.amdsmi_get_clock_info(h, s.AmdSmiClkType.MEM)["clk"]),
                    self._read(f"{g}.util_pct", lambda: s.amdsmi_get_gpu_activity(h)["gfx_activity"]),
                    self._read(f"{g}.mem_used_mib", lambda: s.amdsmi_get_gpu_memory_usage(
                        h, s.AmdSmiMemoryType.VRAM) / 2 ** 20)]
        return out


class LinuxCpuTelemetry(_Guarded):
    """Each CPU's current frequency and their mean, and every thermal zone; roots injectable for tests.

    The frequency is cpufreq's ``scaling_cur_freq`` where the kernel has cpufreq, else the ``cpu MHz``
    lines of ``/proc/cpuinfo`` (a virtual machine: often the nominal clock, still what the guest sees).
    """

    def __init__(self, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc"):
        root = Path(sys_root)
        self.errors: dict[str, str] = {}
        self._cpuinfo = Path(proc_root) / "cpuinfo"
        freq_files = {int(p.parent.parent.name[3:]): p
                      for p in root.glob("devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")}
        self._freq_files = [freq_files[i] for i in sorted(freq_files)]
        self._cpus = sorted(freq_files) or sorted(self._cpuinfo_mhz())
        self._zones: list[tuple[str, Path]] = []
        for zone in sorted(root.glob("class/thermal/thermal_zone[0-9]*"), key=lambda p: int(p.name[12:] or 0)):
            try:
                kind = re.sub(r"[^A-Za-z0-9_-]", "_", (zone / "type").read_text().strip())[:40]
            except OSError:
                kind = "zone"
            self._zones.append((f"tz{zone.name[12:]}-{kind}.temp_c", zone / "temp"))
        freq_columns = ["cpu.freq_mhz", *(f"cpu{i}.freq_mhz" for i in self._cpus)] if self._cpus else []
        self.columns = freq_columns + [c for c, _ in self._zones]

    def _cpuinfo_mhz(self) -> dict[int, float]:
        """``cpu MHz`` per ``processor`` of /proc/cpuinfo ({} where it has none, e.g. arm64)."""
        out: dict[int, float] = {}
        try:
            text = self._cpuinfo.read_text()
        except OSError:
            return out
        cpu = None
        for line in text.splitlines():
            name, _, value = line.partition(":")
            name = name.strip()
            if name == "processor":
                cpu = int(value)
            elif name == "cpu MHz" and cpu is not None:
                out[cpu] = float(value)
        return out

    def _mhz(self) -> list[float | None]:
        if self._freq_files:
            return [int(p.read_text()) / 1000 for p in self._freq_files]
        by_cpu = self._cpuinfo_mhz()
        return [by_cpu.get(i) for i in self._cpus]

    def sample(self) -> list:
        out: list = []
        if self._cpus:
            mhz = self._read("cpu.freq_mhz", self._mhz) or [None] * len(self._cpus)
            known = [m for m in mhz if m is not None]
            out += [sum(known) / len(known) if known else None, *mhz]
        return out + [self._read(c, lambda p=p: int(p.read_text()) / 1000) for c, p in self._zones]


def run_root_pid() -> int:
    """The process whose tree is the run on this node: this one, or under torchrun the elastic agent
    that started every local rank (so each rank and its data-loader workers count as the run)."""
    return os.getppid() if "TORCHELASTIC_RUN_ID" in os.environ else os.getpid()


class ProcTelemetry(_Guarded):
    """What Linux always exposes without sensors (docs/energy.md): CPU use of the run's process tree
    and of everything else (/proc/stat), the main process's resident and peak memory, the load average.

    CPU columns are percent of all the node's CPUs over the interval since the previous row, so
    ``run.cpu_pct + other.cpu_pct + cpu.steal_pct`` plus idle is 100; the first row has none.
    """

    columns = ["run.cpu_pct", "other.cpu_pct", "cpu.steal_pct", "run.rss_mib", "run.peak_rss_mib",
               "load.avg1", "load.runnable"]

    def __init__(self, proc_root: str | Path = "/proc", root_pid: int | None = None):
        self.proc = Path(proc_root)
        self.root_pid = root_pid or run_root_pid()
        self.self_pid = os.getpid() if root_pid is None else self.root_pid
        self.errors: dict[str, str] = {}
        self._last: tuple[int, int, int, int] | None = None   # total, busy, steal, run (clock ticks)

    def _node_ticks(self) -> tuple[int, int, int]:
        """(all, busy, steal) clock ticks of every CPU since boot, from the first line of /proc/stat."""
        with open(self.proc / "stat", "rb") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
        user, nice, system, idle, iowait, irq, softirq, steal = fields + [0] * (8 - len(fields))
        busy = user + nice + system + irq + softirq   # guest time is already inside user and nice
        return busy + idle + iowait + steal, busy, steal

    def _tree_ticks(self) -> int:
        """utime+stime+cutime+cstime summed over the run's live process tree (a reaped child's time is
        in its parent's cutime, so workers that come and go are counted once)."""
        total, todo, seen = 0, [self.root_pid], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                stat = (self.proc / str(pid) / "stat").read_bytes()
                fields = stat[stat.rindex(b")") + 2:].split()
                total += sum(int(x) for x in fields[11:15])
                for task in (self.proc / str(pid) / "task").iterdir():
                    todo += [int(c) for c in (task / "children").read_bytes().split()]
            except (OSError, ValueError):  # a process that just exited: its time is in its parent's cutime
                continue
        return total

    def _cpu(self) -> list[float | None]:
        run = self._tree_ticks()
        total, busy, steal = self._node_ticks()
        last, self._last = self._last, (total, busy, steal, run)
        if last is None or total <= last[0]:
            return [None, None, None]
        span = total - last[0]
        d_run = max(0, run - last[3])
        return [100 * d_run / span, 100 * max(0, busy - last[1] - d_run) / span, 100 * (steal - last[2]) / span]

    def _memory(self) -> list[float | None]:
        kib = {}
        for line in (self.proc / str(self.self_pid) / "status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                kib[line[:5]] = int(line.split()[1])
        return [kib.get("VmRSS", 0) / 1024 or None, kib.get("VmHWM", 0) / 1024 or None]

    def _load(self) -> list[float]:
        avg1, _, _, running, _ = (self.proc / "loadavg").read_text().split()
        return [float(avg1), int(running.split("/")[0])]

    def sample(self) -> list:
        return [*(self._read("run.cpu_pct", self._cpu) or [None] * 3),
                *(self._read("run.rss_mib", self._memory) or [None] * 2),
                *(self._read("load.avg1", self._load) or [None] * 2)]


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    return f"{float(v):.6g}"


class Sampler:
    """Samples every source each ``period_s`` on a daemon thread, appending rows to ``path``."""

    def __init__(self, path: str | Path, sources: list, period_s: float = DEFAULT_PERIOD_S,
                 clock: Callable[[], float] = time.perf_counter, to_ms: Callable[[float], int] | None = None,
                 gap_s: float = GAP_S):
        if not period_s > 0:
            raise ValueError("the telemetry period must be positive")
        self.path, self.period_s, self.gap_s = Path(path), period_s, gap_s
        self.sources = [s for s in sources if s.columns]
        self.columns = [c for s in self.sources for c in s.columns]
        self._clock = clock
        self._to_ms = to_ms or (lambda s: int(round(s * 1000)))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rows: list[tuple[float, list]] = []   # (clock s, values) not yet summarised
        self._last_t: float | None = None
        self.samples = 0
        self.gaps: list[dict[str, float]] = []
        self.errors: dict[str, str] = {}
        self._file = None
        self._writer = None

    def start(self) -> "Sampler":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8", newline="")
        self._writer = csv.writer(self._file, lineterminator="\n")
        self._writer.writerow(["time_ms", *self.columns])
        self._file.flush()
        self.sample_now()
        self._thread = threading.Thread(target=self._loop, name="trainmark-telemetry", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        next_t = self._clock() + self.period_s
        while not self._stop.wait(max(0.0, next_t - self._clock())):
            now = self._clock()
            self.sample_now()
            next_t += self.period_s
            if now - next_t > self.period_s:  # fell behind: skip the missed ticks, the gap shows in the rows
                next_t = now + self.period_s

    def sample_now(self) -> None:
        """One row now (also called at start and stop, so the rows cover the whole trial)."""
        values = self._read()
        with self._lock:
            self._append(self._clock(), values)

    def sample_closing(self, close: Callable[[], Any]) -> Any:
        """Close a window (``close()`` returns it, with its ``end_s``) and write one row stamped with that very
        instant, no other row between them: every epoch_stop then has its row at the same millisecond
        (result format 3), so a moved or squeezed epoch is caught whatever the period (TELEMETRY-007)."""
        values = self._read()
        with self._lock:
            window = close()
            self._append(window.end_s, values)
        return window

    def _read(self) -> list:
        values: list = []
        for source in self.sources:
            try:
                got = list(source.sample())
                if len(got) != len(source.columns):
                    raise ValueError(f"{len(got)} values for {len(source.columns)} columns")
            except Exception as exc:  # noqa: BLE001 - a failing source leaves empty cells
                self.errors.setdefault(type(source).__name__, f"{type(exc).__name__}: {exc}")
                got = [None] * len(source.columns)
            values += got
        return values

    def _append(self, t: float, values: list) -> None:
        """Write one row (the caller holds the lock: rows are written in the order of their times)."""
        if self._file is None:
            return
        if self._last_t is not None and t - self._last_t > self.gap_s:
            self.gaps.append({"from_ms": self._to_ms(self._last_t), "to_ms": self._to_ms(t),
                              "seconds": round(t - self._last_t, 3)})
        self._last_t = t
        self._writer.writerow([self._to_ms(t), *map(_cell, values)])
        self._file.flush()
        self._rows.append((t, values))
        self.samples += 1

    def summarize(self, start_s: float, end_s: float) -> dict[str, Any]:
        """Mean and max of every column over the rows in [start_s, end_s] (clock seconds), and the
        throttle reasons seen; rows before ``end_s`` are then dropped (windows come in order)."""
        with self._lock:
            rows = [(t, v) for t, v in self._rows if start_s <= t <= end_s]
            self._rows = [(t, v) for t, v in self._rows if t > end_s]
        times = [t for t, _ in rows]
        steps = [b - a for a, b in zip(times, times[1:])]
        out: dict[str, Any] = {"samples": len(rows), "max_interval_s": round(max(steps), 3) if steps else None,
                               "mean": {}, "max": {}, "throttle": {}}
        for i, col in enumerate(self.columns):
            vals = [v[i] for _, v in rows if v[i] is not None]
            if not vals or PER_CPU_COLUMN.match(col):  # per-CPU columns: cpu.freq_mhz summarises them
                continue
            if col.endswith(".throttle"):
                bits = [int(x) & THROTTLE_MASK for x in vals]
                seen = 0
                for b in bits:
                    seen |= b
                if seen:
                    out["throttle"][col[: -len(".throttle")]] = {
                        "samples": sum(1 for b in bits if b), "reasons": throttle_names(seen)}
                continue
            out["mean"][col] = float(f"{sum(vals) / len(vals):.6g}")
            out["max"][col] = float(f"{max(vals):.6g}")
        return out

    def stop(self) -> dict[str, Any]:
        """Stop sampling (idempotent) and return the trial.json ``telemetry`` record."""
        if self._thread is not None and self._thread.is_alive():
            self._stop.set()
            self._thread.join(timeout=10)
            self.sample_now()
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
        for source in self.sources:
            for col, why in getattr(source, "errors", {}).items():
                self.errors.setdefault(col, why)
        return {"file": self.path.name, "format": FORMAT, "period_s": self.period_s, "samples": self.samples,
                "columns": self.columns, "gaps": self.gaps, "errors": self.errors or None}


def sources_for(meter, sys_root: str | Path = "/sys", clock: Callable[[], float] = time.perf_counter,
                proc_root: str | Path = "/proc") -> list:
    """The sources this node offers: power from the energy meter's domains, the GPUs its GPU
    meter opened (NVML or amdsmi), each CPU's frequency and the thermal zones, and /proc's CPU use,
    memory and load, which every Linux machine has."""
    from trainmark.harness.measure import energy

    sources: list = []
    if meter.domains:
        sources.append(EnergyPower(meter, clock))
    for m in meter.meters:
        names = [d.name for d in m.domains]
        if isinstance(m, energy.NvmlMeter):
            sources.append(NvmlTelemetry(m.nvml, m.handles, names))
        elif isinstance(m, energy.AmdSmiMeter):
            sources.append(AmdTelemetry(m.smi, m.handles, names))
    sources.append(LinuxCpuTelemetry(sys_root, proc_root))
    if (Path(proc_root) / "stat").exists():
        sources.append(ProcTelemetry(proc_root))
    return sources


def open_for_trial(trial_dir: str | Path, meter, monitor, period_s: float = DEFAULT_PERIOD_S,
                   sys_root: str | Path = "/sys") -> Sampler:
    """Start sampling into ``trial_dir/telemetry.csv`` on the monitor's clock and attach it to the monitor."""
    sampler = Sampler(Path(trial_dir) / FILE_NAME, sources_for(meter, sys_root, monitor.clock), period_s,
                      clock=monitor.clock, to_ms=monitor.wall_ms)
    monitor.telemetry = sampler
    return sampler.start()
