"""Submitted text made safe to show: bounded and printable (messages quote hostile files)."""
from __future__ import annotations

from typing import Any

MAX_TEXT = 400  # expected/seen quote submission content: keep a reviewer's screen usable


def clip(text: Any, limit: int = MAX_TEXT) -> str:
    """A printable, bounded rendering of submitted content."""
    try:
        s = (text if isinstance(text, str) else repr(text))[: limit * 4]
    except RecursionError:
        s = f"<{type(text).__name__} nested too deeply to show>"
    s = printable(s)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def printable(text: str) -> str:
    """``text`` with every control, format or unpaired-surrogate character escaped (``\\x1b``, ``\\n``).

    Submitted names and content reach terminals and CSV files: an ESC or OSC sequence,
    a newline or a byte that is not UTF-8 (a surrogate escape) must show as what it is,
    never act.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
