"""Derive, don't ask: the work and the peak WORK-001/002 judge a trial by, from sources the submitter does not
write (issue 38).

- Dataset sizes (``train_samples``, ``eval_samples``) and, in the closed division, the reference model's FLOPs
  per sample come from ``rules/<version>/reference-work.json`` (``trainmark rules flops``); the FLOPs per step
  are those per sample times the logged global batch (itself checked against the hyperparameter rules).
- The peak comes from ``rules/peaks.json`` (the harness's sourced table, ``trainmark rules peaks``) for the
  accelerator the system description names, times the accelerators it declares; for a CPU system, the most
  its vendor's instruction sets reach per cycle times its cores and clock. trial.json's ``peak_tflops`` is a copy.

A logged or submitted copy that disagrees with a derived figure is WORK-006. A peak the table lacks is
WORK-007: WORK-002 was not judged (never a silent pass). A system description that names an accelerator for
a run whose logs show a CPU run (no accelerator energy domain, trial.json's device) is WORK-009. trial.json without
the ``peak_tflops`` the harness always writes (or with null for a CPU on Linux, where the harness derives it from
/proc/cpuinfo) is WORK-010: a deleted claim never loosens WORK-002 silently.

What this cannot prove: the system description itself is the submitter's; a run on hardware the reviewer
cannot see, with every time forged consistently below the described system's peak, is not detectable here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.rules import peaks as peak_table
from trainmark.rules.peaks import Peak

COPY_TOLERANCE = 0.02          # FLOPs per step: the counter is exact, batch-size rounding of sequences is not
NO_ACCELERATOR = ("", "none", "n/a", "na", "0", "-")
PEAK_KEY = "peak_tflops"       # trial.json's copy of the peak (harness/run.py writes it in every trial)
ACCELERATOR_KIND = "gpu"       # the energy domain kind of every accelerator (harness/measure/energy.py)

WORK_006 = rule(
    "WORK-006", ERROR, "a logged or submitted figure the checker derives disagrees with the derived value "
    "(dataset sizes, the closed reference's FLOPs per step, the peak)",
    why="The sizes, the closed-division FLOPs and the peak decide whether a time is possible (WORK-001/002); "
    "each comes from the rules (reference-work.json, peaks.json) and the system description, so a copy in the "
    "MLLOG or trial.json that differs was edited. It cannot tell a system description that names the wrong "
    "hardware.",
    fix="submit the logs and trial.json the harness wrote; they log the rules' sizes and the counted FLOPs",
    bad="eval_samples raised from 10000 to 60000, or trainmark_flops_per_step set to 1000, or peak_tflops 10 "
    "on a 2-core CPU",
    good="the figures the rules and the sourced peak table give",
    module=__name__)
WORK_007 = rule(
    "WORK-007", WARNING, "WORK-002 could not be judged: no sourced peak for the system the description names",
    why="The peak comes from the sourced table (rules/peaks.json) for the accelerator the system description "
    "names; a device the table lacks cannot be judged, and the check says so instead of passing silently.",
    fix="name the accelerator as its vendor does (e.g. 'NVIDIA H100 80GB HBM3'), or ask for its datasheet figures "
    "to be added to harness/measure/peaks.py (then `trainmark rules peaks`)",
    bad='"accelerator_model_name": "FastChip 9000"',
    good='"accelerator_model_name": "NVIDIA H100 80GB HBM3"',
    module=__name__)
WORK_010 = rule(
    "WORK-010", ERROR, "trial.json lacks the peak the harness writes (peak_tflops deleted, or null for a CPU on "
    "Linux)",
    why="The harness writes peak_tflops in every trial.json: the machine's peak, derived on Linux from the CPU's "
    "instruction sets in /proc/cpuinfo, or null where it knows none. Without it WORK-002 can only use the loosest "
    "sourced bound for the described CPU (the best instruction set at the fastest boost clock, several times a real "
    "machine's), so a time forged 3x faster would pass; the claim removed is itself the finding. It cannot tell a "
    "peak lowered within the bound (that only tightens WORK-002).",
    fix="submit the trial.json the harness wrote, unedited",
    bad="peak_tflops removed from trial.json, every time scaled by 0.3",
    good='"peak_tflops": 0.156506 (derived from /proc/cpuinfo)',
    module=__name__)
WORK_009 = rule(
    "WORK-009", ERROR, "the system description names an accelerator, but the trial ran on the CPU",
    why="An accelerator run always logs an accelerator energy domain (measured or with the reason it is not) and "
    "the device in trial.json; a description claiming an H100 beside a CPU run's logs would judge forged times "
    "against the H100's peak. The logs can be rewritten too: then only the telemetry's columns are left.",
    fix="describe the system the trials ran on (`trainmark run` writes it)",
    bad='accelerators_per_node "1", accelerator_model_name "NVIDIA H100", trials whose energy domains are '
    "cpu-package and node",
    good="accelerators_per_node \"0\" for a CPU run",
    module=__name__)


@dataclass(frozen=True)
class Derived:
    """What WORK-001/002 judge one trial by (None: not derivable)."""
    train_samples: float | None
    eval_samples: float | None
    flops_per_step: float | None
    peak: Peak | None


def derive(record: TrialRecord, events: list[Event], summary: dict | None, work: dict | None, division: str,
           system: dict | None, findings: Findings) -> Derived:
    """The derived figures of one trial, reporting every logged or submitted copy that disagrees (WORK-006),
    a peak that cannot be derived (WORK-007) and an accelerator claim over a CPU run (WORK-009)."""
    work = work or {}
    sizes = {key: _copy(record, key, work.get(key), findings) for key in (mllog.TRAIN_SAMPLES, mllog.EVAL_SAMPLES)}
    flops = None
    batch = _number(record.value("global_batch_size"))
    if division == "closed" and work.get("flops_per_sample") and batch:
        flops = float(work["flops_per_sample"]) * batch
        logged = _number(record.value(mllog.FLOPS_PER_STEP))
        if logged is not None and abs(logged - flops) > COPY_TOLERANCE * flops:
            _disagrees(record, mllog.FLOPS_PER_STEP, logged, flops, "the reference's FLOPs per sample in "
                       f"reference-work.json x global_batch_size {batch:g}", findings)
    elif division != "closed":
        flops = _number(record.value(mllog.FLOPS_PER_STEP))   # open division: the submitter's model, its count
    peak = _peak(record, events, summary, system, findings) if system is not None else None
    return Derived(sizes[mllog.TRAIN_SAMPLES], sizes[mllog.EVAL_SAMPLES], flops, peak)


def _number(x: Any) -> float | None:
    return float(x) if type(x) in (int, float) and x > 0 else None


def _copy(record: TrialRecord, key: str, derived: Any, findings: Findings) -> float | None:
    logged = _number(record.value(key))
    if derived is None:
        return logged  # no derived size for this rules folder: the logged one (as before issue 38)
    if logged is not None and logged != derived:
        _disagrees(record, key, logged, derived, "the rules' dataset size (reference-work.json)", findings)
    return float(derived)


def _disagrees(record: TrialRecord, key: str, logged: float, derived: float, source: str, findings: Findings
               ) -> None:
    line = next((e.line for e in record.events if e.key == key), None) if hasattr(record, "events") else None
    findings.add(WORK_006, record.rel, f"trial {record.trial}: {key} is logged as {logged:.6g}; {source} gives "
                 f"{derived:.6g}", line=line, expected=f"{derived:.6g}", seen=f"{logged:.6g}")


def _peak(record: TrialRecord, events: list[Event], summary: dict | None, system: dict,
          findings: Findings) -> Peak | None:
    table = peak_table.load()
    precision = record.value(mllog.PRECISION) if isinstance(record.value(mllog.PRECISION), str) else "fp32"
    accelerator = str(system.get("accelerator_model_name", "")).strip()
    count = _int(system.get("accelerators_per_node")) * max(_int(system.get("number_of_nodes")), 1)
    if count > 0 and accelerator.lower() not in NO_ACCELERATOR:
        _accelerator_claim(record, events, summary, accelerator, findings)
        peak = table.device_peak(accelerator, precision, count)
        what = f"accelerator {accelerator!r}"
    else:
        cores = _int(system.get("host_processor_core_count")) * max(_int(system.get("host_processors_per_node")), 1) \
            * max(_int(system.get("number_of_nodes")), 1)
        peak = table.cpu_peak(cores, _ghz(system.get("host_processor_frequency")), precision,
                              str(system.get("host_processor_model_name", "")))
        what = "a CPU system without cores and clock in its description"
    if summary is not None and _number(summary.get(PEAK_KEY)) is None:
        _missing_peak(record, summary, system, what, findings)  # WORK-010, whether or not the table knows the system
    if peak is None:
        findings.add(WORK_007, record.rel, f"trial {record.trial}: no sourced peak for {what} ({precision}): "
                     "WORK-002 (a time above the peak) was not judged", expected="a device of rules/peaks.json",
                     seen=accelerator or "none")
        return None
    claimed = _number((summary or {}).get(PEAK_KEY))
    if claimed is not None and claimed > peak.tflops * (1 + 1e-6):
        findings.add(WORK_006, record.rel, f"trial {record.trial}: trial.json's peak_tflops {claimed:.6g} is above "
                     f"the sourced peak of the described system, {peak.tflops:.6g} TFLOPS ({peak.source})",
                     expected=f"<= {peak.tflops:.6g}", seen=f"{claimed:.6g}")
    elif claimed is not None:  # within the bound, the harness's own peak (the machine's ISA) can only tighten it
        return Peak(claimed, f"peak_tflops in trial.json, within the sourced bound of {peak.tflops:.3g} TFLOPS")
    return peak


def _missing_peak(record: TrialRecord, summary: dict, system: dict, what: str, findings: Findings) -> None:
    """WORK-010: trial.json's peak_tflops deleted, or null for a CPU on Linux (the harness derives that peak from
    /proc/cpuinfo), would leave WORK-002 only the loosest bound; the harness always writes the key."""
    if PEAK_KEY in summary and (what.startswith("accelerator") or
                                not str(system.get("operating_system", "")).strip().lower().startswith("linux")):
        return  # null where the harness knows no peak: the sourced bound judges (an accelerator's) or the loosest
    said = "has no peak_tflops" if PEAK_KEY not in summary else \
        f"has peak_tflops {summary[PEAK_KEY]!r} for a CPU on Linux"
    findings.add(WORK_010, record.rel, f"trial {record.trial}: trial.json {said}; the harness writes it in every "
                 "trial (on Linux a CPU's peak is derived from /proc/cpuinfo), so it was removed: WORK-002 is judged "
                 "against the loosest sourced bound only", expected="the peak_tflops the harness wrote",
                 seen="missing" if PEAK_KEY not in summary else summary[PEAK_KEY])


def _accelerator_claim(record: TrialRecord, events: list[Event], summary: dict | None, accelerator: str,
                       findings: Findings) -> None:
    described = next((e for e in events if e.key == mllog.ENERGY_DOMAINS), None)
    kinds = {d.get("kind") for d in described.value.values() if isinstance(d, dict)} \
        if described is not None and isinstance(described.value, dict) else None
    device = (summary or {}).get("device")
    evidence = []
    if kinds is not None and ACCELERATOR_KIND not in kinds:
        evidence.append(f"its energy domains ({', '.join(sorted(map(str, kinds)))}, line {described.line}) hold no "
                        "accelerator")
    if isinstance(device, str) and device.split(":")[0] == "cpu":
        evidence.append(f"the device in trial.json is {device!r}")
    if evidence:
        findings.add(WORK_009, record.rel, f"trial {record.trial}: the system description names {accelerator!r}, "
                     f"but {' and '.join(evidence)}: a CPU run", line=described.line if described else None,
                     expected=f"a run on {accelerator}", seen="a CPU run")


def _int(x: Any) -> int:
    try:
        return int(str(x).strip())
    except ValueError:
        return 0


def _ghz(x: Any) -> float:
    """'2445 MHz', '2.4 GHz', '2445' (MHz) as GHz; 0 when unreadable."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ghz|mhz)?\s*", str(x)[:40].lower())
    if m is None:
        return 0.0
    value = float(m[1])
    return value if m[2] == "ghz" or (m[2] is None and value < 100) else value / 1000
