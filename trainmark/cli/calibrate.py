"""``trainmark calibrate``: reference trials to a scratch folder; prints epochs-to-target.

It takes ``trainmark run``'s arguments and prints its summary table; harness/calibration.py
computes the statistics it reports.
"""
from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

from rich.console import Console

from trainmark.cli.arguments import run_arguments, run_options
from trainmark.cli.run import summary_table

DESCRIPTION = """\
Run reference trials into a temporary folder (removed afterwards) and print, as JSON, the
epochs each trial needed to reach the target and their statistics: how a rules author picks
a target and a trial count. It takes the options of 'trainmark run'."""

EXAMPLES = """\
  trainmark calibrate resnet-mini --trials 5 --seed 1
  trainmark calibrate resnet-mini --full-curves --what-if 0.72 --what-if 0.75 -q
"""


def register(sub) -> None:
    from trainmark.cli.parsing import command

    p = command(sub, "calibrate", help="reference trials to a scratch folder; prints epochs-to-target",
                description=DESCRIPTION, examples=EXAMPLES)
    run_arguments(p)
    cal = p.add_argument_group("calibration")
    cal.add_argument("--full-curves", action="store_true",
                   help="train every trial to the rules' max_epochs and derive epochs-to-target from the curves, "
                        "so that one calibration can also judge other targets (--what-if)")
    cal.add_argument("--what-if", type=float, action="append", default=[], metavar="TARGET",
                   help="with --full-curves: also report epochs-to-target for this target (repeatable)")
    cal.add_argument("--max-epochs", type=int,
                   help="with --full-curves: stop each trial after this many epochs (default: the rules' max_epochs)")
    p.set_defaults(func=cmd_calibrate, trials=None)


def cmd_calibrate(args) -> int:
    from trainmark.harness import calibration
    from trainmark.rules.ruleset import get_rules

    rules = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    with tempfile.TemporaryDirectory(prefix="trainmark-calibrate-") as tmp:
        from trainmark.harness.run import run_benchmark

        summary = run_benchmark(dataclasses.replace(run_options(args, Path(tmp)), submission=False))
        load = calibration.other_loads(summary)
    if not args.quiet:
        Console(stderr=True).print(summary_table(summary))
    if not args.full_curves:
        report, ok = calibration.target_report(args.benchmark, rules, summary, load)
    else:
        report, ok = calibration.curves_report(args.benchmark, rules, summary, args.seed, args.what_if, load)
    print(json.dumps(report, indent=2))
    return 0 if ok else 1
