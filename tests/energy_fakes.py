"""Fake energy hardware for tests: pynvml, amdsmi, a powercap tree and an ``ipmitool`` on PATH."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace


class FakeNVML:
    """Enough of pynvml for the meter and the telemetry sampler; every value settable."""

    NVML_DEVICE_ARCH_VOLTA = 2
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    class NVMLError(Exception):
        pass

    def __init__(self, archs=(7,)):
        self.archs = list(archs)
        self.energy_mj = [1_000_000] * len(archs)
        self.power_mw = [200_000] * len(archs)
        self.throttle = [0] * len(archs)
        self.temp_c = [60] * len(archs)
        self.fail_energy = False  # the counter raises from now on (a driver fault mid-run)

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetArchitecture(self, h):
        return self.archs[h]

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if self.archs[h] < self.NVML_DEVICE_ARCH_VOLTA or self.fail_energy:
            raise self.NVMLError("not supported" if not self.fail_energy else "GPU is lost")
        return self.energy_mj[h]

    def nvmlDeviceGetPowerUsage(self, h):
        return self.power_mw[h]

    def nvmlDeviceGetTemperature(self, h, sensor):
        return self.temp_c[h]

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 1980 if kind == self.NVML_CLOCK_SM else 3200

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self.throttle[h]

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=97, memory=40)

    def nvmlDeviceGetMemoryInfo(self, h):
        raise self.NVMLError("not supported on this fake")  # one metric a device refuses


class FakeAmdSmi:
    """amdsmi's Python bindings: processor handles and the energy accumulator."""

    class AmdSmiException(Exception):
        pass

    def __init__(self, gpus=2, resolution=15.3, old_key=False):
        self.acc = [10_000] * gpus
        self.resolution, self.old_key = resolution, old_key

    def amdsmi_init(self):
        pass

    def amdsmi_get_processor_handles(self):
        return list(range(len(self.acc)))

    def amdsmi_get_energy_count(self, h):
        key = "power" if self.old_key else "energy_accumulator"
        return {key: self.acc[h], "counter_resolution": self.resolution, "timestamp": 0}


def make_powercap(root: Path, packages=((1000, 2 ** 32 - 1),), dram: int | None = None) -> Path:
    """A fake /sys/class/powercap: package zones, a core sub-zone (inside the package) and DRAM."""
    for i, (uj, max_uj) in enumerate(packages):
        z = root / f"intel-rapl:{i}"
        z.mkdir(parents=True)
        (z / "name").write_text(f"package-{i}\n")
        (z / "energy_uj").write_text(f"{uj}\n")
        (z / "max_energy_range_uj").write_text(f"{max_uj}\n")
        core = z / f"intel-rapl:{i}:0"
        core.mkdir()
        (core / "name").write_text("core\n")
        (core / "energy_uj").write_text("5\n")
        (core / "max_energy_range_uj").write_text(f"{max_uj}\n")
        if dram is not None:
            d = z / f"intel-rapl:{i}:1"
            d.mkdir()
            (d / "name").write_text("dram\n")
            (d / "energy_uj").write_text(f"{dram}\n")
            (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return root


def add_uj(zone_dir: Path, delta: int, max_uj: int = 2 ** 32 - 1) -> None:
    """Advance a fake counter atomically (sysfs never shows a half-written value to another reader)."""
    value = int((zone_dir / "energy_uj").read_text()) + delta
    tmp = zone_dir / "energy_uj.tmp"
    tmp.write_text(f"{value % (max_uj + 1)}\n")
    os.replace(tmp, zone_dir / "energy_uj")


DCMI_OUTPUT = """
    Instantaneous power reading:                  {watts} Watts
    Minimum during sampling period:                90 Watts
    Maximum during sampling period:               450 Watts
    Average power reading over sample period:     300 Watts
    IPMI timestamp:                           Tue Dec  1 10:00:00 2026
    Sampling period:                          00000001 Seconds.
    Power reading state is:                   activated
"""


def fake_ipmitool(bin_dir: Path, watts_file: Path) -> Path:
    """An ``ipmitool`` script that prints a DCMI power reading of the watts in ``watts_file``;
    'fail' in the file makes it exit 1 like a BMC that does not answer."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    body = DCMI_OUTPUT.replace("{watts}", '$(cat "$W")')
    script = bin_dir / "ipmitool"
    script.write_text(f'#!/bin/sh\nW="{watts_file}"\n'
                      'if [ "$(cat "$W")" = fail ]; then echo "Unable to open SDR" >&2; exit 1; fi\n'
                      f'cat <<EOF\n{body}EOF\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def prepend_path(monkeypatch, bin_dir: Path) -> None:
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
