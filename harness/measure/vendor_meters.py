"""Energy meters for accelerators beyond NVIDIA and AMD, each through its vendor's own interface.

- Intel Data Center GPUs: ``xpu-smi stats -d ID -j`` (XPU Manager over Level Zero Sysman), whose
  ``XPUM_STATS_ENERGY`` entry is the device's energy counter in millijoules.
- Intel Gaudi: ``pyhlml`` (habana-pyhlml), ``hlmlDeviceGetTotalEnergyConsumption`` in millijoules.
- Huawei Ascend: ``npu-smi info -t power -i ID`` reports power in watts only: it is sampled and integrated.

Counters are read as deltas from ``start``; a counter narrower than 64 bits wraps, so each counter
meter polls often enough to see every wrap (``CounterTracker``). A vendor interface that disappears
mid-run makes the meter fail loudly (``MeterFailed``: its domains become null with the reason), never
report a short reading. Every interface is injectable so the tests run against fakes.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from typing import Callable

from trainmark.harness.measure.energy import (
    GPU,
    MEASURED_COUNTER,
    MEASURED_POWER,
    Domain,
    MeterFailed,
    MeterUnavailable,
    _DomainMeterBase,
    _Poller,
)

ACCELERATOR = GPU  # the domain kind every accelerator's energy is reported under (trainmark.format.labels)


class CounterTracker:
    """A hardware counter of ``bits`` width read as a running total: each wrap adds 2**bits."""

    def __init__(self, bits: int = 64):
        self.modulus = 2 ** bits
        self.start: int | None = None
        self.last: int | None = None
        self.wraps = 0

    def begin(self, value: int) -> None:
        self.start = self.last = int(value)
        self.wraps = 0

    def update(self, value: int) -> int:
        """The counts since ``begin``; a value below the last one is a wrap."""
        value = int(value)
        if self.last is not None and value < self.last:
            self.wraps += 1
        self.last = value
        return value + self.wraps * self.modulus - (self.start or 0)


class _CounterMeter(_DomainMeterBase):
    """Domains read from millijoule counters (``read_mj(i)``), polled every ``poll_s`` to catch wraps."""

    def __init__(self, names: list[str], resolution: str, read_mj: Callable[[int], int], bits: int,
                 poll_s: float, errors: tuple[type[BaseException], ...], label: str):
        self.domains = [Domain(n, ACCELERATOR, MEASURED_COUNTER, resolution) for n in names]
        self._read, self._errors, self._label = read_mj, errors, label
        self._trackers = [CounterTracker(bits) for _ in names]
        self._lock = threading.Lock()
        self._poller = _Poller(self._poll, poll_s, name=f"trainmark-{label}") if bits < 64 else None

    def _poll(self) -> list[int]:
        with self._lock:
            return [t.update(self._read(i)) for i, t in enumerate(self._trackers)]

    def start(self) -> None:
        for i, t in enumerate(self._trackers):
            t.begin(self._read(i))
        if self._poller:
            self._poller.start()

    def by_domain(self) -> dict[str, float]:
        try:
            if self._poller:
                self._poller.check()
            return {d.name: mj / 1000.0 for d, mj in zip(self.domains, self._poll())}
        except self._errors as exc:
            raise MeterFailed(f"{self._label}: {exc}") from None

    def stop(self) -> None:
        if self._poller:
            self._poller.stop()


class HlmlMeter(_CounterMeter):
    """Intel Gaudi energy through ``pyhlml`` (habana-pyhlml), one domain per card."""

    def __init__(self, devices: list[int], pyhlml=None, poll_s: float = 1.0):
        if pyhlml is None:
            try:
                import pyhlml  # habana-pyhlml
            except ImportError:
                raise MeterUnavailable("habana-pyhlml is not installed (pip install habana-pyhlml)") from None
        self.hlml = pyhlml
        error = getattr(pyhlml, "HLMLError", Exception)
        try:
            pyhlml.hlmlInit()
            handles = [pyhlml.hlmlDeviceGetHandleByIndex(i) for i in devices]
            for h in handles:
                pyhlml.hlmlDeviceGetTotalEnergyConsumption(h)
        except error as exc:
            raise MeterUnavailable(f"HLML energy counter unavailable: {exc}") from None
        super().__init__([f"gpu{i}" for i in range(len(devices))], "HLML total-energy counter, 1 mJ",
                         lambda i: pyhlml.hlmlDeviceGetTotalEnergyConsumption(handles[i]), 64, poll_s,
                         (error,), "HLML")


class XpuSmiMeter(_CounterMeter):
    """Intel Data Center GPU energy through ``xpu-smi stats -j`` (Level Zero Sysman's energy counter).

    Sysman's counter is 64 bits wide in microjoules but XPU Manager reports it in millijoules as a
    32-bit value on some releases, so it is tracked as 32 bits and polled every ``poll_s``.
    """

    def __init__(self, devices: list[int], run: Callable[[list[str]], str] | None = None, poll_s: float = 1.0,
                 executable: str | None = None):
        exe = executable or shutil.which("xpu-smi")
        if run is None and exe is None:
            raise MeterUnavailable("xpu-smi is not installed (Intel XPU Manager)")
        self._run = run or (lambda argv: subprocess.run([exe, *argv], capture_output=True, text=True,
                                                        timeout=10, check=True).stdout)
        self._ids = list(devices)
        try:
            for i in range(len(self._ids)):
                self._energy_mj(i)
        except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
            raise MeterUnavailable(f"xpu-smi energy unavailable: {exc}") from None
        super().__init__([f"gpu{i}" for i in range(len(devices))], "xpu-smi energy counter, 1 mJ",
                         self._energy_mj, 32, poll_s, (OSError, subprocess.SubprocessError, ValueError, KeyError),
                         "xpu-smi")

    def _energy_mj(self, i: int) -> int:
        stats = json.loads(self._run(["stats", "-d", str(self._ids[i]), "-j"]))
        for entry in stats.get("device_level", []):
            if entry.get("metrics_type") == "XPUM_STATS_ENERGY":
                return int(float(entry["value"]))
        raise KeyError("xpu-smi stats has no XPUM_STATS_ENERGY entry")


NPU_POWER = re.compile(r"Power Dissipation\(W\)\s*:\s*(\d+(?:\.\d+)?)")


class NpuSmiMeter(_DomainMeterBase):
    """Huawei Ascend power through ``npu-smi info -t power -i ID``, sampled every ``poll_s`` and integrated.

    npu-smi exposes power, not an energy counter: the method is measured-power.
    """

    def __init__(self, devices: list[int], run: Callable[[list[str]], str] | None = None, poll_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic, executable: str | None = None):
        exe = executable or shutil.which("npu-smi")
        if run is None and exe is None:
            raise MeterUnavailable("npu-smi is not installed (Ascend driver)")
        self._run = run or (lambda argv: subprocess.run([exe, *argv], capture_output=True, text=True,
                                                        timeout=10, check=True).stdout)
        self._ids, self._clock = list(devices), clock
        try:
            for i in range(len(self._ids)):
                self._watts(i)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise MeterUnavailable(f"npu-smi power unavailable: {exc}") from None
        self.domains = [Domain(f"gpu{i}", ACCELERATOR, MEASURED_POWER,
                               f"npu-smi power in W sampled every {poll_s * 1000:g} ms, trapezoid-integrated")
                        for i in range(len(self._ids))]
        self._lock = threading.Lock()
        self._joules = [0.0] * len(self._ids)
        self._last: list[tuple[float, float]] = []
        self._poller = _Poller(self._sample, poll_s, name="trainmark-npu-smi")

    def _watts(self, i: int) -> float:
        m = NPU_POWER.search(self._run(["info", "-t", "power", "-i", str(self._ids[i])]))
        if m is None:
            raise ValueError("npu-smi printed no 'Power Dissipation(W)' line")
        return float(m.group(1))

    def _sample(self) -> None:
        with self._lock:
            now = self._clock()
            for i in range(len(self._ids)):
                watts = self._watts(i)
                t0, w0 = self._last[i]
                self._joules[i] += (now - t0) * (watts + w0) / 2
                self._last[i] = (now, watts)

    def start(self) -> None:
        now = self._clock()
        self._last = [(now, self._watts(i)) for i in range(len(self._ids))]
        self._joules = [0.0] * len(self._ids)
        self._poller.start()

    def by_domain(self) -> dict[str, float]:
        try:
            self._poller.check()
            self._sample()
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise MeterFailed(f"npu-smi: {exc}") from None
        with self._lock:
            return {d.name: j for d, j in zip(self.domains, self._joules)}

    def stop(self) -> None:
        self._poller.stop()


def open_accelerator_meter(kind: str, devices: list[int | str], **fakes):
    """The energy meter of accelerator type ``kind`` (torch's device type), or MeterUnavailable with why.

    ``fakes``: injected interfaces for tests (pyhlml=..., xpu_run=..., npu_run=...).
    """
    ints = [d for d in devices if isinstance(d, int)]
    if kind == "hpu":
        return HlmlMeter(ints, pyhlml=fakes.get("pyhlml"))
    if kind == "xpu":
        return XpuSmiMeter(ints, run=fakes.get("xpu_run"))
    if kind == "npu":
        return NpuSmiMeter(ints, run=fakes.get("npu_run"))
    raise MeterUnavailable(f"no energy meter for {kind} devices: their vendor exposes no counter trainmark "
                           "reads (Apple MPS and TPU VMs give unprivileged processes none)")
