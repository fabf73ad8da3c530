"""Energy meters by domain (GPUs, CPU packages, DRAM, the node) and the one place that selects them.

A *domain meter* measures one or more named domains (``gpu0``, ``package-0``, ``dram-0``,
``node``) and answers ``by_domain()``: joules per domain since ``start()``. It carries its
``domains`` (each with its method label and resolution) and raises when it stops working.
Meters here: NVML (NVIDIA GPUs), amdsmi (AMD GPUs), Linux powercap RAPL (CPU package and
DRAM, Intel and AMD), IPMI DCMI through ``ipmitool`` (node power at the wall).

``open_meter`` combines what the node offers into a ``CompositeMeter``, which every caller
uses through the ``Meter`` protocol: ``start()``, ``joules()`` (the total, or ``None``),
``readings()`` (the total and every domain from one read), ``describe()`` (each domain's
method), ``stop()``, plus ``method``, ``reason``, ``scope``, ``domains`` and ``meters`` (the
domain meters it combines). Every meter implements all of it (``MeterBase`` holds the defaults
of a meter without domains), so no caller probes for a member. What the total covers is its ``scope``: the node meter
when there is one (it already includes everything else), otherwise the sum of the GPU, CPU
package and DRAM domains. An energy that was not measured is ``None`` with a reason, never 0;
a domain that fails mid-run turns ``None`` from then on, with the reason recorded.
Windows that pause during evaluation are built on top of this by ``trainmark.harness.measure.windows``.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence, runtime_checkable

from trainmark.format.labels import EnergyMethod

# The method labels are the result format's (trainmark.format.labels), as plain strings.
MEASURED_COUNTER = EnergyMethod.MEASURED_COUNTER.value
MEASURED_POWER = EnergyMethod.MEASURED_POWER.value
ESTIMATED = EnergyMethod.ESTIMATED.value
UNAVAILABLE = EnergyMethod.UNAVAILABLE.value

GPU, CPU_PACKAGE, DRAM, NODE = "gpu", "cpu-package", "dram", "node"
PLATFORM = "platform"  # RAPL 'psys' (laptops): contains the packages, so never added to them


class MeterUnavailable(Exception):
    """No counter can be read; the message is the reason reported with a null energy."""


class MeterFailed(Exception):
    """A meter that worked stopped working mid-run; its domains become null with this reason."""


@dataclass
class Domain:
    """One measured part of the system, with how it is measured (recorded in trial.json)."""

    name: str                  # gpu0, package-0, dram-0, node
    kind: str                  # gpu | cpu-package | dram | node
    method: str                # measured-counter | measured-power | unavailable
    resolution: str            # what one reading is worth and how often it updates
    reason: str | None = None  # why it is unavailable or failed

    def describe(self) -> dict:
        return {"kind": self.kind, "method": self.method, "resolution": self.resolution, "reason": self.reason}


@dataclass(frozen=True)
class Reading:
    """The total (None when any domain of the scope is unmeasured) and each domain, from one read."""

    total: float | None
    domains: dict[str, float | None] = field(default_factory=dict)


@runtime_checkable
class Meter(Protocol):
    """What the trial loop, the measurement windows, the telemetry sampler and multi-node aggregation call."""

    method: str                 # the weakest method of what the total covers (trainmark.format.labels)
    reason: str | None          # why the total is an estimate, unmeasured, or lost a domain
    scope: str | None           # what the total covers ('gpu0+package-0', 'node', 'estimate'); None: no total
    domains: Sequence[Domain]   # every domain, measured or not (empty: the meter has no domains)
    meters: Sequence            # the domain meters combined (the telemetry reads their GPUs); empty: none

    def start(self) -> None: ...
    def joules(self) -> float | None: ...
    def readings(self) -> Reading: ...            # the total and every domain, from one read
    def describe(self) -> dict[str, dict]: ...    # per domain: kind, method, resolution, reason, in_total
    def stop(self) -> None: ...


class MeterBase:
    """The defaults of a meter without domains (an estimate, the sum over nodes, a test's fake): its
    readings are the total alone, it describes no domain and combines no domain meter."""

    scope: str | None = None
    reason: str | None = None
    domains: Sequence[Domain] = ()
    meters: Sequence = ()

    def start(self) -> None:
        pass

    def joules(self) -> float | None:
        return None

    def readings(self) -> Reading:
        return Reading(self.joules(), {})

    def describe(self) -> dict[str, dict]:
        return {}

    def stop(self) -> None:
        pass


class NullMeter(MeterBase):
    """Nothing measured: every reading is ``None`` and the reason says why."""

    method = UNAVAILABLE

    def __init__(self, reason: str, domains: list[Domain] | None = None):
        self.reason = reason
        self.domains = domains or []

    def readings(self) -> Reading:
        return Reading(None, {d.name: None for d in self.domains})

    def describe(self) -> dict[str, dict]:
        return {d.name: {**d.describe(), "in_total": False} for d in self.domains}


class _Poller:
    """Calls ``fn`` every ``period`` seconds on a daemon thread (counter wrap, power sampling).

    An exception stops the polling and is kept in ``error``: the owning meter then fails
    loudly instead of silently missing a counter wrap.
    """

    def __init__(self, fn: Callable[[], None], period: float, name: str = "trainmark-energy"):
        self._fn, self._period = fn, period
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self._fn()
            except Exception as exc:  # noqa: BLE001 - reported by the meter's next reading
                self.error = exc
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def check(self) -> None:
        if self.error is not None:
            raise MeterFailed(f"background polling failed: {type(self.error).__name__}: {self.error}")


class _DomainMeterBase:
    """``joules()`` and ``readings()`` of a domain meter from its ``by_domain()``."""

    domains: list[Domain]
    reason = None

    @property
    def method(self) -> str:
        return _weakest(d.method for d in self.domains)

    def joules(self) -> float | None:
        return sum(self.by_domain().values())

    def readings(self) -> Reading:
        values = self.by_domain()
        return Reading(sum(values.values()), values)


def _weakest(methods) -> str:
    methods = set(methods)
    for m in (UNAVAILABLE, ESTIMATED, MEASURED_POWER):
        if m in methods:
            return m
    return MEASURED_COUNTER


class RaplMeter(_DomainMeterBase):
    """CPU energy from Linux powercap RAPL counters (package zones plus their DRAM sub-zones).

    The folder is named ``intel-rapl`` on AMD CPUs too. Counters are microjoules and wrap at
    ``max_energy_range_uj`` (every few minutes under load), so a poller reads them often
    enough never to miss a wrap. ``root`` is injectable so tests run on a fake sysfs tree.
    """

    def __init__(self, root: str | Path = "/sys/class/powercap", poll_s: float = 5.0):
        root = Path(root)
        zones = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
        if not zones:
            raise MeterUnavailable(f"no RAPL zones under {root} (virtual machine or non-Linux host)")
        self.zones: list[Path] = []
        self.domains: list[Domain] = []
        resolution = (f"1 uJ counter (hardware unit 15-61 uJ, updated every ~1 ms); "
                      f"wrap-around polled every {poll_s:g} s")
        for zone in zones:  # package zones, then their DRAM sub-zones (core/uncore are inside package)
            index = zone.name.split(":")[1]
            name = _read_text(zone / "name") or f"package-{index}"
            self.zones.append(zone)
            self.domains.append(Domain(name, PLATFORM if name == "psys" else CPU_PACKAGE, MEASURED_COUNTER,
                                       resolution))
            for sub in sorted(zone.glob(f"{zone.name}:*")):
                if _read_text(sub / "name") == "dram":
                    self.zones.append(sub)
                    self.domains.append(Domain(f"dram-{index}", DRAM, MEASURED_COUNTER, resolution))
        try:
            self._max = [int(_read_text(z / "max_energy_range_uj")) for z in self.zones]
            self._last = [self._read(z) for z in self.zones]
        except PermissionError:
            raise MeterUnavailable(
                f"RAPL counters under {root} are readable by root only (Linux >= 5.10, CVE-2020-8694)"
            ) from None
        except (OSError, ValueError) as exc:
            raise MeterUnavailable(f"cannot read RAPL counters under {root}: {exc}") from None
        self._total_uj = [0] * len(self.zones)
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
                self._total_uj[i] += delta
                self._last[i] = now

    def start(self) -> None:
        self._update()
        with self._lock:
            self._total_uj = [0] * len(self.zones)
        self._poller.start()

    def by_domain(self) -> dict[str, float]:
        self._poller.check()
        try:
            self._update()
        except (OSError, ValueError) as exc:
            raise MeterFailed(f"cannot read RAPL counters: {exc}") from None
        with self._lock:
            return {d.name: uj / 1e6 for d, uj in zip(self.domains, self._total_uj)}

    def stop(self) -> None:
        self._poller.stop()


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


class NvmlMeter(_DomainMeterBase):
    """GPU energy through NVML (``nvidia-ml-py``), one domain per GPU in use.

    Volta and newer: the total-energy counter (millijoules since driver load). Older GPUs:
    instantaneous power sampled at ``poll_s`` (default 20 Hz) and integrated (trapezoid).
    ``pynvml`` is injectable so tests run on a fake.
    """

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
        self.domains = [
            Domain(f"gpu{i}", GPU, MEASURED_COUNTER, "NVML total-energy counter, 1 mJ, updated about every 100 ms")
            if c else
            Domain(f"gpu{i}", GPU, MEASURED_POWER, f"NVML power in mW sampled every {poll_s * 1000:g} ms, "
                   "trapezoid-integrated")
            for i, c in enumerate(self.uses_counter)]
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
        with self._lock:  # the clock is read under the lock: two threads never integrate backwards
            now = self._clock()
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

    def by_domain(self) -> dict[str, float]:
        try:
            if self._poller:
                self._poller.check()
                self._sample()
            out = {}
            with self._lock:
                for i, h in enumerate(self.handles):
                    if self.uses_counter[i]:
                        out[self.domains[i].name] = (self.nvml.nvmlDeviceGetTotalEnergyConsumption(h)
                                                     - self._start_mj[i]) / 1000.0
                    else:
                        out[self.domains[i].name] = self._integrated_j[i]
            return out
        except self.nvml.NVMLError as exc:
            raise MeterFailed(f"NVML: {exc}") from None

    def stop(self) -> None:
        if self._poller:
            self._poller.stop()


class AmdSmiMeter(_DomainMeterBase):
    """AMD GPU energy through amdsmi's energy accumulator (ROCm 6+), one domain per GPU.

    ``amdsmi_get_energy_count`` returns the accumulator and its resolution in microjoules per
    count (the key is ``energy_accumulator`` since ROCm 6.1, ``power`` before). ``amdsmi`` is
    injectable so tests run on a fake.
    """

    def __init__(self, devices: list[int] | None = None, amdsmi=None):
        if amdsmi is None:
            try:
                import amdsmi  # ROCm's Python bindings
            except ImportError:
                raise MeterUnavailable("amdsmi is not installed (it ships with ROCm: "
                                       "/opt/rocm/share/amd_smi)") from None
        self.smi = amdsmi
        try:
            amdsmi.amdsmi_init()
            handles = amdsmi.amdsmi_get_processor_handles()
            self.handles = [handles[i] for i in devices] if devices is not None else list(handles)
            self._resolution = [float(self._count(h)[1]) for h in self.handles]
        except (amdsmi.AmdSmiException, IndexError, KeyError) as exc:
            raise MeterUnavailable(f"amdsmi energy counter unavailable: {exc}") from None
        if not self.handles:
            raise MeterUnavailable("amdsmi found no AMD GPU")
        self.domains = [Domain(f"gpu{i}", GPU, MEASURED_COUNTER,
                               f"amdsmi energy accumulator, {r:g} uJ per count")
                        for i, r in enumerate(self._resolution)]
        self._start: list[float] = []

    def _count(self, handle) -> tuple[int, float]:
        d = self.smi.amdsmi_get_energy_count(handle)
        acc = d["energy_accumulator"] if "energy_accumulator" in d else d["power"]
        return int(acc), float(d["counter_resolution"])

    def _uj(self, i: int) -> float:
        acc, res = self._count(self.handles[i])
        return acc * res

    def start(self) -> None:
        self._start = [self._uj(i) for i in range(len(self.handles))]

    def by_domain(self) -> dict[str, float]:
        try:
            return {d.name: (self._uj(i) - self._start[i]) / 1e6 for i, d in enumerate(self.domains)}
        except (self.smi.AmdSmiException, KeyError) as exc:
            raise MeterFailed(f"amdsmi: {exc}") from None

    def stop(self) -> None:
        pass


DCMI_POWER = re.compile(r"Instantaneous power reading:\s*(\d+(?:\.\d+)?)\s*Watts", re.I)


class IpmiDcmiMeter(_DomainMeterBase):
    """Node power at the wall from the BMC: ``ipmitool dcmi power reading``, sampled and integrated.

    Readings are whole watts, at ``poll_s`` (1 s: a BMC answers in tens to hundreds of ms).
    Three failed readings in a row make the meter fail (a single slow BMC answer does not).
    """

    def __init__(self, ipmitool: str | None = None, poll_s: float = 1.0, timeout_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, max_failures: int = 3):
        self.exe = ipmitool or shutil.which("ipmitool")
        if not self.exe:
            raise MeterUnavailable("ipmitool is not installed (node power needs IPMI DCMI)")
        self.timeout_s, self._clock, self.max_failures = timeout_s, clock, max_failures
        try:
            self._read_w()
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise MeterUnavailable(f"ipmitool dcmi power reading failed: {exc}") from None
        self.domains = [Domain("node", NODE, MEASURED_POWER,
                               f"IPMI DCMI instantaneous power, 1 W, sampled every {poll_s:g} s, trapezoid-integrated")]
        self._lock = threading.Lock()
        self._joules = 0.0
        self._last: tuple[float, float] = (0.0, 0.0)
        self._failures = 0
        self._error: str | None = None
        self._poller = _Poller(self._sample, poll_s, "trainmark-ipmi")

    def _read_w(self) -> float:
        proc = subprocess.run([self.exe, "dcmi", "power", "reading"], capture_output=True, text=True,
                              timeout=self.timeout_s, check=False)
        m = DCMI_POWER.search(proc.stdout)
        if proc.returncode != 0 or not m:
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            raise ValueError(f"exit {proc.returncode}: {detail[-1] if detail else 'no power reading in the output'}")
        return float(m.group(1))

    def _sample(self) -> None:
        try:
            watts = self._read_w()
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            with self._lock:
                self._failures += 1
                if self._failures >= self.max_failures:
                    self._error = f"ipmitool failed {self._failures} times in a row: {exc}"
            return
        with self._lock:
            now = self._clock()
            t0, w0 = self._last
            self._joules += (now - t0) * (watts + w0) / 2
            self._last, self._failures = (now, watts), 0

    def start(self) -> None:
        watts = self._read_w()
        with self._lock:
            self._last, self._joules = (self._clock(), watts), 0.0
        self._poller.start()

    def by_domain(self) -> dict[str, float]:
        with self._lock:
            if self._error:
                raise MeterFailed(self._error)
            # up to now at the last power read (a wall meter is never read at the instant itself)
            t0, w0 = self._last
            return {"node": self._joules + (self._clock() - t0) * w0}

    def stop(self) -> None:
        self._poller.stop()


class CompositeMeter:
    """Several domain meters read as one: joules per domain plus the total over ``scope``.

    ``required`` names the domain kinds the total must include (the GPUs of a GPU run, the
    CPU packages of a CPU run): without them the total is ``None`` with the reason, while
    the domains that are measured are still reported. ``unavailable`` domains carry the
    reason they are missing. A meter that raises mid-run makes its domains ``None`` from
    then on (reason recorded) and, if they are in the scope, the total too.
    """

    def __init__(self, meters: list, unavailable: list[Domain] | None = None, required: tuple[str, ...] = (),
                 clock: Callable[[], float] = time.monotonic):
        self.meters = list(meters)
        self.domains: list[Domain] = [d for m in self.meters for d in m.domains] + list(unavailable or [])
        self._failed: set[int] = set()
        self._lock = threading.Lock()
        self._clock, self._t0 = clock, clock()
        measured = [d for m in self.meters for d in m.domains]
        node = [d for d in measured if d.kind == NODE]
        self.in_scope = [d.name for d in (node or [d for d in measured if d.kind != PLATFORM])]
        missing = [k for k in required if not node and not any(d.kind == k for d in measured)]
        self._missing_reason = None
        if missing:
            why = "; ".join(f"{d.name}: {d.reason}" for d in unavailable or [] if d.kind in missing)
            self._missing_reason = f"no {' or '.join(missing)} energy measured ({why or 'no meter'})"
        self.scope = "+".join(self.in_scope) if self.in_scope and not missing else None

    @property
    def method(self) -> str:
        if self.scope is None:
            return UNAVAILABLE
        return _weakest(d.method for d in self.domains if d.name in self.in_scope)

    @property
    def reason(self) -> str | None:
        if self._missing_reason:
            return self._missing_reason
        lost = [d for d in self.domains if d.name in self.in_scope and d.reason]
        if lost:
            return "; ".join(f"{d.name}: {d.reason}" for d in lost)
        return None

    def start(self) -> None:
        self._t0 = self._clock()
        for i, m in enumerate(self.meters):
            try:
                m.start()
            except Exception as exc:  # noqa: BLE001 - a meter that cannot start is a failed domain
                self._fail(i, exc)

    def _fail(self, i: int, exc: BaseException) -> None:
        self._failed.add(i)
        after = self._clock() - self._t0
        for d in self.meters[i].domains:  # the method stays: it says how it was measured until then
            d.reason = f"failed {after:.1f} s after the meter started: {type(exc).__name__}: {exc}"

    def readings(self) -> Reading:
        values: dict[str, float | None] = {d.name: None for d in self.domains}
        with self._lock:
            for i, m in enumerate(self.meters):
                if i in self._failed:
                    continue
                try:
                    values.update(m.by_domain())
                except Exception as exc:  # noqa: BLE001 - any failure: this domain is null from now on
                    self._fail(i, exc)
        if self.scope is None:
            return Reading(None, values)
        parts = [values[n] for n in self.in_scope]
        return Reading(None if None in parts else sum(parts), values)

    def joules(self) -> float | None:
        return self.readings().total

    def stop(self) -> None:
        for m in self.meters:
            try:
                m.stop()
            except Exception:  # noqa: BLE001 - stopping never hides the trial's own outcome
                pass

    def describe(self) -> dict[str, dict]:
        """Each domain's kind, method, resolution and reason (``trainmark_energy_domains``)."""
        return {d.name: {**d.describe(), "in_total": d.name in self.in_scope} for d in self.domains}


class TdpEstimateMeter(MeterBase):
    """A labelled estimate, ``watts`` × elapsed time; only when the user asks for it."""

    method = ESTIMATED
    scope = "estimate"

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


def _accelerator_meter(kind: str, indices: list[int | str], pynvml, amdsmi, vendor_fakes: dict):
    """The meter of accelerator type ``kind``: NVML, else amdsmi, for 'cuda' (CUDA and ROCm); the vendor
    meters for the other types; MeterUnavailable naming every reason."""
    if kind != "cuda":
        from trainmark.harness.measure.vendor_meters import open_accelerator_meter
        return open_accelerator_meter(kind, indices, **vendor_fakes)
    try:
        return NvmlMeter(indices, pynvml=pynvml)
    except MeterUnavailable as nv_exc:
        try:
            ints = [i for i in indices if isinstance(i, int)]
            return AmdSmiMeter(ints if len(ints) == len(indices) else None, amdsmi=amdsmi)
        except MeterUnavailable as amd_exc:
            raise MeterUnavailable(f"{nv_exc}; {amd_exc}") from None


def open_meter(device: str, estimate_watts: float | None = None, rapl_root: str | Path = "/sys/class/powercap",
               pynvml=None, device_ids: list[int | str] | None = None, amdsmi=None,
               ipmitool: str | None | bool = None, **vendor_fakes):
    """Every energy domain this node offers for ``device`` ('cpu', 'cuda:i', 'xpu:i', ...), as one meter.

    The accelerators through their vendor's interface (NVML, else amdsmi, for a CUDA/ROCm device;
    harness/measure/vendor_meters.py for Intel GPUs, Gaudi and Ascend; ``device_ids``: the local
    devices to meter, UUIDs or indices), CPU packages and DRAM (RAPL), the node
    (IPMI DCMI; ``ipmitool=False`` skips it). The total is null with a reason when the device's
    own domain cannot be measured; an estimate is used only when ``estimate_watts`` is given
    and nothing can be measured.
    """
    meters, unavailable = [], []
    kind, _, index = device.partition(":")
    required: tuple[str, ...] = (CPU_PACKAGE,) if kind == "cpu" else (GPU,)
    if kind != "cpu":
        indices = device_ids if device_ids is not None else [int(index or 0)]
        try:
            meters.append(_accelerator_meter(kind, indices, pynvml, amdsmi, vendor_fakes))
        except MeterUnavailable as exc:
            unavailable.append(Domain("gpu", GPU, UNAVAILABLE, "", str(exc)))
    try:
        meters.append(RaplMeter(rapl_root))
    except MeterUnavailable as exc:
        unavailable.append(Domain("cpu-package", CPU_PACKAGE, UNAVAILABLE, "", str(exc)))
    if ipmitool is not False:
        try:
            meters.append(IpmiDcmiMeter(ipmitool or None))
        except MeterUnavailable as exc:
            unavailable.append(Domain("node", NODE, UNAVAILABLE, "", str(exc)))
    meter = CompositeMeter(meters, unavailable, required)
    if meter.scope is not None:
        return meter
    if estimate_watts:
        estimate = TdpEstimateMeter(estimate_watts)
        estimate.reason += f"; no measurement: {meter.reason}"
        return estimate
    if not meters:
        return NullMeter(meter.reason or "nothing measured", unavailable)
    return meter  # domains measured, but not the device's own: total null with the reason
