"""Energy by domain, checked from the MLLOG's meter readings (ENERGY-*), then the telemetry file.

The harness logs, at every window boundary, the total's cumulative joules
(``trainmark_energy_j``) and each domain's (``trainmark_energy_domains_j``), and once what
each domain is and whether the total includes it (``trainmark_energy_domains``). From those:
per-epoch energies (training windows plus evaluations) must add up to the run's total
within 0.5% (nothing hidden between windows); the domains of the total must add up to it
within 0.5%; a domain lost during the run is reported with the harness's reason.
"""
from __future__ import annotations

import math
from typing import Any

from trainmark.checker.checks import telemetry as telemetry_check
from trainmark.checker.read.safefs import SafeTree
from trainmark.checker.verdict.codes import ENERGY_001, ENERGY_002, ENERGY_003
from trainmark.checker.verdict.findings import Findings
from trainmark.format import layout, mllog
from trainmark.format.mllog_read import Event

TOLERANCE = 0.005   # 0.5% of the run's total energy
ABS_TOLERANCE_J = 0.01  # counters' resolution (NVML: 1 mJ; RAPL: 1 uJ) on tiny totals


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def check_benchmark(folder_rel: str, tree: SafeTree, events_by_trial: dict[int, list[Event]],
                    trial_dirs: dict[int, str], findings: Findings) -> None:
    """Every trial's energy domains and, where the trial folder has one, its telemetry file."""
    for k, events in sorted(events_by_trial.items()):
        rel = _join(folder_rel, layout.result_file(k))
        check_trial_energy(events, rel, findings)
        if k in trial_dirs:
            telemetry_check.check_trial(events, tree, _join(folder_rel, trial_dirs[k]), findings)


def check_trial_energy(events: list[Event], rel: str, findings: Findings) -> None:
    by_key: dict[str, list[Event]] = {}
    for e in events:
        by_key.setdefault(e.key, []).append(e)
    run_start, run_stop = by_key.get(mllog.RUN_START, []), by_key.get(mllog.RUN_STOP, [])
    if len(run_start) != 1 or len(run_stop) != 1:
        return  # the time checks already say so
    _check_epochs_add_up(by_key, run_start[0], run_stop[0], rel, findings)
    _check_domains(by_key, run_start[0], run_stop[0], rel, findings)


def _check_epochs_add_up(by_key: dict[str, list[Event]], start: Event, stop: Event, rel: str,
                         findings: Findings) -> None:
    total = _delta(start.metadata.get(mllog.ENERGY_J), stop.metadata.get(mllog.ENERGY_J))
    if total is None:
        return
    parts = [(e, e.metadata.get(mllog.TRAIN_ENERGY_J)) for e in by_key.get(mllog.EPOCH_STOP, [])]
    parts += [(e, e.metadata.get(mllog.EVAL_ENERGY_J)) for e in by_key.get(mllog.EVAL_STOP, [])]
    if not parts or any(_num(v) is None for _, v in parts):
        return  # an unmeasured window: energy is null, as the summary says
    summed = sum(float(v) for _, v in parts)
    if abs(summed - total) > max(TOLERANCE * abs(total), ABS_TOLERANCE_J):
        findings.add(ENERGY_001, rel, f"the epochs' training energies plus the evaluations' add up to "
                     f"{summed:.6g} J, the run's meter readings give {total:.6g} J "
                     f"({(summed - total) / total * 100 if total else math.inf:+.2f}%)", line=stop.line,
                     expected=f"{total:.6g} J \u00b1 0.5%", seen=f"{summed:.6g} J")


def _delta(a: Any, b: Any) -> float | None:
    a, b = _num(a), _num(b)
    return None if a is None or b is None else b - a


def _domain_readings(e: Event, rel: str, findings: Findings) -> dict[str, float | None] | None:
    value = e.metadata.get(mllog.DOMAINS_J)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and (v is None or _num(v) is not None)
                                              for k, v in value.items()):
        findings.add(ENERGY_002, rel, f"{e.key}'s trainmark_energy_domains_j is not an object of numbers "
                     "or nulls", line=e.line, expected='{"gpu0": 123.4, ...}', seen=value)
        return None
    return {k: _num(v) for k, v in value.items()}


def _check_domains(by_key: dict[str, list[Event]], start: Event, stop: Event, rel: str,
                   findings: Findings) -> None:
    described = (by_key.get(mllog.ENERGY_DOMAINS) or [None])[0]
    first = _domain_readings(start, rel, findings)
    last = _domain_readings(stop, rel, findings)
    if first is None or last is None:
        return
    harness_says = _harness_reasons(by_key)
    # a domain measured at run_start and null at a later boundary was lost during the run
    lost_at: dict[str, Event] = {}
    for key in (mllog.EPOCH_START, mllog.EPOCH_STOP, mllog.EVAL_START, mllog.EVAL_STOP, mllog.RUN_STOP):
        for e in by_key.get(key, []):
            readings = _domain_readings(e, rel, findings) or {}
            for name, v in readings.items():
                if v is None and first.get(name) is not None and (
                        name not in lost_at or e.line < lost_at[name].line):
                    lost_at[name] = e
    for name, e in sorted(lost_at.items()):
        why = harness_says.get(name)
        findings.add(ENERGY_003, rel, f"energy domain {name} stopped being measured at {e.key} (line {e.line}); "
                     f"its energy is null" + (f": {why}" if why else ""), line=e.line,
                     expected=f"{name} measured for the whole run", seen="null")
    if described is None or not isinstance(described.value, dict):
        return
    in_total = [n for n, d in described.value.items() if isinstance(d, dict) and d.get("in_total") is True]
    total = _delta(start.metadata.get(mllog.ENERGY_J), stop.metadata.get(mllog.ENERGY_J))
    if not in_total or total is None:
        return
    parts = [_delta(first.get(n), last.get(n)) for n in in_total]
    if None in parts:
        findings.add(ENERGY_002, rel, f"the total energy is measured but domain(s) of its scope "
                     f"({', '.join(in_total)}) are not", line=stop.line, expected="every domain of the total measured",
                     seen={n: last.get(n) for n in in_total})
        return
    summed = sum(parts)
    if abs(summed - total) > max(TOLERANCE * abs(total), ABS_TOLERANCE_J):
        findings.add(ENERGY_002, rel, f"the domains of the total ({'+'.join(in_total)}) add up to {summed:.6g} J "
                     f"over the run, the total to {total:.6g} J", line=stop.line,
                     expected=f"{total:.6g} J \u00b1 0.5%", seen=f"{summed:.6g} J")


def _harness_reasons(by_key: dict[str, list[Event]]) -> dict[str, str]:
    """Each domain's reason from trainmark_trial_result, quoted in findings (never trusted as figures)."""
    result = (by_key.get(mllog.TRIAL_RESULT) or [None])[0]
    domains = result.value.get("energy_domains") if result is not None and isinstance(result.value, dict) else None
    if not isinstance(domains, dict):
        return {}
    return {n: d["reason"] for n, d in domains.items() if isinstance(d, dict) and isinstance(d.get("reason"), str)}
