"""trainmark check PATH: validate a result folder or archive and recompute its scores."""
from __future__ import annotations

import argparse
from pathlib import Path

from trainmark.errors import UserError
from trainmark.interrupts import signals_interrupt
from trainmark.outputs import ensure_writable, is_stdout, write_output

FORMATS = ("text", "json", "junit", "sarif")
# without --reevaluate or --no-reevaluate: one trial per mini benchmark (checker/checks/reeval.py's scopes;
# tests/conftest.py turns it off for tests that do not ask for it: a real model evaluated in every CLI test)
DEFAULT_REEVALUATION = "one-per-mini"


DESCRIPTION = """\
Validate a result folder or archive and recompute its scores from the logged event times.

PATH may be a trainmark submission at any level (a root holding closed/ and open/, a division
with one or several submitters, a submitter, a system or a benchmark folder), an MLPerf Training
results folder (a round such as training_results_v4.0 with several submitters, one submitter or
one system), or an archive of either (.tar, .tar.gz, .tgz, .tar.bz2, .tbz2, .tar.xz, .txz, as
'trainmark package' writes), unpacked safely into a temporary folder; zip files are not read.

Exit status: 0 every rule holds, 1 a rule is violated, 2 the input cannot be read or the call
is wrong."""

EXAMPLES = """\
  trainmark check acme.tar.gz --output-format junit --output-file check.xml   # text on the terminal too
  trainmark check training_results_v4.0/ --json report.json -q                # verdict line only
  trainmark check --explain WORK-003                # why a rule exists, what it cannot prove, how to fix it
"""


def register(subparsers) -> None:
    from trainmark.cli.parsing import add_mlperf_ruleset, add_rules_dir, command

    parser = command(subparsers, "check",
                     help="validate a result folder or archive (trainmark or MLPerf Training) and recompute its scores",
                     description=DESCRIPTION, examples=EXAMPLES)
    parser.add_argument("path", type=Path, nargs="?",
                        help="a folder (submission root, division, submitter, system or benchmark; MLPerf round "
                             "or submitter) or an archive of one (.tar.gz and the other tar forms)")
    out = parser.add_argument_group("output")
    out.add_argument("--output-format", "--format", dest="format", choices=FORMATS, default=None,
                     help="text (readable, the default), json (schema trainmark-check/1, docs/checker.md), "
                          "junit (JUnit XML: errors fail, warnings and notes are skipped cases) or sarif (SARIF "
                          "2.1.0); written to standard output, or to --output-file")
    out.add_argument("--output-file", metavar="FILE",
                     help="write the --output-format report to FILE and keep the text report on standard output "
                          "(as pytest --junitxml, ruff --output-file); '-': standard output")
    out.add_argument("--json", nargs="?", const="-", metavar="FILE",
                     help="write JSON to FILE ('-' or no FILE: standard output)")
    out.add_argument("--csv", metavar="FILE",
                     help="write the per-benchmark summary as CSV to FILE ('-': standard output)")
    rules = parser.add_argument_group("rules")
    add_rules_dir(rules)
    rules.add_argument("--system-schema", type=Path, metavar="FILE",
                       help="JSON Schema for systems/<system>.json (default: the harness's)")
    add_mlperf_ruleset(rules)
    again = parser.add_argument_group("re-evaluation")
    which = again.add_mutually_exclusive_group()
    which.add_argument("--reevaluate", action="store_true",
                       help="load every trial's model.safetensors into the model its rules name and evaluate it "
                            "again: a metric away from its own logged one (REEVAL-001) or short of the target "
                            "(REEVAL-002) is an error (needs the evaluation data; docs/checker.md). Without it, "
                            "one trial of each mini benchmark, drawn at random, is re-evaluated where its data "
                            "is found (REEVAL-005 says when it is not)")
    which.add_argument("--no-reevaluate", action="store_true", help="re-evaluate no trial")
    again.add_argument("--data-dir", action="append", default=[], metavar="[BENCHMARK=]DIR",
                       help="the re-evaluation's dataset folder, for every benchmark or for one (repeat it); "
                            "default: the rules' environment variable, else their default folder, as for "
                            "'trainmark run'")
    again.add_argument("--device", default="cpu", help="the re-evaluation's device: cpu, cuda or cuda:INDEX")
    parser.add_argument("--explain", metavar="CODE",
                        help="print a finding code's severity, title, why (what it proves and what it cannot), fix "
                             "and a bad/good example instead of checking ('all': every code; with --json: "
                             "[{code, severity, title, why, fix, example}]); an unknown code is exit 2")
    parser.set_defaults(func=run)


def _stdout_format(args: argparse.Namespace) -> str:
    """The one thing written to standard output; two claims on it are a usage error."""
    to_file = args.output_file is not None and not is_stdout(args.output_file)
    claims = [name for name, wanted in (("--output-format", args.format not in (None, "text") and not to_file
                                         and not is_stdout(args.output_file)),
                                        ("--output-file -", is_stdout(args.output_file)),
                                        ("--json -", is_stdout(args.json)), ("--csv -", is_stdout(args.csv)))
              if wanted]
    if len(claims) > 1 and not (set(claims) <= {"--output-format", "--output-file -", "--json -"}
                                and args.format == "json" and "--csv -" not in claims):
        raise UserError(f"{' and '.join(claims)} both want standard output: write one of them to a FILE")
    if is_stdout(args.json):
        return "json"
    if is_stdout(args.csv):
        return "csv"
    return "text" if to_file else (args.format or "text")


