"""Progress of a long check on standard error: only on a terminal, never with ``--quiet``.

A tree of hundreds of files took half a minute of silence. The bar goes to standard
error so that standard output stays the report (text, JSON, CSV, JUnit, SARIF) and a
pipe or CI log never receives it.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from trainmark.checker.verdict.findings import printable

ProgressCallback = Callable[[int, int, str], None]  # (folders done, folders in all, the folder now checked)


@contextlib.contextmanager
def progress_for(quiet: bool, console: Console | None = None) -> Iterator[ProgressCallback | None]:
    """A callback that shows progress, or ``None`` where nothing should be shown."""
    console = console or Console(stderr=True)
    if quiet or not console.is_terminal:
        yield None
        return
    with Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=escape(printable(label)))
        yield update
