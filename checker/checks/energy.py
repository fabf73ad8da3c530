"""Energy by domain, checked from the MLLOG's meter readings (ENERGY-*), then the telemetry file.

The harness logs, at every window boundary, the total's cumulative joules
(``trainmark_energy_j``) and each domain's (``trainmark_energy_domains_j``), and once what
each domain is and whether the total includes it (``trainmark_energy_domains``). From those:
per-epoch energies (training windows plus evaluations) must add up to the run's total
within 0.5% (nothing hidden between windows); the domains of the total must add up to it
within 0.5%; a domain lost during the run is reported with the harness's reason.

Every other energy figure of a trial (a window's logged joules, ``trainmark_trial_result``, trial.json,
per domain and per epoch) is computed from those same readings, so it must equal them to the meter's
resolution (ENERGY-004), and a cumulative reading never goes back (ENERGY-005). Where telemetry.csv
records power, its integral over the run and over the timed windows must match the readings within the
bound docs/energy.md derives (ENERGY-006): a forger who scales every figure alike must also rewrite the
power series.
"""
from __future__ import annotations

import math
from typing import Any

from trainmark.checker.checks import evidence_energy, evidence_format, evidence_timeline
from trainmark.checker.checks import telemetry as telemetry_check
from trainmark.checker.read.evidence import TrialFolder
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.format import layout, mllog
from trainmark.format.mllog_read import Event
from trainmark.format.timeline_read import Replay

ENERGY_001 = rule(
    "ENERGY-001", WARNING, "the per-epoch energies (training windows plus evaluations) do not add up to the run's "
    "total within 0.5%",
    fix="log each window's energy from the same meter readings as run_start and run_stop; keep work between windows "
    "short",
    why="Per-epoch energies (training windows plus evaluations) come from the same cumulative readings as the run's "
    "total, so they add up to it within 0.5% unless energy was spent between windows. A warning: it cannot say what "
    "the unaccounted energy was.",
    bad="windows adding to 800 J of a 1,000 J run",
    good="windows adding to 997 J of 1,000 J", module=__name__)
ENERGY_002 = rule(
    "ENERGY-002", ERROR, "the energy domains of the total do not add up to it within 0.5%, or their readings are "
    "malformed",
    fix="log trainmark_energy_domains_j (joules per domain, or null) from the same read as trainmark_energy_j",
    why="The total's domains (CPU package, DRAM, accelerators) are read at the same instant, so they add up to it "
    "within 0.5%; a mismatch or a malformed reading means edited or broken readings. It cannot verify the meters "
    "themselves.",
    bad="domains 400 J + 300 J for a 1,000 J total",
    good="domains adding to the total", module=__name__)
ENERGY_003 = rule(
    "ENERGY-003", WARNING, "an energy domain stopped being measured during the run (its energy is null)",
    fix="see the harness's reason (trial.json energy_domains); fix the meter (driver, permissions, BMC) and rerun",
    why="A domain that stops being measured during the run leaves its energy unknown (null); a warning with the "
    "harness's reason. It proves the meter stopped, not what it would have read.",
    bad="the GPU domain null after epoch 3 (driver lost)",
    good="every domain measured to run_stop", module=__name__)
ENERGY_004 = rule(
    "ENERGY-004", ERROR, "a trial's energy figures disagree (the meter readings, a window's logged energy, "
    "trainmark_trial_result, trial.json) beyond the meter's resolution",
    fix="never edit an energy figure: every one is computed from the same cumulative meter readings",
    why="Every energy figure (windows, trial result, trial.json) is computed from the same cumulative readings, so "
    "they agree to the meter's resolution; a figure that differs was edited. It cannot tell whether the readings "
    "themselves are true (ENERGY-006 compares telemetry).",
    bad="trial.json train_energy_j 500, readings 812 J",
    good="every figure from the readings", module=__name__)
ENERGY_005 = rule(
    "ENERGY-005", ERROR, "a cumulative energy reading goes back in time (the total or a domain)",
    fix="log trainmark_energy_j and trainmark_energy_domains_j as the meter read them: they only grow",
    why="Cumulative meters only grow; a reading that goes back was edited or comes from another meter. It proves the "
    "decrease, not the true value.",
    bad="trainmark_energy_j 5000 then 4800",
    good="readings that never decrease", module=__name__)
