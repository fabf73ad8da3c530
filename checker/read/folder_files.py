"""A checked folder's files for the report (its ``FolderFiles``), read as the checker reads them.

The report shows curves and tables from a folder's logs; it reads them through this class, so the
same ``SafeTree`` rules hold (no links, no special files, the checker's caps) and nothing else opens
a submitted file.
"""
from __future__ import annotations

from pathlib import Path

from trainmark.checker.read.safefs import JSON_CAP, LOG_CAP, Missing, SafeTree, UnsafeEntry


class CheckedFiles:
    """``FolderFiles`` of a checked folder: its files through the checker's ``SafeTree``, None when refused."""

    def __init__(self, root: Path):
        self.root = root
        self.tree = SafeTree(root)

    def _read(self, rel: str, cap: int) -> bytes | None:
        try:
            return self.tree.read_bytes(rel, cap)
        except (Missing, UnsafeEntry):
            return None

    def log_file(self, rel: str) -> bytes | None:
        return self._read(rel, LOG_CAP)

    def json_file(self, rel: str) -> bytes | None:
        return self._read(rel, JSON_CAP)

    def outside_json_file(self, rel: str) -> bytes | None:
        """A JSON file above the checked folder (``rel`` starts with '../'; the report asks for a lone
        benchmark folder's ``../../../systems/<system>.json``), read through a ``SafeTree`` rooted at the
        ancestor, so the rest of the path is held to the checker's rules."""
        parts = rel.split("/")
        up = next((i for i, p in enumerate(parts) if p != ".."), len(parts))
        rest = "/".join(parts[up:])
        if up == 0 or not rest or ".." in parts[up:] or up > len(self.root.resolve().parents):
            return None
        try:
            return SafeTree(self.root.resolve().parents[up - 1]).read_bytes(rest, JSON_CAP)
        except (Missing, UnsafeEntry, OSError):
            return None
