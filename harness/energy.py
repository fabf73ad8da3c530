"""Energy meters: NVML (GPUs), RAPL (CPU package and DRAM), a labelled TDP estimate, or none.

Every meter answers one question, ``joules()``: energy used since ``start()``, or ``None``
when nothing is measured. Each carries its ``method`` (``measured-counter``,
``measured-power``, ``estimated``, ``unavailable``) and, when unavailable, a ``reason``.
An energy that was not measured is ``None``, never 0. Windows that pause during evaluation
are built on top of this by ``trainmark.harness.monitor``.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

MEASURED_COUNTER = "measured-counter"
MEASURED_POWER = "measured-power"
ESTIMATED = "estimated"
UNAVAILABLE = "unavailable"


class MeterUnavailable(Exception):
    """No counter can be read; the message is the reason reported with a null energy."""


class NullMeter:
    """Nothing measured: every reading is ``None`` and the reason says why."""

    method = UNAVAILABLE

    def __init__(self, reason: str):
        self.reason = reason

    def start(self) -> None:
        pass

    def joules(self) -> float | None:
        return None

    def stop(self) -> None:
        pass


class _Poller:
    """Calls ``fn`` every ``period`` seconds on a daemon thread (counter wrap, power sampling)."""

    def __init__(self, fn: Callable[[], None], period: float):
        self._fn, self._period = fn, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trainmark-energy", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._period):
            self._fn()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


class RaplMeter:
    """CPU energy from Linux powercap RAPL counters (package zones plus their DRAM sub-zones).

    Counters are microjoules and wrap at ``max_energy_range_uj`` (every few minutes under
    load), so a poller reads them often enough never to miss a wrap. ``root`` is injectable
    so tests can run on a fake sysfs tree.
    """

    method = MEASURED_COUNTER
    reason = None

    def __init__(self, root: str | Path = "/sys/class/powercap", poll_s: float = 5.0):
        root = Path(root)
        zones = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
        if not zones:
            raise MeterUnavailable(f"no RAPL zones under {root} (virtual machine or non-Linux host)")
        self.zones: list[Path] = []
        for zone in zones:  # package zones, then their DRAM sub-zones (core/uncore are inside package)
            self.zones.append(zone)
            for sub in sorted(zone.glob(f"{zone.name}:*")):
                if _read_text(sub / "name") == "dram":
                    self.zones.append(sub)
        self.domains = [_read_text(z / "name") or z.name for z in self.zones]
        try:
            self._max = [int(_read_text(z / "max_energy_range_uj")) for z in self.zones]
            self._last = [self._read(z) for z in self.zones]
        except PermissionError:
            raise MeterUnavailable(
                f"RAPL counters under {root} are readable by root only (Linux >= 5.10, CVE-2020-8694)"
            ) from None
        except (OSError, ValueError) as exc:
            raise MeterUnavailable(f"cannot read RAPL counters under {root}: {exc}") from None
        self._total_uj = 0
        self._lock = threading.Lock()
        self._poller = _Poller(self._update, poll_s)

    @staticmethod
    def _read(zone: Path) -> int:
        return int((zone / "energy_uj").read_text())

    def _update(self) -> None:
        with self._lock:
            for i, zone in enumerate(self.zones):
                now = self._read(zone)
                delta = now - self._last[i]
                if delta < 0:  # wrapped once since the last read
                    delta += self._max[i] + 1
                self._total_uj += delta
                self._last[i] = now

    def start(self) -> None:
        self._update()
        with self._lock:
            self._total_uj = 0
        self._poller.start()

    def joules(self) -> float | None:
        self._update()
        with self._lock:
            return self._total_uj / 1e6

    def stop(self) -> None:
        self._poller.stop()


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


class NvmlMeter:
    """GPU energy through NVML (``nvidia-ml-py``) for every GPU in use.

    Volta and newer: the total-energy counter (millijoules since driver load). Older GPUs:
    instantaneous power sampled at ``poll_s`` and integrated (trapezoid). ``pynvml`` is
    injectable so tests can run on a fake.
    """

    reason = None

    def __init__(self, devices: list[int | str], pynvml=None, poll_s: float = 0.05,
                 clock: Callable[[], float] = time.monotonic):
        if pynvml is None:
            try:
                import pynvml  # provided by nvidia-ml-py
            except ImportError:
                raise MeterUnavailable("nvidia-ml-py is not installed (pip install nvidia-ml-py)") from None
        self.nvml = pynvml
        try:
            pynvml.nvmlInit()
            # An int is NVML's own index; a "GPU-..." string a UUID (robust to CUDA_VISIBLE_DEVICES).
            self.handles = [pynvml.nvmlDeviceGetHandleByUUID(d) if isinstance(d, str)
                            else pynvml.nvmlDeviceGetHandleByIndex(d) for d in devices]
        except pynvml.NVMLError as exc:
            raise MeterUnavailable(f"NVML unavailable: {exc}") from None
        self.uses_counter = [self._has_counter(h) for h in self.handles]
        self.method = MEASURED_COUNTER if all(self.uses_counter) else MEASURED_POWER
        self._clock = clock
        self._lock = threading.Lock()
        self._start_mj: list[int] = []
        self._integrated_j = [0.0] * len(self.handles)
        self._last_sample: list[tuple[float, float]] = []
        self._poller = _Poller(self._sample, poll_s) if not all(self.uses_counter) else None

    def _has_counter(self, handle) -> bool:
        n = self.nvml
        try:
            if n.nvmlDeviceGetArchitecture(handle) < n.NVML_DEVICE_ARCH_VOLTA:
                return False
            n.nvmlDeviceGetTotalEnergyConsumption(handle)
            return True
        except n.NVMLError:
            return False

    def _power_w(self, handle) -> float:
        return self.nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0

    def _sample(self) -> None:
        now = self._clock()
        with self._lock:
            for i, h in enumerate(self.handles):
                if self.uses_counter[i]:
                    continue
                watts = self._power_w(h)
                t0, w0 = self._last_sample[i]
                self._integrated_j[i] += (now - t0) * (watts + w0) / 2
                self._last_sample[i] = (now, watts)

    def start(self) -> None:
        now = self._clock()
        self._start_mj = [
            self.nvml.nvmlDeviceGetTotalEnergyConsumption(h) if c else 0
            for h, c in zip(self.handles, self.uses_counter)
        ]
        self._last_sample = [(now, 0.0 if c else self._power_w(h)) for h, c in zip(self.handles, self.uses_counter)]
        self._integrated_j = [0.0] * len(self.handles)
        if self._poller:
            self._poller.start()

    def joules(self) -> float | None:
        if self._poller:
            self._sample()
        total = 0.0
        with self._lock:
            for i, h in enumerate(self.handles):
                if self.uses_counter[i]:
                    total += (self.nvml.nvmlDeviceGetTotalEnergyConsumption(h) - self._start_mj[i]) / 1000.0
                else:
                    total += self._integrated_j[i]
        return total

    def stop(self) -> None:
        if self._poller:
            self._poller.stop()


class TdpEstimateMeter:
    """A labelled estimate, ``watts`` × elapsed time; only when the user asks for it."""

    method = ESTIMATED

    def __init__(self, watts: float, clock: Callable[[], float] = time.monotonic):
        if watts <= 0:
            raise ValueError("estimated power must be positive")
        self.watts, self._clock = watts, clock
        self.reason = f"estimated as {watts:g} W x elapsed time (--energy-estimate-watts), not measured"
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = self._clock()

    def joules(self) -> float | None:
        return self.watts * (self._clock() - self._t0)

    def stop(self) -> None:
        pass


def cuda_uuids(torch_indices: list[int]) -> list[int | str]:
    """NVML identifiers of torch's CUDA devices: UUIDs where torch reports them, else the index."""
    import torch

    out: list[int | str] = []
    for i in torch_indices:
        uuid = getattr(torch.cuda.get_device_properties(i), "uuid", None)
        out.append(f"GPU-{uuid}" if uuid is not None else i)
    return out


def open_meter(device: str, estimate_watts: float | None = None, rapl_root: str | Path = "/sys/class/powercap",
               pynvml=None, cuda_indices: list[int | str] | None = None):
    """The best meter for ``device`` ('cpu' or 'cuda:i'): measured if possible, else null with a reason.

    An estimate is used only when ``estimate_watts`` is given and nothing can be measured.
    """
    try:
        if device.startswith("cuda"):
            indices = cuda_indices if cuda_indices is not None else [int(device.partition(":")[2] or 0)]
            return NvmlMeter(indices, pynvml=pynvml)
        return RaplMeter(rapl_root)
    except MeterUnavailable as exc:
        if estimate_watts:
            meter = TdpEstimateMeter(estimate_watts)
            meter.reason += f"; no measurement: {exc}"
            return meter
        return NullMeter(str(exc))
