"""``trainmark run``: train a benchmark to its target over repeated trials.

Its arguments (``arguments.run_arguments``) and its summary table serve ``trainmark calibrate`` too.
"""
from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from trainmark.cli.arguments import run_arguments, run_options
from trainmark.errors import UserError
from trainmark.outputs import table_console

if TYPE_CHECKING:  # the harness imports torch: only the commands that train load it
    from trainmark.harness.run import RunSummary


DESCRIPTION = """\
Train a benchmark to its quality target, trial after trial, and write a submission folder:
<out>/<division>/<submitter>/results/<system>/<benchmark>/ with one MLLOG result file per
trial, the system description and the code's hashes, ready for 'trainmark check'.

Exit status: 0 every trial ran, 1 a trial crashed or was aborted, 2 a wrong call."""

EXAMPLES = """\
  trainmark run resnet-mini --submitter acme --device cuda
  trainmark run resnet-mini --trials 2 --seed 7 -q --out /tmp/try   # fewer trials: an incomplete result
  trainmark run resnet-mini --submitter acme --out submission --resume
"""


def register(sub) -> None:
    from trainmark.cli.parsing import command

    p = command(sub, "run", help="train a benchmark to its target over repeated trials", description=DESCRIPTION,
                examples=EXAMPLES)
    run_arguments(p)
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, default=Path("submission"), help="submission root (default: %(default)s)")
    out.add_argument("--resume", action="store_true", help="continue after the last finished trial")
    p.set_defaults(func=cmd_run)


def summary_table(summary: RunSummary) -> Table:
    table = Table(title=str(summary.bench_dir))
    for col in ("trial", "status", "epochs", "metric", "train s", "total s", "train J", "samples/s", "TFLOPS", "util"):
        table.add_column(col, justify="right", overflow="fold")  # never 'conv…' for converged
    fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    for k, r in enumerate(summary.results, summary.first_trial):
        table.add_row(str(k), r.status, str(r.epochs), fmt(r.final_metric, ".4f"), fmt(r.train_time_s, ".1f"),
                      fmt(r.total_time_s, ".1f"), fmt(r.train_energy_j, ".0f"), fmt(r.train_samples_per_s, ".0f"),
                      fmt(r.achieved_tflops, ".4f"), fmt(r.utilization, ".1%"))
    return table


def _sigterm_is_ctrl_c() -> None:
    """A scheduler's SIGTERM ends the running trial as 'aborted', as Ctrl-C does."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


def run_refusing_with_codes(run, options):
    """``run(options)``, its refusal of settings a check would reject naming the checker's finding codes."""
    from trainmark.rules.admissible import NotAdmissible

    try:
        return run(options)
    except NotAdmissible as exc:
        from trainmark.checker.checks.trials import ADMISSIBLE_CODES

        raise UserError(exc.render(ADMISSIBLE_CODES)) from None


def cmd_run(args) -> int:
    _sigterm_is_ctrl_c()
    from trainmark.harness.run import run_benchmark

    options = run_options(args, args.out, args.resume)
    summary = run_refusing_with_codes(run_benchmark, options)
    if not args.quiet and summary.results:
        table_console(stderr=True).print(summary_table(summary))
    for k, r in summary.crashed.items():  # a crash is never an allowed miss: say which, and fail the run
        print(f"trainmark run: trial {k} {r.status}" + (f": {r.error}" if r.error else ""), file=sys.stderr)
    return 0 if summary.ok else 1
