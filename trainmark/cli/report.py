"""``trainmark report``: a self-contained HTML (or Markdown) report of a result folder.

Heavy imports (the checker, matplotlib, scipy) happen inside the commands, so that
``trainmark --help`` stays light. Files are written atomically; exit status 2 with a
one-line reason when the input cannot be read.
"""
from __future__ import annotations

import sys
from pathlib import Path

from trainmark.cli.arguments import judge_arguments, judge_options
from trainmark.format.text import utf8_text
from trainmark.outputs import emit, is_stdout

DESCRIPTION = """\
Check FOLDER and write one offline HTML page (or Markdown for a CI comment): per benchmark
every trial's curve beside the reference band, time and energy with the evaluation windows
apart, throughput, the system description and the checker's findings (docs/report.md)."""

EXAMPLES = """\
  trainmark report submission/ -o report.html
  trainmark report acme.tar.gz --format md -o - >> "$GITHUB_STEP_SUMMARY"
  trainmark report submission/ --sweep sweep/sweep.json -o report.html -q
"""


def register(subparsers) -> None:
    from trainmark.cli.parsing import add_output, command

    p = command(subparsers, "report", help="a self-contained HTML (or Markdown) report of a result folder",
                description=DESCRIPTION, examples=EXAMPLES)
    p.add_argument("path", type=Path, metavar="FOLDER", help="a result folder or archive, as 'trainmark check' takes")
    out = p.add_argument_group("output")
    add_output(out)
    out.add_argument("--format", choices=("html", "md"), default="html", help="html (default) or md for a CI comment")
    out.add_argument("--sweep", type=Path, action="append", default=[], metavar="SWEEP_JSON",
                     help="add the plots of a 'trainmark sweep' result (its sweep.json); repeatable")
    judge_arguments(p)
    p.set_defaults(func=run_report)


def run_report(args) -> int:
    from trainmark.cli.checked import collect
    from trainmark.report.sweeps import load_sweep

    sweeps = [load_sweep(p) for p in args.sweep]   # bad files fail before the long check
    data = collect(args.path, judge_options(args))
    if args.format == "md":
        from trainmark.report.markdown import render_markdown
        text = render_markdown(data)
    else:
        from trainmark.report.page import render_html
        text = render_html(data, sweeps)
    text = utf8_text(text)  # a byte of a name that is not UTF-8 is shown escaped, never a UnicodeEncodeError
    emit(text, args.output)
    if args.output is not None and not is_stdout(args.output):
        print(f"wrote {args.output} ({len(text.encode('utf-8')):,} bytes); check: "
              f"{'PASS' if data.report['passed'] else 'FAIL'}", file=sys.stderr)
    return 0