ENERGY_006 = rule(
    "ENERGY-006", ERROR, "the power in telemetry.csv, integrated over the run or its timed windows, disagrees with the "
    "logged energy",
    fix="submit the telemetry.csv and the logs of the same trial, unedited (tolerance: docs/energy.md)",
    why="The power in telemetry.csv, integrated over the run and its timed windows, must match the logged energy "
    "within docs/energy.md's bound: a forger who scales every figure alike must also rewrite the power series. It "
    "cannot catch both rewritten consistently.",
    bad="logged 500 J where power integrates to 800 J",
    good="logged and integrated energy within the bound", module=__name__)

TOLERANCE = 0.005   # 0.5% of the run's total energy
ABS_TOLERANCE_J = 0.01  # counters' resolution (NVML: 1 mJ; RAPL: 1 uJ) on tiny totals
# ENERGY-004/005: figures from the same readings differ by float rounding only; 1 mJ is the coarsest
# counter's unit (NVML's), so any larger difference is an edit.
RESOLUTION_J = 0.001
# ENERGY-006: beyond the bound of the rows cut by a window boundary (Series.integral), 2% for the rounding
# of time_ms (1 ms in 1 s), of 6 significant digits, and the offset between a power read and its row's
# stamp; 1 J for tiny totals.
POWER_TOLERANCE, POWER_ABS_J = 0.02, 1.0
MIN_POWER_ROWS, MIN_POWER_JOULES = 30, 100.0  # below either, a power integral is not judged (ENERGY-006)
FORMAT_VERSION_KEY = getattr(mllog, "FORMAT_VERSION", "trainmark_format_version")


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def check_benchmark(folder_rel: str, events_by_trial: dict[int, list[Event]],
                    trials: dict[int, TrialFolder], findings: Findings, max_init_s: float | None = None,
                    derived_format: int = 1) -> dict[int, telemetry_check.Series]:
    """Every trial's energy domains and figures and, where the trial folder has one, its telemetry file
    (required from result format 2 on: ``derived_format``, the format the rules version implies, or a higher
    claim) and the power it records; returns each readable telemetry series by trial (the time checks read
    its interference evidence)."""
    series_by_trial: dict[int, telemetry_check.Series] = {}
    for k, events in sorted(events_by_trial.items()):
        rel = _join(folder_rel, layout.result_file(k))
        check_trial_energy(events, rel, findings)
        if k not in trials:
            check_figures(events, rel, None, "", findings)
            continue
        trial_rel = trials[k].rel
        trial = trials[k].trial_json.value  # trial.json as an object, or None (its own check says why)
        check_figures(events, rel, trial, trials[k].trial_json.rel, findings)
        evidence_format.check_format(trial, events, derived_format, trials[k].trial_json.rel, rel, findings)
        result_format = max(derived_format, _format_version(trial, events))
        required = result_format >= evidence_format.FORMAT_WITH_TELEMETRY
        period_s = evidence_format.period(trial, required, trials[k].trial_json.rel, findings)  # TELEMETRY-008
        series = telemetry_check.check_trial(events, trials[k].telemetry, findings, required=required,
                                             period_s=period_s)
        evidence_energy.check_trial(events, series, rel, _join(trial_rel, telemetry_check.FILE_NAME), findings)
        if series is not None:
            series_by_trial[k] = series
            exact = result_format >= evidence_format.FORMAT_WITH_EXACT_EPOCH_ROWS
            evidence_timeline.check_coverage(events, series, _join(trial_rel, telemetry_check.FILE_NAME), findings,
                                             max_init_s, exact_epoch_rows=exact)  # TELEMETRY-007
            evidence_timeline.check_period(series, events, period_s, _join(trial_rel, telemetry_check.FILE_NAME),
                                           findings)  # TELEMETRY-006: the claimed period is the rows'
            check_power(events, series, _join(trial_rel, telemetry_check.FILE_NAME), findings)
    return series_by_trial


