"""The telemetry time series of a trial (``trial_<k>/telemetry.csv``): TELEMETRY-* findings.

The rows are on the MLLOG's clock, so they line up with the run and eval windows of
``result_<k>.txt``. Throttling (NVML's power-cap, thermal and hardware slowdown reasons)
during a timed window (the run minus its evaluations) is a warning; so is any interval
without a sample longer than 2 s inside the run. A file that is not the harness's CSV is an
error (it is the evidence for both). The file is read with a cap and parsed as plain CSV
of numbers: nothing in it is executed or chooses what is read.
"""
from __future__ import annotations

import csv
import math
from typing import Iterator

from trainmark.checker.read.evidence import TelemetryFile
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.format.telemetry import (
    COLUMN,
    CPU_FREQ,
    FILE_NAME,
    GAP_S,
    OTHER_CPU,
    POWER_SUFFIX,
    RUN_CPU,
    STEAL_CPU,
    THROTTLE_MASK,
    throttle_names,
)
from trainmark.format.timeline_read import Replay

TELEMETRY_001 = rule(
    "TELEMETRY-001", WARNING, "the accelerator was power- or thermally throttled during a timed window",
    fix="cool the system or lift the power cap; throttling makes the time depend on the room, not the system",
    why="Throttling (power cap, thermal, hardware slowdown) during a timed window makes the time depend on the room, "
    "not the system; a warning. It reports what the driver said, and sees nothing on systems that do not report it.",
    bad="power-cap throttle reasons during epoch 2",
    good="no throttle reasons while training", module=__name__)
TELEMETRY_002 = rule(
    "TELEMETRY-002", WARNING, "telemetry has a gap of more than 2 s during the run",
    fix="keep the machine responsive while training (the sampler runs at 1 Hz or faster); gaps are recorded, not "
    "filled",
    why="The sampler runs at 1 Hz or faster; a gap over 2 s means the machine stalled or rows were removed, so that "
    "interval is unobserved. A warning: gaps are recorded, not filled.",
    bad="no row between t=120 s and t=135 s",
    good="a row at least every second", module=__name__)
TELEMETRY_003 = rule(
    "TELEMETRY-003", ERROR, "trial_<k>/telemetry.csv is not the harness's CSV (header time_ms,..., numbers or empty "
    "cells)",
    fix="copy the telemetry.csv the harness wrote, unchanged (format: docs/energy.md)",
    why="telemetry.csv is evidence for throttling, gaps and energy; read as plain CSV of numbers, one that is not the "
    "harness's format proves none of them. It proves only the format is wrong.",
    bad="a header 'time,power' instead of 'time_ms,...'",
    good="the telemetry.csv the harness wrote", module=__name__)
TELEMETRY_004 = rule(
    "TELEMETRY-004", ERROR, "a trial of result format 2 or later has no trial_<k>/telemetry.csv",
    fix="run with telemetry on (--telemetry-hz 1 or more; 0 is for experiments, not results) and submit the file",
    why="From result format 2 on every trial records telemetry; without it throttling, gaps and the energy cross-check "
    "cannot be verified. It proves the file is absent.",
    bad="trial_3/ without telemetry.csv (--telemetry-hz 0)",
    good="trial_3/telemetry.csv", module=__name__)
TELEMETRY_005 = rule(
    "TELEMETRY-005", ERROR, "the telemetry timeline contradicts the windows: the run worked harder in its evaluations "
    "than in training",
    fix="submit the logs and telemetry.csv of the same trial, unedited (the bound: docs/energy.md)",
    why="An evaluation does less work per second than training; telemetry showing the run working harder inside its "
    "evaluations than in training means training time was logged as evaluation. It cannot catch a forger who rewrote "
    "telemetry consistently.",
    bad="evaluation windows at full power, training windows idle",
    good="training windows at the higher load", module=__name__)
