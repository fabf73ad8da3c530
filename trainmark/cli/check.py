"""trainmark check PATH: validate a result folder and recompute its scores.

Exit status: 0 every rule holds, 1 a rule is violated, 2 the input cannot be read or
the call is wrong.
"""
from __future__ import annotations

import argparse
import signal
from pathlib import Path

from trainmark.errors import UserError
from trainmark.outputs import ensure_writable, is_stdout, write_output

FORMATS = ("text", "json", "junit", "sarif")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check", help="validate a result folder (trainmark or MLPerf Training) and recompute its scores",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, nargs="?",
                        help="a submission root, division, submitter, system or benchmark folder")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="what goes to standard output: a readable report (text, the default), the JSON "
                             "report (schema trainmark-check/1, docs/checker.md), JUnit XML or SARIF 2.1.0 for CI")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="write the JSON report to FILE ('-' or no FILE: standard output, as --format json)")
    parser.add_argument("--csv", metavar="FILE",
                        help="write the per-benchmark summary as CSV to FILE ('-': standard output)")
    parser.add_argument("--quiet", action="store_true",
                        help="print nothing on standard output or error; only the exit status (and FILEs) tell")
    parser.add_argument("--rules-dir", type=Path, metavar="DIR",
                        help="judge with the rules under DIR (DIR/<version>/<benchmark>.yaml) "
                             "instead of the shipped ones")
    parser.add_argument("--system-schema", type=Path, metavar="FILE",
                        help="JSON Schema for systems/<system>.json (default: the harness's)")
    parser.add_argument("--mlperf-ruleset", metavar="X.Y.Z",
                        help="MLPerf Training ruleset for MLPerf folders (default: from the path, e.g. 'v4.0', "
                             "else the newest mlperf-logging knows)")
    parser.set_defaults(func=run)


def _stdout_format(args: argparse.Namespace) -> str:
    """The one thing written to standard output; two claims on it are a usage error."""
    claims = [name for name, wanted in (("--format", args.format not in (None, "text")),
                                        ("--json -", is_stdout(args.json)), ("--csv -", is_stdout(args.csv)))
              if wanted]
    if len(claims) > 1 and not (claims == ["--format", "--json -"] and args.format == "json"):
        raise UserError(f"{' and '.join(claims)} both want standard output: write one of them to a FILE")
    if is_stdout(args.json):
        return "json"
    if is_stdout(args.csv):
        return "csv"
    return args.format or "text"


def _signals_end_the_check() -> None:
    """SIGTERM and SIGHUP end the check like Ctrl-C, so its temporary folder is removed on the way out."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            try:
                signal.signal(getattr(signal, name), interrupt)
            except ValueError:  # not the main thread (an embedding program): leave its handlers alone
                pass


def _validate(args: argparse.Namespace) -> None:
    """Problems with the call itself, found before any work (exit 2, one line)."""
    if args.system_schema is not None and not args.system_schema.is_file():
        raise UserError(f"--system-schema {args.system_schema}: no such file")
    if args.rules_dir is not None and not args.rules_dir.is_dir():
        raise UserError(f"--rules-dir {args.rules_dir}: not a folder")
    for flag, dest in (("--json", args.json), ("--csv", args.csv)):
        ensure_writable(dest, flag)


def run(args: argparse.Namespace) -> int:
    from trainmark.checker.check import CheckOptions, check_path
    from trainmark.checker.progress import progress_for
    from trainmark.checker.verdict.render import print_report, to_csv

    if args.path is None:  # 'check --json FOLDER': the folder was taken as --json's FILE
        if args.json is not None and Path(args.json).is_dir():
            args.path, args.json = Path(args.json), "-"
        else:
            raise UserError("which folder? usage: trainmark check PATH [options]")
    fmt = _stdout_format(args)
    try:
        _validate(args)
    except OSError as exc:  # e.g. a path longer than PATH_MAX
        raise UserError(f"{exc.filename or args.path}: {exc.strerror or exc}") from None
    _signals_end_the_check()
    with progress_for(quiet=args.quiet) as progress:
        options = CheckOptions(rules_root=args.rules_dir, system_schema=args.system_schema,
                               mlperf_ruleset=args.mlperf_ruleset, progress=progress)
        try:
            report = check_path(args.path, options)
        except OSError as exc:
            raise UserError(f"cannot read {exc.filename or args.path}: {exc.strerror or exc}") from None
    if args.csv is not None and not is_stdout(args.csv):
        write_output(args.csv, to_csv(report), "--csv")
    if args.json is not None and not is_stdout(args.json):
        write_output(args.json, _json(report), "--json")
    if args.quiet:
        return report.exit_code
    if fmt == "text":
        print_report(report)
    elif fmt == "json":
        write_output("-", _json(report), "--json")
    elif fmt == "csv":
        write_output("-", to_csv(report), "--csv")
    else:
        from trainmark.checker.verdict.ci_formats import to_junit, to_sarif
        write_output("-", (to_junit if fmt == "junit" else to_sarif)(report), "--format")
    return report.exit_code


def _json(report) -> str:
    import json

    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"
