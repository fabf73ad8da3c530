"""A progress bar per trial on stderr (epoch, step, running loss, last metric, ETA).

It never touches the logs; ``quiet`` (or a rank other than 0) turns it off.
"""
from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class TrialProgress:
    def __init__(self, enabled: bool):
        self._progress = None
        if enabled:
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[metric]}"),
                TimeElapsedColumn(), TimeRemainingColumn(),
                console=Console(file=sys.stderr), transient=False)
            self._progress.start()
        self._task = None

    def epoch(self, trial: int, epoch: int, max_epochs: int, steps: int, metric_text: str) -> None:
        if self._progress is None:
            return
        description = f"trial {trial} epoch {epoch}/{max_epochs}"
        if self._task is None:
            self._task = self._progress.add_task(description, total=steps, loss="-", metric=metric_text)
        else:
            self._progress.reset(self._task, total=steps, description=description, loss="-", metric=metric_text)

    def step(self, n: int, loss: float | None = None) -> None:
        if self._progress is not None and self._task is not None:
            fields = {"loss": f"{loss:.4f}"} if loss is not None else {}
            self._progress.update(self._task, advance=n, **fields)

    def metric(self, text: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, metric=text)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
