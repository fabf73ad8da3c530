"""A benchmark's implementation record (``<submitter>/benchmarks/<benchmark>/<system>/``) read whole, within caps.

``checks/code.py`` hashes these files and parses the record's JSON; nothing in a record is imported or run. What
goes wrong while reading (a link, an unreadable file, the caps) is kept in ``problems``, in reading order, for the
check to report where it used to meet them.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from trainmark.checker.read.evidence import Recorded
from trainmark.checker.read.levels import safe_entries
from trainmark.checker.read.safefs import HOSTILE_006, HOSTILE_007, MiB, Missing, SafeTree, UnsafeEntry

FILE_CAP = 16 * MiB        # one source file or record
TOTAL_CAP = 256 * MiB      # one implementation record
MAX_FILES = 2000
MAX_DEPTH = 12

PRESENT, MISSING, REFUSED = "present", "missing", "refused"


@dataclass
class RecordFolder:
    """The record's regular files (path relative to the record -> content) and how reading went."""
    rel: str
    state: str                                  # PRESENT, MISSING (no such folder) or REFUSED (a link, ...)
    files: dict[str, bytes] = field(default_factory=dict)
    problems: Recorded = field(default_factory=Recorded)


def read_record(tree: SafeTree, rel: str) -> RecordFolder:
    record = RecordFolder(rel, PRESENT)
    try:
        tree.list_dir(rel)
    except Missing:
        record.state = MISSING
        return record
    except UnsafeEntry as exc:
        record.state = REFUSED
        record.problems.add(exc.rule, rel, exc.message, seen=exc.seen)
        return record
    record.files = _walk(tree, rel, record.problems)
    return record


def _walk(tree: SafeTree, rel: str, problems: Recorded) -> dict[str, bytes]:
    """Every regular file below ``rel`` (path relative to it -> content), within the caps."""
    files: dict[str, bytes] = {}
    total = 0
    todo = [("", 0)]
    while todo:
        sub, depth = todo.pop()
        here = posixpath.join(rel, sub) if sub else rel
        try:
            entries = safe_entries(here, tree.list_dir(here), problems)
        except UnsafeEntry as exc:
            problems.add(exc.rule, here, exc.message, seen=exc.seen)
            continue
        for e in entries:
            child = posixpath.join(sub, e.name) if sub else e.name
            if e.kind == "dir":
                if depth + 1 > MAX_DEPTH:
                    problems.add(HOSTILE_006, posixpath.join(rel, child), f"implementation record nested deeper "
                                 f"than {MAX_DEPTH} folders; not read further", expected=f"at most {MAX_DEPTH}")
                else:
                    todo.append((child, depth + 1))
                continue
            if len(files) >= MAX_FILES or total + e.size > TOTAL_CAP:
                problems.add(HOSTILE_006, rel, f"implementation record holds more than {MAX_FILES} files or "
                             f"{TOTAL_CAP >> 20} MiB; the rest is not read",
                             expected=f"at most {MAX_FILES} files, {TOTAL_CAP >> 20} MiB")
                return files
            try:
                data = tree.read_bytes(posixpath.join(rel, child), FILE_CAP)
            except (Missing, UnsafeEntry) as exc:
                rule = exc.rule if isinstance(exc, UnsafeEntry) else HOSTILE_007
                problems.add(rule, posixpath.join(rel, child), getattr(exc, "message", str(exc)),
                             seen=getattr(exc, "seen", ""))
                continue
            files[child] = data
            total += len(data)
    return files
