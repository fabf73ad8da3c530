"""``trainmark compare BASE NEW``: ratios, significance, exit 1 on a slowdown (trainmark.report.compare).

Both sides are checked first: a folder that fails its check used to be compared as if it were
good ("no significant slowdown", exit 0, only the JSON said ``new_passed: false``). Now the first
line says which side failed and the exit status is 1, unless ``--ignore-check``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from trainmark.cli.arguments import judge_arguments, judge_options
from trainmark.errors import UserError

DESCRIPTION = """\
Is NEW slower than BASE, and is it significant? Both are checked first, as 'trainmark check'
does; per benchmark they both hold: the ratios NEW/BASE of the scores, of the mean training
times and of the mean training energy, Welch's one-sided t-test on the logarithms of the
trials' times, and a 95 % bootstrap interval of the ratio of mean times. A benchmark regressed
when the ratio of means exceeds 1 + threshold and the p-value is below alpha.

When BASE or NEW fails its check, the first line of the output says so (on standard error when
standard output is JSON) and the exit status is 1: a failing result proves nothing about speed.
--ignore-check compares anyway (the line is still printed) and returns the comparison's status.

Exit status: 0 no significant slowdown, 1 a slowdown (or a side fails its check), 2 a wrong
call or nothing in common."""

EXAMPLES = """\
  trainmark compare baseline/ candidate/
  trainmark compare base.tar.gz new.tar.gz --format md > comment.md
  trainmark compare base/ new/ --threshold 0.02 --json compare.json -q
"""


def register(subparsers) -> None:
    from trainmark.cli.parsing import add_json, command

    p = command(subparsers, "compare", help="compare two result folders: ratios, significance, exit 1 on a slowdown",
                description=DESCRIPTION, examples=EXAMPLES)
    p.add_argument("base", type=Path, metavar="BASE", help="result folder or archive")
    p.add_argument("new", type=Path, metavar="NEW", help="result folder or archive")
    stats = p.add_argument_group("verdict")
    stats.add_argument("--threshold", type=float, default=0.05,
                       help="a slowdown counts beyond this fraction (0.05: 5 %%)")
    stats.add_argument("--alpha", type=float, default=0.05, help="significance level of the one-sided Welch test")
    stats.add_argument("--ignore-check", action="store_true",
                       help="compare even when a side fails its check (still said on the first line); the exit "
                            "status is then the comparison's alone")
    out = p.add_argument_group("output")
    add_json(out)
    out.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or md for a CI comment")
    judge_arguments(p)
    p.set_defaults(func=run_compare)


def failed_sides(base: dict, new: dict) -> str | None:
    """The line saying which side fails its check, or None when both pass."""
    failing = [(side, report) for side, report in (("BASE", base), ("NEW", new)) if not report["passed"]]
    if not failing:
        return None
    said = "; ".join(f"{side} {report['path']} fails its check ({report['counts']['error']} error(s))"
                     for side, report in failing)
    return f"CHECK FAILED: {said}: run 'trainmark check' on it; the comparison below is not a verdict"


def run_compare(args) -> int:
    import math

    from trainmark.checker.check import check_path
    from trainmark.outputs import ensure_writable, is_stdout, write_output
    from trainmark.report import compare

    if not (math.isfinite(args.threshold) and args.threshold >= 0):
        raise UserError(f"--threshold must be a number >= 0, not {args.threshold}")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must lie between 0 and 1, not {args.alpha}")
    ensure_writable(args.json, "--json")
    options = judge_options(args)
    base = check_path(args.base, options).to_dict()
    new = check_path(args.new, options).to_dict()
    result = compare.compare_reports(base, new, threshold=args.threshold, alpha=args.alpha)
    failed = failed_sides(base, new)
    if args.json is not None:
        write_output(args.json, json.dumps(result, indent=2, allow_nan=False) + "\n", "--json")
    if failed and is_stdout(args.json):
        print(failed, file=sys.stderr)  # standard output is the JSON alone
    if not is_stdout(args.json):
        text = compare.render_markdown(result) if args.format == "md" else compare.render_text(result)
        if failed:
            text = failed + "\n" + ("\n" if args.format == "md" else "") + text
        if args.quiet:  # the check line, if any, and the verdict line
            text = (failed + "\n" if failed else "") + compare.render_text(result).splitlines(keepends=True)[-1]
        sys.stdout.write(text)
    regressed = 1 if result["regressed"] else 0
    return regressed if (failed is None or args.ignore_check) else 1
