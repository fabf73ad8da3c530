"""Numbers as the reports print them: delegated to ``trainmark.format.numbers``, the one number formatter.

The names stay (the summary, the page and compare call them); '-' is the reports' unknown marker.
"""
from __future__ import annotations

from typing import Any

from trainmark.format.numbers import display, is_number


def num(x: Any, digits: int = 4) -> str:
    """``x`` with ``digits`` significant digits (whole above 10**digits), '-' when unknown."""
    return display(x, significant=digits)


def seconds(x: Any) -> str:
    """A time in seconds with one decimal, '-' when unknown."""
    return display(x, decimals=1)


def pct(x: Any) -> str:
    """A fraction as a percentage with one decimal (0.123 -> '12.3 %'), '-' when unknown."""
    return f"{display(100 * x, decimals=1)} %" if is_number(x) else "-"
