"""Numbers as the reports print them: a fixed number of significant digits, '-' for unknown."""
from __future__ import annotations

import math
from typing import Any


def num(x: Any, digits: int = 4) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "-"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def seconds(x: Any) -> str:
    return "-" if num(x) == "-" else f"{x:.1f}"


def pct(x: Any) -> str:
    return "-" if num(x) == "-" else f"{100 * x:.1f} %"