def _formatted(report, fmt: str) -> str:
    from trainmark.checker.verdict.render import to_csv

    if fmt == "json":
        return _json(report)
    if fmt == "csv":
        return to_csv(report)
    from trainmark.checker.verdict.ci_formats import to_junit, to_sarif

    return (to_junit if fmt == "junit" else to_sarif)(report)


def _quiet_text(report) -> str:
    """-q's text: each error on one line, then the verdict line (warnings and notes only counted)."""
    from trainmark.checker.verdict.findings import printable
    from trainmark.checker.verdict.registry import ERROR
    from trainmark.checker.verdict.render import verdict_line

    lines = [f"ERROR {f.rule} {printable((f.file or '.') + (f':{f.line}' if f.line else ''))}: "
             f"{printable(f.message)}" for f in report.findings if f.severity == ERROR]
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"


def _validate(args: argparse.Namespace) -> None:
    """Problems with the call itself, found before any work (exit 2, one line)."""
    if args.system_schema is not None and not args.system_schema.is_file():
        raise UserError(f"--system-schema {args.system_schema}: no such file")
    if args.rules_dir is not None and not args.rules_dir.is_dir():
        raise UserError(f"--rules-dir {args.rules_dir}: not a folder")
    for flag, dest in (("--json", args.json), ("--csv", args.csv), ("--output-file", args.output_file)):
        ensure_writable(dest, flag)
    if args.no_reevaluate and (args.data_dir or args.device != "cpu"):
        raise UserError("--data-dir and --device choose the re-evaluation's data and device: drop --no-reevaluate")


def run(args: argparse.Namespace) -> int:
    from trainmark.checker.check import CheckOptions, check_path
    from trainmark.checker.progress import progress_for
    from trainmark.checker.verdict.render import print_report

    if args.explain is not None:
        return explain(args)
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
    with signals_interrupt(), progress_for(quiet=args.quiet) as progress:
        options = CheckOptions(rules_root=args.rules_dir, system_schema=args.system_schema,
                               mlperf_ruleset=args.mlperf_ruleset, progress=progress, reevaluate=reevaluation(args))
        try:
            report = check_path(args.path, options)
        except OSError as exc:
            raise UserError(f"cannot read {exc.filename or args.path}: {exc.strerror or exc}") from None
    for flag, dest, kind in (("--csv", args.csv, "csv"), ("--json", args.json, "json"),
                             ("--output-file", args.output_file, args.format or "text")):
        if dest is not None and not is_stdout(dest) and kind != "text":
            write_output(dest, _formatted(report, kind), flag)
        elif dest is not None and not is_stdout(dest):
            write_output(dest, _text(report), flag)
    if fmt == "text":
        if args.quiet:
            write_output("-", _quiet_text(report), "-q")
        else:
            print_report(report)
    else:  # what was asked for on standard output, -q or not
        write_output("-", _formatted(report, fmt), "--output-format")
    return report.exit_code


def explain(args: argparse.Namespace) -> int:
    """--explain CODE|all: the registry's rules as text, or as JSON with --json / --output-format json."""
    import json

    from trainmark.checker.verdict import registry

    extra = [flag for flag, given in (("PATH", args.path is not None), ("--csv", args.csv is not None),
                                      ("--output-file", args.output_file is not None),
                                      ("--output-format " + str(args.format), args.format in ("junit", "sarif")))
             if given]
    if extra:
        raise UserError(f"--explain prints rules and checks nothing: drop {', '.join(extra)}")
    if args.explain.strip().lower() == "all":
        rules = registry.ordered()
    else:
        try:
            rules = [registry.lookup(args.explain)]
        except KeyError as exc:
            raise UserError(f"{exc.args[0]} (`trainmark check --explain all` lists them)".replace("`", "'")) from None
    if args.json is not None or args.format == "json":
        destination = args.json if args.json is not None else "-"
        ensure_writable(destination, "--json")
        write_output(destination, json.dumps([r.to_dict() for r in rules], indent=2, ensure_ascii=False) + "\n",
                     "--json")
    else:
        write_output("-", "\n\n".join(r.explained() for r in rules) + "\n", "--explain")
    return 0


def _text(report) -> str:
    """The text report as a file holds it (no colours, wide lines)."""
    import io

    from rich.console import Console

    from trainmark.checker.verdict.render import print_report

    buffer = io.StringIO()
    print_report(report, Console(file=buffer, width=220, soft_wrap=False, highlight=False, color_system=None))
    return buffer.getvalue()


def _json(report) -> str:
    import json

    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def data_dirs(values: list[str]) -> dict[str | None, Path]:
    """``--data-dir DIR`` (every benchmark) or ``--data-dir BENCHMARK=DIR`` (one), repeated."""
    import re

    out: dict[str | None, Path] = {}
    for text in values:
        name, sep, folder = text.partition("=")
        named = bool(sep) and re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name) is not None
        out[name if named else None] = Path(folder if named else text)
    return out


def reevaluation(args: argparse.Namespace):
    """What the check re-evaluates (checker/checks/reeval.py) through the harness's evaluator: every trial
    (--reevaluate), none (--no-reevaluate), or by default one trial per mini benchmark drawn at random."""
    from trainmark.checker.checks.reeval import EVERY, NONE, Reevaluate

    if args.no_reevaluate:
        return None
    from trainmark.harness.reevaluate import Reevaluation

    scope = EVERY if args.reevaluate else DEFAULT_REEVALUATION
    if scope == NONE:
        return None
    # the default spares TensorFlow: a TensorFlow trial's weights are scored by the PyTorch reference
    return Reevaluate(Reevaluation(data_dirs(args.data_dir), args.device, twins=scope == EVERY), scope)
