"""The labels a result carries: trial statuses, energy methods, precisions (docs/result-format.md).

Enums so that a typo is an AttributeError, not a result the checker rejects; each value is the
exact string written to ``trial.json`` and the MLLOG. The MLPerf compliance config
(trainmark.checker.mlperf.compliance_rules) takes its allowed lists from here.
"""
from __future__ import annotations

from enum import Enum


class TrialStatus(str, Enum):
    CONVERGED = "converged"          # an evaluation reached the target
    NOT_CONVERGED = "not_converged"  # the epoch cap came first
    DIVERGED = "diverged"            # a non-finite training loss or metric
    ABORTED = "aborted"              # Ctrl-C: what was recorded is kept
    CRASHED = "crashed"              # an exception, recorded with its traceback


class EnergyMethod(str, Enum):
    MEASURED_COUNTER = "measured-counter"  # a cumulative energy counter (NVML, RAPL)
    MEASURED_POWER = "measured-power"      # power sampled and integrated
    ESTIMATED = "estimated"                # --energy-estimate-watts x time, never measured
    UNAVAILABLE = "unavailable"            # nothing measured it: the figure is null with a reason


class RunStop(str, Enum):
    """MLPerf's ``run_stop`` status (mlperf_logging.mllog.constants.SUCCESS / ABORTED)."""
    SUCCESS = "success"
    ABORTED = "aborted"


# A requested precision (rule files' ``precisions``, --precision) and the labels it may be logged as.
PRECISIONS: dict[str, tuple[str, ...]] = {"fp32": ("fp32",), "amp": ("amp-bf16", "amp-fp16")}

TRIAL_STATUSES = [s.value for s in TrialStatus]
ENERGY_METHODS = [m.value for m in EnergyMethod]
UNFINISHED = (TrialStatus.CRASHED.value, TrialStatus.ABORTED.value)   # never an allowed miss
MISSED = (TrialStatus.NOT_CONVERGED.value, TrialStatus.DIVERGED.value)


def run_stop_status(trial_status: str) -> str:
    """``success`` exactly for a converged trial (what TARGET-001 checks)."""
    return (RunStop.SUCCESS if trial_status == TrialStatus.CONVERGED else RunStop.ABORTED).value
