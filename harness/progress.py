"""What ``trainmark run`` tells the person watching it, on stderr: the banner, the trials' progress, a line per
finished trial with the run's ETA.

On a terminal the progress is a live bar per trial (epoch, step, running loss, last metric, ETA). Anywhere else
(CI, ``nohup``, ``| tee``) a live bar leaves one stale frame in the log for an hour, so there it is plain lines,
one per evaluation, with no control character. It never touches the logs; ``quiet`` (or a rank other than 0)
turns it off. stdout is left to the result table (trainmark/cli/run.py).
"""
from __future__ import annotations

import sys
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def hms(seconds: float) -> str:
    """``1:02:03``: the ETAs and wall times a person reads."""
    s = max(0, round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def say(line: str, stream: TextIO | None = None) -> None:
    """One message line on stderr, flushed (a log read while the run goes on shows it at once)."""
    print(line, file=stream or sys.stderr, flush=True)


class TrialProgress:
    def __init__(self, enabled: bool, live: bool | None = None, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self._enabled = enabled
        self._progress = None
        self._at: tuple[int, int, int] | None = None  # (trial, epoch, max_epochs) for the plain lines
        self._live = enabled and (self._stream.isatty() if live is None else live)
        self._task = None

    def _start(self) -> None:
        """A live bar, started at a trial's first epoch (each finished trial's line goes between two bars)."""
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[metric]}"),
            TimeElapsedColumn(), TimeRemainingColumn(),
            console=Console(file=self._stream), transient=False)
        self._progress.start()
        self._task = None

    def epoch(self, trial: int, epoch: int, max_epochs: int, steps: int, metric_text: str) -> None:
        self._at = (trial, epoch, max_epochs)
        if self._live and self._progress is None:
            self._start()
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
        elif self._enabled and self._at is not None:  # plain: one line per evaluation
            trial, epoch, max_epochs = self._at
            say(f"  trial {trial}, epoch {epoch} of at most {max_epochs}: {text}", self._stream)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def banner(*, benchmark: str, rules_version: str, division: str, target: str, every_epochs: int,
           max_epochs: int, model: str, model_note: str, parameters: int | None, framework: str, device: str,
           precision: str, batch_size: int, trials: int, first_trial: int, base_seed: int, out: Any,
           size: str | None = None) -> list[str]:
    """What a run is about to do, before its first trial: the lines a reviewer of the log needs first."""
    cadence = "after every epoch" if every_epochs == 1 else f"every {every_epochs} epochs"
    params = f"{model_note}; " + (size or (f"{parameters:,} parameters" if parameters is not None
                                           else "parameters unknown"))  # size: harness/model_line.py
    first, last = base_seed + first_trial - 1, base_seed + trials - 1
    todo = (f"{trials} trial{'s' if trials != 1 else ''}" if first_trial == 1
            else f"trials {first_trial} to {trials} of {trials} (resumed: 1 to {first_trial - 1} are done)")
    seeds = f"seed {first}" if first == last else f"seeds {first} to {last}"
    return [
        f"trainmark run: {benchmark} (rules {rules_version}, {division} division): target {target}, evaluated "
        f"{cadence}, at most {max_epochs} epochs per trial",
        f"  model {model} ({params}), framework {framework}, device {device}, precision {precision}, "
        f"global batch size {batch_size}",
        f"  {todo}, {seeds} (trial k: {base_seed} + k - 1)",
        f"  results into {out}",
    ]


def trial_line(k: int, trials: int, result: Any, metric_name: str, eta_s: float | None,
               full_curve: bool = False) -> str:
    """``trial 2 of 5: converged after 5 epochs, top1_accuracy 0.9245, train 192.1 s (201.1 s with evaluation);
    run ETA 0:08:15``: one line per finished trial, whatever its status. ``full_curve`` (``calibrate
    --full-curves``): the trial ignored the target and trained every epoch, so it did not miss one."""
    missed = "trained its full curve" if full_curve else "missed the target"
    status = {"converged": "converged", "not_converged": missed}.get(result.status, result.status)
    parts = [f"{status} after {result.epochs} epoch{'s' if result.epochs != 1 else ''}"]
    if result.final_metric is not None:
        parts.append(f"{metric_name} {result.final_metric:.4f}")
    if result.train_time_s is not None:
        total = f" ({result.total_time_s:.1f} s with evaluation)" if result.total_time_s is not None else ""
        parts.append(f"train {result.train_time_s:.1f} s{total}")
    line = f"trial {k} of {trials}: " + ", ".join(parts)
    if result.error and result.status != "not_converged":
        line += f" ({result.error.splitlines()[-1] if result.error.strip() else result.error})"
    return line + (f"; run ETA {hms(eta_s)}" if eta_s is not None else "")