def _format_version(trial: dict | None, events: list[Event]) -> int:
    """The result format the trial claims, in trial.json or in its MLLOG (the higher: neither can lower it below
    the format its rules version implies, evidence_format.expected_format)."""
    claims = [(trial or {}).get("format_version"), mllog.first_value(events, FORMAT_VERSION_KEY)]
    return max((v for v in claims if isinstance(v, int) and not isinstance(v, bool)), default=1)


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
    replay = Replay(e for group in by_key.values() for e in group)  # split() keeps each key's log order
    for e in [*replay.split("epoch")[0], *replay.split("epoch")[1], *replay.split("eval")[0],
              *replay.split("eval")[1], *replay.split("run")[1]]:
        readings = _domain_readings(e, rel, findings) or {}
        for name, v in readings.items():
            if v is None and first.get(name) is not None and (name not in lost_at or e.line < lost_at[name].line):
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


# --- every energy figure of a trial against the meter readings (ENERGY-004, ENERGY-005) --------------

def check_figures(events: list[Event], rel: str, trial: dict | None, trial_rel: str, findings: Findings) -> None:
    """Every energy figure of the trial (a window's logged joules, trainmark_trial_result, trial.json) is
    computed by the harness from the same cumulative readings, so each must equal the readings' difference
    to the meter's resolution; and cumulative readings never go back (ENERGY-005)."""
    readings = Readings(events)
    _check_monotonic(events, rel, findings)
    if readings.run is None:
        return
    wrong = list(readings.window_disagreements())
    summary = next((e for e in events if e.key == mllog.TRIAL_RESULT), None)
    if summary is not None and isinstance(summary.value, dict):
        wrong += [(summary.line, f"trainmark_trial_result {what}", said, want)
                  for what, said, want in readings.summary_disagreements(summary.value)]
    for line, what, said, want in wrong:
        findings.add(ENERGY_004, rel, f"{what} is {said!r}, the meter readings give {want!r}", line=line,
                     expected=want, seen=said)
    if trial is not None:
        for what, said, want in readings.summary_disagreements(trial, history=True):
            findings.add(ENERGY_004, trial_rel, f"trial.json {what} is {said!r}, the meter readings of {rel} "
                         f"give {want!r}", expected=want, seen=said)


def _agree(said: Any, want: float | None) -> bool:
    """Both null, or both numbers within the meter's resolution (plus float rounding of a sum)."""
    if want is None or said is None:
        return want is None and said is None
    said = _num(said)
    return said is not None and abs(said - want) <= RESOLUTION_J + 1e-9 * abs(want)


class Readings:
    """The cumulative readings of one trial's window boundaries: the total and each domain's."""

    def __init__(self, events: list[Event]):
        replay = Replay(events)
        self.windows: dict[tuple[str, int], list[Event | None]] = {
            (name, epoch): pair for name in ("epoch", "eval") for epoch, pair in replay.last_per_epoch(name).items()}
        run = list(replay.last("run"))
        self.run = run if run[0] is not None and run[1] is not None else None

    @staticmethod
    def delta(start: Event | None, stop: Event | None, domain: str | None = None) -> float | None:
        if start is None or stop is None:
            return None
        if domain is None:
            return _delta(start.metadata.get(mllog.ENERGY_J), stop.metadata.get(mllog.ENERGY_J))
        a, b = start.metadata.get(mllog.DOMAINS_J), stop.metadata.get(mllog.DOMAINS_J)
        return _delta(a.get(domain), b.get(domain)) if isinstance(a, dict) and isinstance(b, dict) else None

    def evals(self) -> list[tuple[Event | None, Event | None]]:
        return [tuple(v) for (name, _), v in sorted(self.windows.items()) if name == "eval"]

    def energy(self, domain: str | None = None) -> tuple[float | None, float | None]:
        """(train, total) joules: the run's, minus its evaluations' for train (None where not measured)."""
        total = self.delta(*self.run, domain)
        parts = [self.delta(a, b, domain) for a, b in self.evals()]
        return (None if total is None or None in parts else total - sum(parts)), total

    def window_disagreements(self):
        """(line, what, logged, from the readings) for every window's own logged joules."""
        for (name, epoch), (start, stop) in sorted(self.windows.items()):
            field = mllog.TRAIN_ENERGY_J if name == "epoch" else mllog.EVAL_ENERGY_J
            if stop is not None and field in stop.metadata and not _agree(
                    stop.metadata[field], want := self.delta(start, stop)):
                yield stop.line, f"{stop.key} {field} of epoch {epoch}", stop.metadata[field], want

    def summary_disagreements(self, summary: dict, history: bool = False):
        """(what, said, from the readings) for a summary's train/total joules, per domain and (trial.json)
        per epoch of its history."""
        train, total = self.energy()
        for field, want in (("train_energy_j", train), ("total_energy_j", total)):
            if field in summary and not _agree(summary[field], want):
                yield field, summary[field], want
        domains = summary.get("energy_domains")
        for name, d in (domains.items() if isinstance(domains, dict) else ()):
            want_train, want_total = self.energy(name)
            for field, want in (("train_j", want_train), ("total_j", want_total)):
                if isinstance(d, dict) and field in d and not _agree(d[field], want):
                    yield f"energy_domains.{name}.{field}", d[field], want
        for item in (summary.get("history") if history and isinstance(summary.get("history"), list) else ()):
            yield from self._history_disagreements(item)

    def _history_disagreements(self, item: Any):
        if not isinstance(item, dict) or not isinstance(item.get("epoch"), int):
            return
        for field, name in (("train_j", "epoch"), ("eval_j", "eval")):
            window = self.windows.get((name, item["epoch"]))
            if field in item and window is not None and not _agree(item[field], want := self.delta(*window)):
                yield f"history epoch {item['epoch']} {field}", item[field], want


