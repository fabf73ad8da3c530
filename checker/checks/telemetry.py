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

from trainmark.checker.read.safefs import LOG_CAP, Missing, SafeTree, UnsafeEntry
from trainmark.checker.verdict.codes import TELEMETRY_001, TELEMETRY_002, TELEMETRY_003
from trainmark.checker.verdict.findings import Findings
from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.format.telemetry import COLUMN, FILE_NAME, GAP_S, THROTTLE_MASK, throttle_names

MAX_COLUMNS = 4096
MAX_GAP_FINDINGS = 10  # per file; the last finding says how many more


def check_trial(events: list[Event], tree: SafeTree, trial_rel: str, findings: Findings) -> None:
    rel = f"{trial_rel}/{FILE_NAME}"
    try:
        data = tree.read_bytes(rel, LOG_CAP)
    except Missing:
        return  # telemetry is optional in format version 1
    except UnsafeEntry as exc:
        findings.add(exc.rule, rel, exc.message, seen=exc.seen)
        return
    windows = _windows(events)
    scan = Scan(*windows) if windows else None
    if parse(data, rel, findings, scan) and scan is not None:
        scan.report(rel, findings)


class Scan:
    """Gaps and throttling, gathered row by row (nothing but counters is kept per row)."""

    def __init__(self, run: tuple[float, float], evals: list[tuple[float, float]]):
        self.run, self.evals = run, evals
        self.prev: tuple[int | None, float] = (None, run[0])
        self.gaps: list[tuple[int | None, float, int | None, float]] = []
        self.gap_count = 0
        self.throttle: dict[int, list] = {}  # column index -> [samples, first line, bits]
        self.throttle_cols: list[tuple[int, str]] = []

    def header(self, columns: list[str]) -> None:
        self.throttle_cols = [(i, c[: -len(".throttle")]) for i, c in enumerate(columns) if c.endswith(".throttle")]

    def row(self, n: int, t: float, values: list) -> None:
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
    starts = [e.time_ms for e in events if e.key == mllog.RUN_START]
    stops = [e.time_ms for e in events if e.key == mllog.RUN_STOP]
    if len(starts) != 1 or len(stops) != 1:
        return None
    evals, open_at = [], None
    for e in events:
        if e.key == mllog.EVAL_START:
            open_at = e.time_ms
        elif e.key == mllog.EVAL_STOP and open_at is not None:
            evals.append((open_at, e.time_ms))
            open_at = None
    return (starts[0], stops[0]), evals
