"""The run's start and its windows are evidence too: the telemetry must cover the logged run (TELEMETRY-007).

The sampler (harness/measure/telemetry.py) writes a row when the trial starts, one per period, one as every
epoch window closes, and one at the end right after ``run_stop``, all on the MLLOG's clock. So a trial's
telemetry.csv must

- start no later than ``run_start`` and end no earlier than ``run_stop`` (it covers the whole logged run);
- hold a row at each logged ``epoch_stop``: from result format 3 on at its very millisecond (the sampler
  stamps the row with the instant the window closed), before that within ``EPOCH_ROW_SLACK_MS`` before it. An
  epoch moved or squeezed in the MLLOG, a ``run_start`` moved into the real training with the epochs squeezed
  into the rest, or another trial's telemetry shifted onto this trial's start lose that alignment. The slack
  of format 2 is why format 3 exists: at 1 Hz a periodic row lies within 500 ms before a moved epoch_stop
  about half the time, so a cut epoch went unseen as often as not (the CI run that refused session 17's work);
- where it records the run's CPU use, show no training-level work before ``run_start`` for longer than the
  initialisation the rules allow (``max_init_seconds``).

What this cannot prove: a forger who rewrites the telemetry rows to match forged logs. Then the row count
(TELEMETRY-006), the power integral (ENERGY-006) and the CPU use (TELEMETRY-005) are the remaining evidence,
and a time forged consistently in every file is not detectable from the folder. Nor, under rules 1.0 and 1.1
(whose results may be format 2), one who relabels a format-3 trial as format 2 in both trial.json and the
MLLOG to get the 500 ms slack back; a rules version released with format 3 results will derive it
(checks/evidence_format.py).
"""
from __future__ import annotations

import bisect
import statistics

from trainmark.checker.checks.telemetry import TELEMETRY_006
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog
from trainmark.format.mllog_read import Event

# Result format 2: the epoch's row is sampled right before the window closes; reading the meters and stamping
# epoch_stop take milliseconds (the examples: 0 or 1 ms), a loaded machine's scheduler a few hundred at worst.
# From format 3 on the row carries the window's own end instant: no slack.
EPOCH_ROW_SLACK_MS = 500
EDGE_SLACK_MS = 1_500    # the first row is written as sampling starts, the last right after run_stop
TRAINING_LEVEL = 0.5     # a row at half the training windows' mean CPU use or more is training-level work
MAX_SHOWN = 3
# The rows' median interval may exceed the claimed period by this much (a loaded sampler wakes late: at load 20
# on 2 vCPUs the median of 1 s ticks stayed within 1.003 s; at 100 Hz wake-up latency dominates).
PERIOD_SLACK, PERIOD_SLACK_S = 0.25, 0.05

TELEMETRY_007 = rule(
    "TELEMETRY-007", ERROR, "the telemetry does not cover the logged run: it starts after run_start, ends before "
    "run_stop, lacks the row the sampler writes at an epoch_stop, or shows training-level work before run_start "
    "beyond the initialisation the rules allow",
    why="The sampler writes a row at the start, one per period, one as each epoch window closes (from result "
    "format 3 on stamped with the epoch_stop's own millisecond, before that within 500 ms before it) and one right "
    "after run_stop, on the MLLOG's clock. Logs whose windows were moved (a run_start moved into the training, "
    "epochs squeezed, another trial's telemetry shifted onto this one) lose that alignment. A forger who "
    "rewrites the rows to match is left to TELEMETRY-006, ENERGY-006 and TELEMETRY-005.",
    fix="submit the telemetry.csv and the result file of the same trial, unedited",
    bad="init_stop and run_start moved 40 % into the training with the logged epochs squeezed into the rest; or "
    "trial 2's telemetry.csv shifted onto trial 1's start",
    good="the harness's files: a row at every epoch_stop, rows from before run_start to run_stop",
    module=__name__)


def check_coverage(events: list[Event], series, rel: str, findings: Findings,
                   max_init_s: float | None = None, exact_epoch_rows: bool = False) -> None:
    """TELEMETRY-007 for one trial (``series``: checks/telemetry.py's Series of its telemetry.csv);
    ``exact_epoch_rows``: the trial's result format (3 or later) stamps each epoch's row at its epoch_stop."""
    starts = [e for e in events if e.key == mllog.RUN_START]
    stops = [e for e in events if e.key == mllog.RUN_STOP]
    times = series.times
    if len(starts) != 1 or len(stops) != 1 or not times:
        return  # no run to cover (MLLOG-* say why) or an empty file (TELEMETRY-003)
    start, stop = starts[0].time_ms, stops[0].time_ms
    if times[0] > start + EDGE_SLACK_MS or times[-1] < stop - EDGE_SLACK_MS:
        findings.add(TELEMETRY_007, rel, f"the telemetry rows run from {_at(times[0], start)} to "
                     f"{_at(times[-1], start)}, the logged run from run_start to {_at(stop, start)}: they do not "
                     "cover it", expected="rows from before run_start to run_stop",
                     seen=f"{_at(times[0], start)} .. {_at(times[-1], start)}")
        return
    _epoch_rows(events, times, start, 0 if exact_epoch_rows else EPOCH_ROW_SLACK_MS, rel, findings)
    if max_init_s is not None:
        _work_before_start(events, series, start, max_init_s, rel, findings)


