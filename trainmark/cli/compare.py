"""``trainmark compare BASE NEW``: ratios, significance, exit 1 on a slowdown (trainmark.report.compare)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainmark.cli.arguments import judge_arguments, judge_options
from trainmark.errors import UserError


def register(subparsers) -> None:
    p = subparsers.add_parser("compare", help="compare two result folders: ratios, significance, exit 1 on a slowdown",
                              description=__import__("trainmark.report.compare", fromlist=["x"]).__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path, metavar="BASE", help="result folder or archive")
    p.add_argument("new", type=Path, metavar="NEW", help="result folder or archive")
    p.add_argument("--threshold", type=float, default=0.05, help="a slowdown counts beyond this fraction (0.05: 5 %%)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the one-sided Welch test")
    p.add_argument("--json", action="store_true", help="print JSON (schema trainmark-compare/1)")
    p.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or md for a CI comment")
    judge_arguments(p)
    p.set_defaults(func=run_compare)


def run_compare(args) -> int:
    import math

    from trainmark.checker.check import check_path
    from trainmark.report import compare

    if not (math.isfinite(args.threshold) and args.threshold >= 0):
        raise UserError(f"--threshold must be a number >= 0, not {args.threshold}")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must lie between 0 and 1, not {args.alpha}")
    options = judge_options(args)
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
