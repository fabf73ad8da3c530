"""Submitted text made safe to show: bounded and printable (messages quote hostile files)."""
from __future__ import annotations

import html
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


MARKDOWN_PUNCTUATION = "\\`*_[]|~$"  # emphasis, code, links and images, table cells, strikethrough, math


def markdown_text(text: Any) -> str:
    """Submitted text as Markdown that shows exactly that text, inline or in a table cell.

    GitHub and GitLab render HTML inside Markdown: a system named ``"><img src=x onerror=...>``
    must show as those characters, never become an element, a link, emphasis or a new cell.
    Control characters and bytes that were not UTF-8 are escaped first (``printable``), then
    Markdown's punctuation gets a backslash and HTML's special characters become entities
    (never a backslash before ``&``: Markdown would then show the entity's name).
    """
    shown = printable(str(text))
    shown = "".join("\\" + c if c in MARKDOWN_PUNCTUATION else c for c in shown)
    return html.escape(shown, quote=True)


def html_text(text: Any) -> str:
    """Submitted text as HTML that shows exactly that text (printable, then ``<>&"'`` as entities)."""
    return html.escape(printable(str(text)), quote=True)


def utf8_text(text: str) -> str:
    """``text`` that encodes as strict UTF-8: a lone surrogate (a name's byte that was not UTF-8) is escaped.

    The renderers escape every submitted name; this is the net under them, so that writing a page
    never ends in ``UnicodeEncodeError`` whatever field carried such a byte.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
