"""``trainmark report``, ``trainmark compare`` and ``trainmark table``.

Heavy imports (the checker, matplotlib, scipy) happen inside the commands, so that
``trainmark --help`` stays light. Files are written atomically; exit status 2 with a
one-line reason when the input cannot be read.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainmark.errors import UserError


def _check_options(args):
    from trainmark.checker.check import CheckOptions

    return CheckOptions(rules_root=args.rules_dir, mlperf_ruleset=args.mlperf_ruleset)


def _common(parser) -> None:
    parser.add_argument("--rules-dir", type=Path, metavar="DIR", help="judge with the rules under DIR instead of the "
                        "shipped ones (as `trainmark check --rules-dir`)")
    parser.add_argument("--mlperf-ruleset", metavar="X.Y.Z", help="MLPerf Training ruleset for MLPerf folders")


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    from trainmark.files import write_atomic

    try:
        write_atomic(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="a self-contained HTML (or Markdown) report of a result folder",
                              description="Check FOLDER and write one offline HTML page: per benchmark every trial's "
                              "curve beside the reference band, time and energy with the evaluation windows apart, "
                              "throughput, the system description and the checker's findings (docs/report.md).")
    p.add_argument("path", type=Path, metavar="FOLDER", help="a result folder or archive, as `trainmark check` takes")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here (default: standard output)")
    p.add_argument("--format", choices=("html", "md"), default="html", help="html (default) or md for a CI comment")
    p.add_argument("--sweep", type=Path, action="append", default=[], metavar="SWEEP_JSON",
                   help="add the plots of a `trainmark sweep` result (its sweep.json); repeatable")
    _common(p)
    p.set_defaults(func=run_report)

    p = subparsers.add_parser("compare", help="compare two result folders: ratios, significance, exit 1 on a slowdown",
                              description=__import__("trainmark.report.compare", fromlist=["x"]).__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path, metavar="BASE", help="result folder or archive")
    p.add_argument("new", type=Path, metavar="NEW", help="result folder or archive")
    p.add_argument("--threshold", type=float, default=0.05, help="a slowdown counts beyond this fraction (0.05: 5 %%)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the one-sided Welch test")
    p.add_argument("--json", action="store_true", help="print JSON (schema trainmark-compare/1)")
    p.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or md for a CI comment")
    _common(p)
    p.set_defaults(func=run_compare)

    p = subparsers.add_parser("table", help="results table in MLPerf's published shape (CSV, Markdown, JSON)",
                              description=__import__("trainmark.report.table", fromlist=["x"]).__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", type=Path, nargs="+", metavar="FOLDER", help="result folders or archives (one or more)")
    p.add_argument("--format", choices=("csv", "md", "json"), default="csv", help="csv (default), md or json")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here (default: standard output)")
    _common(p)
    p.set_defaults(func=run_table)


def run_report(args) -> int:
    from trainmark.report.collect import collect
    from trainmark.report.sweeps import load_sweep

    sweeps = [load_sweep(p) for p in args.sweep]   # bad files fail before the long check
    data = collect(args.path, _check_options(args))
    if args.format == "md":
        from trainmark.report.markdown import render_markdown
        text = render_markdown(data)
    else:
        from trainmark.report.page import render_html
        text = render_html(data, sweeps)
    _emit(text, args.output)
    if args.output is not None:
        print(f"wrote {args.output} ({len(text.encode('utf-8')):,} bytes); check: "
              f"{'PASS' if data.report['passed'] else 'FAIL'}", file=sys.stderr)
    return 0


def run_compare(args) -> int:
    import math

    from trainmark.checker.check import check_path
    from trainmark.report import compare

    if not (math.isfinite(args.threshold) and args.threshold >= 0):
        raise UserError(f"--threshold must be a number >= 0, not {args.threshold}")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must lie between 0 and 1, not {args.alpha}")
    options = _check_options(args)
    base = check_path(args.base, options).to_dict()
    new = check_path(args.new, options).to_dict()
    result = compare.compare_reports(base, new, threshold=args.threshold, alpha=args.alpha)
    if args.json:
        text = json.dumps(result, indent=2, allow_nan=False) + "\n"
    elif args.format == "md":
        text = compare.render_markdown(result)
    else:
        text = compare.render_text(result)
    sys.stdout.write(text)
    return 1 if result["regressed"] else 0


def run_table(args) -> int:
    from trainmark.report import table

    result = table.table_of_folders(list(args.paths), _check_options(args))
    text = {"csv": table.to_csv, "md": table.to_markdown, "json": table.to_json}[args.format](result)
    _emit(text, args.output)
    return 0
