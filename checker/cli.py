"""``trainmark check PATH``: validate a result folder and recompute its scores.

Exit status: 0 every rule holds, 1 a rule is violated, 2 the input cannot be read or
the call is wrong.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainmark.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check", help="validate a result folder (trainmark or MLPerf Training) and recompute its scores",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="a submission root, division, submitter, system or benchmark folder")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (schema trainmark-check/1, "
                        "see docs/checker.md)")
    parser.add_argument("--quiet", action="store_true", help="print nothing; only the exit status tells")
    parser.add_argument("--csv", type=Path, metavar="FILE", help="write the per-benchmark summary as CSV to FILE")
    parser.add_argument("--rules-dir", type=Path, metavar="DIR",
                        help="judge with the rules under DIR (DIR/<version>/<benchmark>.yaml) instead of the shipped ones")
    parser.add_argument("--system-schema", type=Path, metavar="FILE",
                        help="JSON Schema for systems/<system>.json (default: the harness's)")
    parser.add_argument("--mlperf-ruleset", metavar="X.Y.Z",
                        help="MLPerf Training ruleset for MLPerf folders (default: from the path, e.g. 'v4.0', "
                             "else the newest mlperf-logging knows)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainmark.checker.check import CheckOptions, check_path
    from trainmark.checker.render import print_report, to_csv

    options = CheckOptions(rules_root=args.rules_dir, system_schema=args.system_schema,
                           mlperf_ruleset=args.mlperf_ruleset)
    report = check_path(args.path, options)
    if args.csv is not None:
        try:
            args.csv.write_text(to_csv(report), encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {args.csv}: {exc}") from None
    if args.quiet:
        return report.exit_code
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print_report(report)
    return report.exit_code
