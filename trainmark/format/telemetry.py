"""Names the telemetry file ``trial_<k>/telemetry.csv`` shares between its writer and its checks.

Written by trainmark.harness.measure.telemetry, checked by trainmark.checker.checks.telemetry (format and
why: docs/energy.md): a header ``time_ms,<device>.<metric>,...`` then one row per sample.
"""
from __future__ import annotations

import re

from trainmark.format.layout import TELEMETRY_FILE

FORMAT = "trainmark-telemetry/2"     # 2: /proc columns (run.cpu_pct, ..., cpuN.freq_mhz) on every Linux machine
FORMATS = ("trainmark-telemetry/1", FORMAT)  # both are read: the header names the columns either way
FILE_NAME = TELEMETRY_FILE
# The periods the harness samples at (``--telemetry-hz`` 1 to 100, docs/energy.md): the checker counts rows at
# trial.json's period only within these, and at the slowest (the fewest rows) otherwise (TELEMETRY-008).
MIN_PERIOD_S, MAX_PERIOD_S = 0.01, 1.0
GAP_S = 2.0             # a longer interval between rows is a gap (recorded; the checker reports it)
COLUMN = re.compile(r"[A-Za-z0-9_.+-]{1,80}")
PER_CPU_COLUMN = re.compile(r"cpu[0-9]+\.")  # one column per CPU: in the file, not in per-epoch summaries

# The columns the checker reads as evidence (docs/energy.md): the run's CPU use and power per domain.
RUN_CPU = "run.cpu_pct"
OTHER_CPU = "other.cpu_pct"
STEAL_CPU = "cpu.steal_pct"
CPU_FREQ = "cpu.freq_mhz"       # the mean clock of the CPUs (interference: a clock that dropped slows every epoch)
POWER_SUFFIX = ".power_w"

# NVML clocks-event ("throttle") reasons that slow the GPU down; idle, application clocks,
# sync boost and display clock are not throttling (nvml.h, nvmlClocksEventReason*).
NVML_THROTTLE = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal_slowdown",
                 0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown"}
THROTTLE_MASK = sum(NVML_THROTTLE)


def throttle_names(bits: int) -> list[str]:
    return [name for bit, name in NVML_THROTTLE.items() if bits & bit]