def _check_monotonic(events: list[Event], rel: str, findings: Findings) -> None:
    """Cumulative readings only grow: the first step back of the total and of each domain is an error."""
    last: dict[str, tuple[float, Event]] = {}
    reported: set[str] = set()
    for e in events:
        if mllog.ENERGY_J not in e.metadata:
            continue
        domains = e.metadata.get(mllog.DOMAINS_J)
        values = {"the total": _num(e.metadata.get(mllog.ENERGY_J)),
                  **({f"domain {k}": _num(v) for k, v in domains.items()} if isinstance(domains, dict) else {})}
        for name, v in values.items():
            if v is None:
                continue
            before = last.get(name)
            if before is not None and v < before[0] - RESOLUTION_J and name not in reported:
                reported.add(name)
                findings.add(ENERGY_005, rel, f"the cumulative energy reading of {name} goes back from "
                             f"{before[0]:.6g} J ({before[1].key}, line {before[1].line}) to {v:.6g} J ({e.key})",
                             line=e.line, expected=f">= {before[0]:.6g} J", seen=f"{v:.6g} J")
            last[name] = (v, e)


# --- the power telemetry recorded against the logged energy (ENERGY-006) --------------------------------

def check_power(events: list[Event], series: telemetry_check.Series, rel: str, findings: Findings) -> None:
    """Each domain's ``<domain>.power_w``, integrated over the run and over its timed windows (the run
    minus its evaluations), against the domain's readings."""
    readings = Readings(events)
    if readings.run is None or not series.power:
        return
    run = (readings.run[0].time_ms, readings.run[1].time_ms)
    if sum(run[0] <= t <= run[1] for t in series.times) < MIN_POWER_ROWS:
        return  # a run of a few rows is mostly edges: no integral to judge
    evals = sorted((a.time_ms, b.time_ms) for a, b in readings.evals() if a is not None and b is not None)
    timed, at = [], run[0]
    for a, b in evals:
        if a > at:
            timed.append((at, min(a, run[1])))
        at = max(at, b)
    if at < run[1]:
        timed.append((at, run[1]))
    for domain, values in sorted(series.power.items()):
        train, total = readings.energy(domain)
        for what, logged, intervals in (("the run", total, [run]), ("the timed windows", train, timed)):
            # a few joules lie within the meter's and the sampler's granularity at the run's edges (a test run on
            # a fake meter adding 1 J a step missed 4.6 of 16.2 J): judged from MIN_POWER_JOULES on
            got = series.integral(values, intervals) if logged is not None and abs(logged) >= MIN_POWER_JOULES \
                else None
            if got is None:
                continue
            joules, bound = got
            allowed = bound + POWER_TOLERANCE * max(abs(joules), abs(logged)) + POWER_ABS_J
            if abs(joules - logged) > allowed:
                findings.add(ENERGY_006, rel, f"{domain}.power_w integrates to {joules:.6g} J over {what}, the "
                             f"meter readings give {logged:.6g} J", expected=f"{logged:.6g} J \u00b1 {allowed:.3g} J",
                             seen=f"{joules:.6g} J")
                break