TELEMETRY_006 = rule(
    "TELEMETRY-006", ERROR, "the telemetry rows do not span the run as the sampler writes them (start, end, or more "
    "rows than its period allows)",
    fix="submit the telemetry.csv of the same trial, unedited: its rows run from before run_start to run_stop",
    why="The sampler writes rows from before run_start to run_stop at its period; rows that start late, end early or "
    "are too many for the period were shifted or added, so the series does not cover the run. It cannot reconstruct "
    "the missing rows.",
    bad="rows starting 60 s after run_start",
    good="rows from before run_start to run_stop", module=__name__)

MAX_COLUMNS = 4096
MAX_GAP_FINDINGS = 10  # per file; the last finding says how many more
# TELEMETRY-005: evaluation forwards what training forwards and backwards, so it never works harder than
# training; twice the training level (plus 5% of the run's peak, for noise near idle) is a contradiction.
EVAL_OVER_TRAIN = 2.0
NEAR_IDLE = 0.05
MIN_EVAL_MS, MIN_TRAIN_MS = 2000, 5000   # less time than that under the windows: too few rows to judge
MIN_FREE_PCT = 10.0   # the run's share of the CPU time others left it, never over less than this
# TELEMETRY-006: the sampler writes a row at start, one per tick, one at each epoch's end and one at stop,
# right after run_stop; 10 s covers a slow last read, 2% the clock's rounding of the period.
END_SLACK_MS = 10_000
PERIOD_SLACK = 0.02


def check_trial(events: list[Event], telemetry: TelemetryFile, findings: Findings, *,
                required: bool = False, period_s: float | None = None) -> "Series | None":
    """The file's findings; its evidence columns for the energy check (None without a readable file)."""
    rel, data = telemetry.rel, telemetry.data
    telemetry.problems.replay(findings)
    if telemetry.missing and required:
        findings.add(TELEMETRY_004, rel, f"{rel} is missing: result format 2 records telemetry in every trial",
                     expected=FILE_NAME, seen="missing")
    if data is None:
        return None
    windows = _windows(events)
    scan = Scan(*windows) if windows else Scan((math.inf, -math.inf), [])
    if not parse(data, rel, findings, scan):
        return None
    if windows:
        scan.report(rel, findings)
        check_span(scan.series, events, period_s, rel, findings)
        check_timeline(scan.series, events, rel, findings)
    return scan.series


