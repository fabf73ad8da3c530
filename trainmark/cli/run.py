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
from trainmark.format import layout
from trainmark.outputs import table_console

if TYPE_CHECKING:  # the harness imports torch: only the commands that train load it
    from trainmark.harness.run import RunSummary


DESCRIPTION = """\
Train a benchmark to its quality target, trial after trial, and write a submission folder:
<out>/<division>/<submitter>/results/<system>/<benchmark>/ with one MLLOG result file per
trial, the system description and the code's hashes, ready for 'trainmark check'.

Output: a banner and a line per finished trial on stderr (a live progress bar on a terminal, plain
lines otherwise), then the result table of the folder's trials on stdout; -q: only the result folder
and the verdict, on stdout.

Exit status: 0 every trial finished and no more missed the target than the rules allow; 1 a trial
crashed, or more trials missed the target than the rules allow (one line says which); 2 a wrong call,
or settings the rules refuse (nothing is written); 130 interrupted by Ctrl-C or SIGTERM (the finished
trials are kept, and the line printed is the --resume command that carries on)."""

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
    for k, r in enumerate(summary.all_results, 1):
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
    from trainmark.harness.run import RunInterrupted, run_benchmark

    options = run_options(args, args.out, args.resume)
    try:
        summary = run_refusing_with_codes(run_benchmark, options)
    except RunInterrupted as stop:
        print(interrupted_message(stop, args), file=sys.stderr)
        return 130
    for k, r in summary.crashed.items():  # a crash is never an allowed miss: say which, and fail the run
        first = r.error.strip().splitlines()[0] if r.error and r.error.strip() else ""
        where = f" (traceback: {summary.bench_dir / layout.trial_dir(k) / layout.TRIAL_JSON})" \
            if "\n" in r.error.strip() else ""
        print(f"trainmark run: trial {k} {r.status}" + (f": {first}{where}" if first else ""), file=sys.stderr)
    if args.quiet:
        print(f"{summary.bench_dir}: {summary.verdict()}", flush=True)
    else:
        if summary.all_results:
            table_console().print(summary_table(summary))  # stdout: the result; messages stay on stderr
        print(f"trainmark run: {summary.verdict()}", file=sys.stderr)
    return 0 if summary.ok else 1


def resume_command(args, base_seed: int) -> str:
    """The command line as typed, with --resume (and the base seed when none was given): it carries on."""
    import os
    import shlex

    prog = [sys.argv[0]] if os.path.basename(sys.argv[0]) == "trainmark" else [sys.executable, "-P", "-m", "trainmark"]
    argv = list(getattr(args, "argv", None) or ["run", args.benchmark])
    if args.seed is None:
        argv += ["--seed", str(base_seed)]
    if "--resume" not in argv:
        argv.append("--resume")
    return " ".join(shlex.quote(a) for a in [*prog, *argv])


def interrupted_message(stop, args) -> str:
    """What Ctrl-C leaves and how to carry on, in two lines."""
    kept = (f"trials 1-{stop.trial - 1} are kept" if stop.trial > 2 else
            "trial 1 is kept" if stop.trial == 2 else "no trial had finished")
    return (f"trainmark run: interrupted during trial {stop.trial} of {stop.trials}; {kept} in {stop.bench_dir} "
            f"(--resume archives trial {stop.trial}'s files under interrupted/ and runs it again); continue with:\n"
            f"  {resume_command(args, stop.base_seed)}")
