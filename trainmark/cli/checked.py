"""A folder or archive checked for `trainmark report` and `trainmark table`, and handed to trainmark.report.

The command layer runs the check (``checked``, as `trainmark check` does: an archive is unpacked by the
checker into a temporary folder that exists until the block ends) and gives the report code the
checker's report as JSON plus the checked folder's files (``CheckedFiles``, read as the checker reads
them): the report never sees a temporary folder, an archive or the checker, only ``trainmark-check/1``
JSON and ``FolderFiles``.
"""
from __future__ import annotations

from pathlib import Path

from trainmark.checker.check import CheckOptions, checked
from trainmark.checker.read.folder_files import CheckedFiles
from trainmark.report.collect import ReportData, gather
from trainmark.report.table import build_table


def collect(path: Path | str, options: CheckOptions | None = None) -> ReportData:
    """Check ``path`` (a folder, or an archive unpacked as ``trainmark check`` unpacks it) and gather
    everything the report shows; raises ``UserError`` like the checker."""
    options = options or CheckOptions()
    with checked(path, options) as (report, folder):
        document = report.to_dict()
        if folder is None:  # a refused archive: nothing to read
            return ReportData(document, [], {})
        # the folder read, not the archive: a lone benchmark folder's system lies by the folder's path
        views, systems = gather({**document, "path": str(folder)}, CheckedFiles(folder), options.rules_root)
    return ReportData(document, views, systems)


def table_of_folders(paths: list[Path], options: CheckOptions) -> dict:
    """Check each folder or archive (archives are unpacked as `trainmark check` does) and tabulate."""
    reports = []
    for path in paths:
        data = collect(path, options)
        reports.append((data.report, data.systems))
    return build_table(reports)
