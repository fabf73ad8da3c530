"""What the checker tells a reviewer: one finding per broken rule occurrence.

Checks append findings to a ``Findings`` list and go on, so that one run shows every
problem of a folder; nothing stops at the first.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterator

from trainmark.checker.catalog import ERROR, RULES

MAX_TEXT = 400  # expected/seen quote submission content: keep a reviewer's screen usable


def clip(text: Any, limit: int = MAX_TEXT) -> str:
    """A printable, bounded rendering of submitted content."""
    try:
        s = (text if isinstance(text, str) else repr(text))[: limit * 4]
    except RecursionError:
        s = f"<{type(text).__name__} nested too deeply to show>"
    if not s.isprintable():
        s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)
    return s if len(s) <= limit else s[: limit - 3] + "..."


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    file: str          # relative to the checked folder, '/'-separated; '' for the folder itself
    line: int | None   # 1-based, where there is one
    message: str
    expected: str
    seen: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Findings:
    """An ordered, duplicate-free collection of findings."""

    def __init__(self) -> None:
        self._items: list[Finding] = []
        self._seen: set[tuple] = set()

    def add(self, rule_id: str, file: str, message: str, *, line: int | None = None,
            expected: Any = "", seen: Any = "", fix: str | None = None) -> None:
        spec = RULES[rule_id]
        key = (rule_id, file, line, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self._items.append(Finding(
            rule=rule_id, severity=spec.severity, file=file, line=line, message=clip(message, 2000),
            expected=clip(expected), seen=clip(seen), fix=fix or spec.fix,
        ))

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def has_errors(self) -> bool:
        return any(f.severity == ERROR for f in self._items)

    def count(self, severity: str) -> int:
        return sum(1 for f in self._items if f.severity == severity)
