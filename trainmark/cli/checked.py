"""A folder or archive checked for `trainmark report` and `trainmark table`, and handed to trainmark.report.

The command layer runs the check (``check_path``, as `trainmark check` does) and gives the report
code the checker's report as JSON plus the checked folder's files, read as the checker reads them
(``SafeTree``: no links, no special files, the checker's caps). An archive is unpacked here, by
the checker's own ``check_archive`` (its limits and findings), and the report's files are read
inside its callback, while the unpacked folder still exists: the report never sees a temporary
folder, an archive or the checker, only ``trainmark-check/1`` JSON and ``FolderFiles``.
"""
from __future__ import annotations

from pathlib import Path

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.read import archive
from trainmark.checker.read.safefs import JSON_CAP, LOG_CAP, Missing, SafeTree, UnsafeEntry
from trainmark.checker.verdict.result import Report
from trainmark.report.collect import BenchmarkView, ReportData, gather
from trainmark.report.table import build_table


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


def _gather(report: Report, options: CheckOptions) -> tuple[list[BenchmarkView], dict[str, dict]]:
    return gather(report.to_dict(), CheckedFiles(Path(report.path)), options.rules_root)


def collect(path: Path | str, options: CheckOptions | None = None) -> ReportData:
    """Check ``path`` (a folder, or an archive unpacked as ``trainmark check`` unpacks it) and gather
    everything the report shows; raises ``UserError`` like the checker."""
    options = options or CheckOptions()
    path = Path(path)
    if path.is_file() and archive.is_archive_name(path):
        gathered: dict = {}

        def check_folder(root: Path, opts: CheckOptions) -> Report:
            report = check_path(root, opts)
            gathered["views"], gathered["systems"] = _gather(report, opts)  # before the folder is removed
            return report

        report = archive.check_archive(path, options, check_folder)
        return ReportData(report.to_dict(), gathered.get("views", []), gathered.get("systems", {}))
    report = check_path(path, options)
    views, systems = _gather(report, options)
    return ReportData(report.to_dict(), views, systems)


def table_of_folders(paths: list[Path], options: CheckOptions) -> dict:
    """Check each folder or archive (archives are unpacked as `trainmark check` does) and tabulate."""
    reports = []
    for path in paths:
        data = collect(path, options)
        reports.append((data.report, data.systems))
    return build_table(reports)