class Series:
    """The evidence columns of a telemetry file, every row: time_ms, the run's CPU use, power per domain.

    A row's CPU use and power are means over the interval since the row before (the sampler computes
    them from counters), so row i speaks for (t[i-1], t[i]]."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.run_cpu: list[float | None] | None = None
        self.busy_elsewhere: dict[str, list[float | None]] = {}   # other.cpu_pct, cpu.steal_pct
        self.power: dict[str, list[float | None]] = {}
        self.throttle: dict[str, list[float | None]] = {}          # <device>.throttle: NVML reason bits
        self.freq_mhz: list[float | None] | None = None            # cpu.freq_mhz: the mean CPU clock
        self._columns: list[tuple[int, list]] = []

    def header(self, columns: list[str]) -> None:
        for i, c in enumerate(columns):
            if c == RUN_CPU:
                self.run_cpu = []
                self._columns.append((i, self.run_cpu))
            elif c in (OTHER_CPU, STEAL_CPU):
                self._columns.append((i, self.busy_elsewhere.setdefault(c, [])))
            elif c.endswith(POWER_SUFFIX):
                self._columns.append((i, self.power.setdefault(c[: -len(POWER_SUFFIX)], [])))
            elif c.endswith(".throttle"):
                self._columns.append((i, self.throttle.setdefault(c[: -len(".throttle")], [])))
            elif c == CPU_FREQ:
                self.freq_mhz = []
                self._columns.append((i, self.freq_mhz))

    def row(self, t: float, values: list) -> None:
        self.times.append(t)
        for i, column in self._columns:
            column.append(values[i])

    def total_power(self) -> list[float | None] | None:
        """Every power column summed per row (None in a row where one is empty)."""
        if not self.power:
            return None
        columns = list(self.power.values())
        return [None if None in row else sum(row) for row in zip(*columns)]

    def run_share(self) -> list[float | None] | None:
        """The run's CPU use as a percent of what other processes and the hypervisor left free (so a
        neighbour's load that comes and goes does not look like the run's own work changing)."""
        if self.run_cpu is None or len(self.busy_elsewhere) != 2:
            return None
        return [None if None in (run, other, steal) else 100 * run / max(100 - other - steal, MIN_FREE_PCT)
                for run, other, steal in zip(self.run_cpu, *self.busy_elsewhere.values())]

    def overlaps(self, values: list[float | None], intervals: list[tuple[float, float]]
                 ) -> Iterator[tuple[float, float, float]]:
        """(value, ms of its interval inside one of ``intervals``, ms of its interval) for every row that
        overlaps them; ``intervals`` sorted and disjoint (ms), one pass over both."""
        j = 0
        for i in range(1, len(self.times)):
            t0, t1, v = self.times[i - 1], self.times[i], values[i]
            if v is None or t1 <= t0:
                continue
            while j < len(intervals) and intervals[j][1] <= t0:
                j += 1
            k = j
            while k < len(intervals) and intervals[k][0] < t1:
                inside = min(intervals[k][1], t1) - max(intervals[k][0], t0)
                if inside > 0:
                    yield v, inside, t1 - t0
                k += 1

    def mean(self, values: list[float | None], intervals: list[tuple[float, float]]) -> tuple[float, float]:
        """(time-weighted mean over ``intervals``, ms covered by rows)."""
        total = covered = 0.0
        for v, inside, _ in self.overlaps(values, intervals):
            total += v * inside
            covered += inside
        return (total / covered if covered else math.nan), covered

    def integral(self, values: list[float | None], intervals: list[tuple[float, float]]
                 ) -> tuple[float, float] | None:
        """(joules of a power column over ``intervals``, the bound of its error); None when more than a
        tenth of their time has no row. A row cut by a boundary may hold its energy on either side of it
        (the bound adds the larger share), and time without a row counts at the highest power seen."""
        joules = bound = covered = 0.0
        for v, inside, seg in self.overlaps(values, intervals):
            joules += v * inside / 1000
            covered += inside
            if inside < seg:
                bound += abs(v) * seg / 1000 * max(inside / seg, 1 - inside / seg)
        span = sum(b - a for a, b in intervals)
        seen = [abs(v) for v in values if v is not None]
        if span <= 0 or covered < 0.9 * span or not seen:
            return None
        return joules, bound + (span - covered) / 1000 * max(seen)


def check_span(series: Series, events: list[Event], period_s: float | None, rel: str, findings: Findings) -> None:
    """TELEMETRY-006: rows long after run_stop, or more rows in the run than the period allows (the
    sampler never ticks early), say the times of the logs or of the file were rewritten."""
    run = _windows(events)
    if run is None or not series.times:
        return
    (start, stop), _ = run
    if series.times[-1] > stop + END_SLACK_MS:
        findings.add(TELEMETRY_006, rel, f"the last telemetry row is {(series.times[-1] - stop) / 1000:.1f} s "
                     "after run_stop; the sampler stops right after it", line=len(series.times) + 1,
                     expected=f"at most {END_SLACK_MS / 1000:g} s after run_stop",
                     seen=f"{(series.times[-1] - stop) / 1000:.1f} s")
    if period_s is None:
        return
    rows = sum(1 for t in series.times if start <= t <= stop)
    epochs = sum(1 for e in events if e.key == mllog.EPOCH_STOP)
    allowed = (stop - start) / 1000 / period_s * (1 + PERIOD_SLACK) + epochs + 3
    if rows > allowed:
        findings.add(TELEMETRY_006, rel, f"{rows} telemetry rows in a run of {(stop - start) / 1000:.1f} s, "
                     f"sampled every {period_s:g} s with {epochs} epoch(s): at most {int(allowed)} are possible",
                     expected=f"<= {int(allowed)} rows", seen=f"{rows} rows")


def check_timeline(series: Series, events: list[Event], rel: str, findings: Findings) -> None:
    """TELEMETRY-005: the run's CPU use and the power, time-weighted over the evaluation windows, against
    the same over the training (epoch) windows. The CPU use must contradict both as measured and as a share
    of the CPU time the rest of the machine left free (a neighbour's load changes the first alone)."""
    replay = Replay(events)
    epochs, evals = replay.ordered("epoch"), replay.ordered("eval")
    if not epochs or not evals:
        return
    cpu = [_harder_in_eval(series, v, epochs, evals) for v in (series.run_cpu, series.run_share())]
    if cpu[0] and (cpu[1] or series.run_share() is None):
        _report_timeline(f"the run's CPU use ({RUN_CPU})", cpu[0], rel, findings)
    power = _harder_in_eval(series, series.total_power(), epochs, evals)
    if power:
        _report_timeline("the power (every *.power_w)", power, rel, findings)


def _harder_in_eval(series: Series, values: list[float | None] | None, epochs: list[tuple[float, float]],
                    evals: list[tuple[float, float]]) -> tuple[float, float, float] | None:
    """(evaluation mean, training mean, peak) where the evaluations worked harder than the bound allows."""
    if values is None:
        return None
    train, train_ms = series.mean(values, epochs)
    ev, eval_ms = series.mean(values, evals)
    peak = max((abs(v) for v in values if v is not None), default=0.0)
    if train_ms < MIN_TRAIN_MS or eval_ms < MIN_EVAL_MS or ev <= EVAL_OVER_TRAIN * train + NEAR_IDLE * peak:
        return None
    return ev, train, peak


def _report_timeline(name: str, seen: tuple[float, float, float], rel: str, findings: Findings) -> None:
    ev, train, peak = seen
    findings.add(TELEMETRY_005, rel, f"{name} averages {ev:.4g} in the evaluation windows but {train:.4g} in the "
                 "training windows: the run worked harder while evaluating than while training",
                 expected=f"<= {EVAL_OVER_TRAIN:g} x {train:.4g} + {NEAR_IDLE:g} x {peak:.4g}", seen=f"{ev:.4g}")


class Scan:
    """Gaps and throttling, gathered row by row (nothing but counters is kept per row)."""

    def __init__(self, run: tuple[float, float], evals: list[tuple[float, float]]):
        self.run, self.evals = run, evals
        self.series = Series()
        self.prev: tuple[int | None, float] = (None, run[0])
        self.gaps: list[tuple[int | None, float, int | None, float]] = []
        self.gap_count = 0
        self.throttle: dict[int, list] = {}  # column index -> [samples, first line, bits]
        self.throttle_cols: list[tuple[int, str]] = []

    def header(self, columns: list[str]) -> None:
        self.series.header(columns)
        self.throttle_cols = [(i, c[: -len(".throttle")]) for i, c in enumerate(columns) if c.endswith(".throttle")]

    def row(self, n: int, t: float, values: list) -> None:
        self.series.row(t, values)
        if not self.run[0] <= t <= self.run[1]:
            return
        self._gap(n, t)
        if any(a <= t <= b for a, b in self.evals):
            return
        for i, _ in self.throttle_cols:
            bits = int(values[i]) & THROTTLE_MASK if values[i] is not None else 0
            if bits:
                hit = self.throttle.setdefault(i, [0, n, 0])
                hit[0] += 1
                hit[2] |= bits

    def _gap(self, n: int | None, t: float) -> None:
        n_a, t_a = self.prev
        if t - t_a > GAP_S * 1000:
            self.gap_count += 1
            if len(self.gaps) < MAX_GAP_FINDINGS:
                self.gaps.append((n_a, t_a, n, t))
        self.prev = (n, t)

    def report(self, rel: str, findings: Findings) -> None:
        self._gap(None, self.run[1])
        for n_a, t_a, n_b, t_b in self.gaps:
            where = f"between line {n_a} and line {n_b}" if n_a and n_b else \
                ("before the first sample of the run" if n_b else
                 "after the last sample of the run" if n_a else "no sample at all during the run")
            findings.add(TELEMETRY_002, rel, f"no telemetry sample for {(t_b - t_a) / 1000:.1f} s during the run "
                         f"({where})", line=n_b or n_a, expected=f"a sample at least every {GAP_S:g} s",
                         seen=f"{(t_b - t_a) / 1000:.1f} s without one")
        if self.gap_count > MAX_GAP_FINDINGS:
            findings.add(TELEMETRY_002, rel, f"{self.gap_count - MAX_GAP_FINDINGS} more sampling gaps over "
                         f"{GAP_S:g} s during the run", expected="none", seen=f"{self.gap_count} gaps")
        for i, device in self.throttle_cols:
            if i not in self.throttle:
                continue
            samples, line, bits = self.throttle[i]
            findings.add(TELEMETRY_001, rel, f"{device} was throttled ({', '.join(throttle_names(bits))}) in "
                         f"{samples} sample(s) of the timed windows, first at line {line}", line=line,
                         expected="no power or thermal throttling while timed", seen=", ".join(throttle_names(bits)))


def parse(data: bytes, rel: str, findings: Findings, scan: Scan | None = None) -> bool:
    """Validate the CSV, feeding each row to ``scan``; False after a TELEMETRY-003 finding."""
    lines = _lines(data, rel, findings)
    if lines is None:
        return False
    header = _header(lines, rel, findings)
    if header is None:
        return False
    if scan is not None:
        scan.header(header[1:])
    last_t = -math.inf
    reader = csv.reader(lines[1:])
    n = 1
    while True:
        n += 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            findings.add(TELEMETRY_003, rel, f"{rel} line {n}: {exc}", line=n,
                         expected="time_ms then numbers or empty cells", seen="unreadable CSV")
            return False
        problem, t, values = _row(cells, header, last_t)
        if problem:
            findings.add(TELEMETRY_003, rel, f"{rel} line {n}: {problem}", line=n,
                         expected="time_ms then numbers or empty cells", seen=",".join(cells))
            return False
        last_t = t
        if scan is not None:
            scan.row(n, t, values)
    return True


def _lines(data: bytes, rel: str, findings: Findings) -> list[str] | None:
    """The file's complete lines (a torn last row dropped); None after a finding (not UTF-8, empty)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        findings.add(TELEMETRY_003, rel, f"{rel} is not UTF-8 (byte {exc.start})", seen="binary data")
        return None
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a kill mid-write tears the last row: it is not evidence
    lines = text.split("\n")[:-1] if text else []
    if not lines:
        findings.add(TELEMETRY_003, rel, f"{rel} is empty", expected="a header line time_ms,...", seen="empty")
        return None
    return lines


def _header(lines: list[str], rel: str, findings: Findings) -> list[str] | None:
    """The header's cells: time_ms then distinct column names; None after a finding."""
    try:
        header = next(csv.reader([lines[0]]), [])
    except csv.Error as exc:  # a NUL byte, a field over the csv module's size limit
        header = [f"<{exc}>"]
    if not header or header[0] != "time_ms" or len(header) > MAX_COLUMNS or len(set(header)) != len(header) \
            or not all(COLUMN.fullmatch(c) for c in header[1:]):
        findings.add(TELEMETRY_003, rel, f"{rel}: the header is not time_ms followed by distinct column names",
                     line=1, expected="time_ms,<device>.<metric>,...", seen=lines[0])
        return None
    return header


def _row(cells: list[str], header: list[str], last_t: float) -> tuple[str | None, float, list[float | None]]:
    """(what is wrong with the row or None, its time_ms, its values)."""
    if len(cells) != len(header):
        return f"{len(cells)} cells for {len(header)} columns", last_t, []
    try:
        t = float(cells[0])
        values = [float(c) if c else None for c in cells[1:]]
    except ValueError:
        return "a cell is not a number", last_t, []
    if not math.isfinite(t) or any(v is not None and not math.isfinite(v) for v in values):
        return "a value is not a finite number", t, values
    if t < last_t:
        return f"time_ms {cells[0]} goes back", t, values
    return None, t, values


def _windows(events: list[Event]) -> tuple[tuple[float, float], list[tuple[float, float]]] | None:
    """(run_start, run_stop) and the closed evaluation windows; None unless the run has one start and stop."""
    replay = Replay(events)
    if replay.count("run") != (1, 1):
        return None
    start, stop = replay.first("run")
    return (start.time_ms, stop.time_ms), [(s.start.time_ms, s.stop.time_ms) for s in replay.closed("eval")]
