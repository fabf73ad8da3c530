"""The per-epoch text log: ``[yyyy:MM:dd HH:mm:ss] – [trial] – [epoch] – [accuracy]``.

One module owns the format so that the harness that writes it and the checker that
reads it cannot disagree. Timestamps are UTC; the separator is an EN DASH (U+2013).
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass

DASH = "\u2013"
TIME_FORMAT = "%Y:%m:%d %H:%M:%S"
_LINE = re.compile(
    r"\[(?P<ts>\d{4}:\d{2}:\d{2} \d{2}:\d{2}:\d{2})\] \u2013 "
    r"\[(?P<trial>\d{1,9})\] \u2013 \[(?P<epoch>\d{1,9})\] \u2013 "
    r"\[(?P<metric>-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)\]"
)


@dataclass(frozen=True)
class EpochLine:
    time: _dt.datetime  # timezone-aware, UTC
    trial: int
    epoch: int
    metric: float


def format_line(time_s: float, trial: int, epoch: int, metric: float) -> str:
    """The line for one evaluated epoch; ``time_s`` is a Unix time in seconds."""
    stamp = _dt.datetime.fromtimestamp(time_s, tz=_dt.timezone.utc).strftime(TIME_FORMAT)
    return f"[{stamp}] {DASH} [{trial}] {DASH} [{epoch}] {DASH} [{metric:.4f}]"


def parse_line(line: str) -> EpochLine:
    """Parse one line (without its newline); ``ValueError`` says what is wrong."""
    m = _LINE.fullmatch(line)
    if m is None:
        raise ValueError(
            "expected '[yyyy:MM:dd HH:mm:ss] \u2013 [trial] \u2013 [epoch] \u2013 [metric]' "
            f"with EN DASH separators, got {line[:120]!r}"
        )
    try:
        stamp = _dt.datetime.strptime(m["ts"], TIME_FORMAT).replace(tzinfo=_dt.timezone.utc)
    except ValueError as exc:
        raise ValueError(f"invalid timestamp {m['ts']!r}: {exc}") from None
    metric = float(m["metric"])
    if not math.isfinite(metric):
        raise ValueError(f"metric {m['metric']!r} is not a finite number")
    return EpochLine(stamp, int(m["trial"]), int(m["epoch"]), metric)