def check_period(series, events: list[Event], claimed_s: float | None, rel: str, findings: Findings) -> None:
    """TELEMETRY-006: the period trial.json claims is no shorter than the one the rows were sampled at (their
    median interval inside the run: the sampler's ticks, the epoch rows being few). A claimed period shorter
    than the rows' would let TELEMETRY-006's row count admit rows added to the run; rows denser than the claim
    are that row count's own finding."""
    starts = [e.time_ms for e in events if e.key == mllog.RUN_START]
    stops = [e.time_ms for e in events if e.key == mllog.RUN_STOP]
    if claimed_s is None or len(starts) != 1 or len(stops) != 1:
        return
    inside = [t for t in series.times if starts[0] <= t <= stops[0]]
    gaps = [b - a for a, b in zip(inside, inside[1:]) if b > a]
    if len(gaps) < 10:
        return  # too few rows to tell the sampler's ticks from the epoch rows
    observed = statistics.median(gaps) / 1000
    if observed > claimed_s * (1 + PERIOD_SLACK) + PERIOD_SLACK_S:
        findings.add(TELEMETRY_006, rel, f"the rows are sampled every {observed:.3g} s (their median interval in the "
                     f"run), trial.json's telemetry.period_s says {claimed_s:g} s: a shorter period than the rows' "
                     "lets the row count admit added rows", expected=f"{claimed_s:g} s",
                     seen=f"{observed:.3g} s")


def _at(t: float, start: float) -> str:
    return f"run_start{(t - start) / 1000:+.1f} s"


def _epoch_rows(events: list[Event], times: list[float], start: float, slack_ms: int, rel: str,
                findings: Findings) -> None:
    missing = []
    for e in events:
        if e.key != mllog.EPOCH_STOP:
            continue
        i = bisect.bisect_right(times, e.time_ms + (1 if slack_ms else 0))   # format 2: the clock's rounding
        if i == 0 or e.time_ms - times[i - 1] > slack_ms:
            missing.append(e)
    if missing:
        shown = ", ".join(f"epoch {e.metadata.get(mllog.EPOCH_NUM)} (line {e.line}, {_at(e.time_ms, start)})"
                          for e in missing[:MAX_SHOWN])
        more = f" and {len(missing) - MAX_SHOWN} more" if len(missing) > MAX_SHOWN else ""
        where = f"within {slack_ms} ms before" if slack_ms else "at the millisecond of"
        findings.add(TELEMETRY_007, rel, f"no telemetry row {where} the epoch_stop of {shown}{more}: the sampler "
                     "writes one as every epoch window closes, so these windows are not the ones the telemetry "
                     "recorded", line=missing[0].line,
                     expected=f"a row at most {slack_ms} ms before each epoch_stop" if slack_ms else
                     "a row at each epoch_stop's time_ms (result format 3)",
                     seen=f"{len(missing)} epoch(s) without one")


def _work_before_start(events: list[Event], series, start: float, max_init_s: float, rel: str,
                       findings: Findings) -> None:
    if series.run_cpu is None:
        return  # time-only telemetry: the epoch rows are the evidence
    epochs = []
    opened = None
    for e in events:
        if e.key == mllog.EPOCH_START:
            opened = e.time_ms
        elif e.key == mllog.EPOCH_STOP and opened is not None:
            epochs.append((opened, e.time_ms))
            opened = None
    level, covered = series.mean(series.run_cpu, epochs)
    if not covered or level <= 0:
        return
    busy_ms = sum(inside for v, inside, _ in series.overlaps(series.run_cpu, [(series.times[0], start)])
                  if v >= TRAINING_LEVEL * level)
    if busy_ms > max_init_s * 1000:
        findings.add(TELEMETRY_007, rel, f"the run's CPU use was at training level ({TRAINING_LEVEL:.0%} of the "
                     f"training windows' mean {level:.0f} % or more) for {busy_ms / 1000:.1f} s before run_start; "
                     f"the rules allow {max_init_s:g} s of initialisation", expected=f"<= {max_init_s:g} s",
                     seen=f"{busy_ms / 1000:.1f} s")
