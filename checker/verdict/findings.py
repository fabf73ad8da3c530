"""What the checker tells a reviewer: one finding per broken rule occurrence.

Checks append findings to a ``Findings`` list and go on, so that one run shows every
problem of a folder; nothing stops at the first.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterator

from trainmark.checker.verdict.registry import ERROR, INFO, REGISTRY, Rule, load_all, rule
from trainmark.format.text import clip, printable

LIMIT_001 = rule(
    "LIMIT-001", INFO, "more findings of one rule in one file than the checker lists",
    fix="fix the listed ones first: the others are usually the same problem repeated",
    why="A file with thousands of violations would bury the report; after 20 findings of one rule in one file (100 "
    "in a folder) the rest are counted in one LIMIT-001 finding. It hides nothing from the verdict: the counted "
    "findings keep their severity.",
    bad="an epochs.log with 5,000 malformed lines",
    good="an epochs.log with none", module=__name__)

MAX_PER_RULE_AND_FILE = 20     # a file with thousands of violations shows this many, then one LIMIT-001 count
MAX_PER_RULE_AND_FOLDER = 100  # the same across the files of one folder (999,999 missing result_<k>.txt)


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


def _rule(code: str) -> Rule:
    """The registered rule of ``code``: declared by the module that emits it, so normally already imported; a
    code named by a tag (the compliance configs' ``# TARGET-001``) may need the whole registry loaded."""
    found = REGISTRY.get(code)
    return found if found is not None else load_all()[code]


class Findings:
    """An ordered, duplicate-free collection of findings, bounded per rule and file.

    After ``MAX_PER_RULE_AND_FILE`` findings of one rule in one file (or
    ``MAX_PER_RULE_AND_FOLDER`` in the files of one folder), further ones are counted, not
    kept: one LIMIT-001 finding (placed where the first dropped one would have been) says
    how many more there were. Adding is O(1), so a file with a million violations costs a
    million counter increments, not a million findings to render.
    """

    def __init__(self, cap: int = MAX_PER_RULE_AND_FILE, folder_cap: int = MAX_PER_RULE_AND_FOLDER) -> None:
        self._items: list[Finding] = []
        self._seen: set[tuple] = set()
        self._caps = {"file": cap, "folder": folder_cap}
        self._per: dict[tuple[str, str, str], int] = {}          # (scope, rule, where) -> findings kept
        self._hidden: dict[tuple[str, str, str], list[int]] = {}  # same key -> [index of its LIMIT-001, count]

    def add(self, rule_id: str, file: str, message: str, *, line: int | None = None,
            expected: Any = "", seen: Any = "", fix: str | None = None) -> None:
        spec = _rule(rule_id)
        key = (rule_id, file, line, message)
        if key in self._seen:
            return
        groups = (("file", rule_id, file), ("folder", rule_id, file.rpartition("/")[0]))
        if rule_id != LIMIT_001:
            for group in groups:
                if self._per.get(group, 0) >= self._caps[group[0]]:
                    self._count_hidden(group, spec.severity)
                    return
        self._seen.add(key)
        for group in groups:
            self._per[group] = self._per.get(group, 0) + 1
        self._items.append(Finding(
            rule=rule_id, severity=spec.severity, file=printable(file), line=line, message=clip(message, 2000),
            expected=clip(expected), seen=clip(seen), fix=fix or spec.fix,
        ))

    def _count_hidden(self, group: tuple[str, str, str], severity: str) -> None:
        scope, rule_id, where = group
        if group not in self._hidden:
            self._hidden[group] = [len(self._items), 0]
            self._items.append(None)  # type: ignore[arg-type]  # replaced just below
        slot, cap = self._hidden[group], self._caps[scope]
        slot[1] += 1
        place = "this file" if scope == "file" else "the files of this folder"
        self._items[slot[0]] = Finding(
            rule=LIMIT_001, severity=REGISTRY[LIMIT_001].severity, file=printable(where), line=None,
            message=f"and {slot[1]} more {rule_id} finding(s) ({severity}) in {place}, not listed: "
                    f"the first {cap} are shown",
            expected=f"at most {cap} {rule_id} findings listed per {scope}", seen=f"{cap + slot[1]}",
            fix=REGISTRY[LIMIT_001].fix)

    def hidden(self) -> int:
        """How many findings the per-rule cap left out (they count toward nothing but LIMIT-001)."""
        return sum(count for _, count in self._hidden.values())

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def has_errors(self) -> bool:
        return any(f.severity == ERROR for f in self._items)

    def count(self, severity: str) -> int:
        return sum(1 for f in self._items if f.severity == severity)
