"""``trainmark calibrate``: reference trials to a scratch folder; prints epochs-to-target.

It takes ``trainmark run``'s arguments and prints its summary table; harness/calibration.py
computes the statistics it reports.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from rich.console import Console

from trainmark.cli.arguments import run_arguments, run_options
from trainmark.cli.run import summary_table


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="reference trials to a scratch folder; prints epochs-to-target")
    run_arguments(p)
    p.add_argument("--full-curves", action="store_true",
                   help="train every trial to the rules' max_epochs and derive epochs-to-target from the curves, "
                        "so that one calibration can also judge other targets (--what-if)")
    p.add_argument("--what-if", type=float, action="append", default=[], metavar="TARGET",
                   help="with --full-curves: also report epochs-to-target for this target (repeatable)")
    p.add_argument("--max-epochs", type=int,
                   help="with --full-curves: stop each trial after this many epochs (default: the rules' max_epochs)")
    p.set_defaults(func=cmd_calibrate, trials=None)


def cmd_calibrate(args) -> int:
    from trainmark.harness import calibration
    from trainmark.rules.ruleset import get_rules

    rules = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    with tempfile.TemporaryDirectory(prefix="trainmark-calibrate-") as tmp:
        from trainmark.harness.run import run_benchmark

        summary = run_benchmark(run_options(args, Path(tmp)))
        load = calibration.other_loads(summary)
    Console(stderr=True).print(summary_table(summary))
    if not args.full_curves:
        report, ok = calibration.target_report(args.benchmark, rules, summary, load)
    else:
        report, ok = calibration.curves_report(args.benchmark, rules, summary, args.seed, args.what_if, load)
    print(json.dumps(report, indent=2))
    return 0 if ok else 1
