"""Numbers as every output prints them: one place, so that no table, CSV or page shows binary noise.

A mean of times is a float such as 41.669999999999995 or 28.280450000000002; printed with ``str``
or written by ``csv`` that noise reached people and spreadsheets (issue 32). Two renderings:

- ``display``: for people (terminal tables, Markdown, HTML): a fixed number of decimals or of
  significant digits, never an exponent for ordinary magnitudes, an unknown marker for None, NaN
  and infinity;
- ``machine``: for CSV and other text a program reads back: the shortest text that reads back as
  the value rounded to 12 significant digits (far finer than any timer or meter the values come from).

Standard library only: the format layer is the lowest, imported by the checker, the report and the CLI.
"""
from __future__ import annotations

import math
from typing import Any

MACHINE_DIGITS = 12  # significant digits kept in machine outputs: float noise sits at the 16th-17th


def is_number(value: Any) -> bool:
    """A finite int or float; a bool is not a number here (True would print as 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def rounded(value: float, significant: int = MACHINE_DIGITS) -> float:
    """``value`` rounded to ``significant`` significant digits: 41.669999999999995 -> 41.67."""
    return float(f"{value:.{significant}g}")


def display(value: Any, *, decimals: int | None = None, significant: int = 4, unknown: str = "-") -> str:
    """``value`` for people: ``decimals`` fixed decimals when given, else ``significant`` significant digits.

    Ints print whole unless ``decimals`` asks for a fixed column; a float at or above 10**significant
    prints without decimals rather than as an exponent (123456.7 -> "123457", not "1.235e+05");
    None, NaN, infinity and non-numbers print ``unknown``.
    """
    if not is_number(value):
        return unknown
    if decimals is not None:
        return f"{value:.{decimals}f}"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{significant}g}" if abs(value) < 10 ** significant else f"{value:.0f}"


def machine(value: Any, *, significant: int = MACHINE_DIGITS, unknown: str = "") -> str:
    """``value`` for a program: the shortest text of ``value`` rounded to ``significant`` digits.

    ``float(machine(x)) == rounded(x)``; a whole float prints as an int (3000.0 -> "3000") so that
    a spreadsheet and a diff see the same number; None, NaN and infinity print ``unknown``.
    """
    if not is_number(value):
        return unknown
    if isinstance(value, int):
        return str(value)
    value = rounded(value, significant)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def round_floats(data: Any, significant: int = MACHINE_DIGITS) -> Any:
    """``data`` (JSON-like: dicts, lists, scalars) with every finite float rounded, for JSON outputs."""
    if isinstance(data, float) and math.isfinite(data):
        return rounded(data, significant)
    if isinstance(data, dict):
        return {k: round_floats(v, significant) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [round_floats(v, significant) for v in data]
    return data
