"""``trainmark table``: a results table in MLPerf's published shape (trainmark.report.table)."""
from __future__ import annotations

from pathlib import Path

from trainmark.cli.arguments import judge_arguments, judge_options
from trainmark.format.text import utf8_text
from trainmark.outputs import emit

DESCRIPTION = """\
Check each folder or archive and tabulate the results in the shape MLPerf publishes them: one
row per system (division, availability, submitter, system, nodes, processor, accelerator,
software), one column per benchmark holding its score, plus the mean training energy where a
system measured it. trainmark scores are seconds of training without evaluation (the olympic
mean); MLPerf scores are minutes, as MLPerf's tables print them. CSV, Markdown or JSON."""

EXAMPLES = """\
  trainmark table submission/ -o results.csv
  trainmark table acme.tar.gz other.tar.gz --format md
  trainmark table submission/ --format json -o - | jq .
"""


def register(subparsers) -> None:
    from trainmark.cli.parsing import add_output, command

    p = command(subparsers, "table", help="results table in MLPerf's published shape (CSV, Markdown, JSON)",
                description=DESCRIPTION, examples=EXAMPLES)
    p.add_argument("paths", type=Path, nargs="+", metavar="FOLDER", help="result folders or archives (one or more)")
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=("csv", "md", "json"), default="csv", help="csv (default), md or json")
    add_output(out)
    judge_arguments(p)
    p.set_defaults(func=run_table)


def run_table(args) -> int:
    from trainmark.cli.checked import table_of_folders
    from trainmark.report import table

    result = table_of_folders(list(args.paths), judge_options(args))
    text = {"csv": table.to_csv, "md": table.to_markdown, "json": table.to_json}[args.format](result)
    emit(utf8_text(text), args.output)  # a name's byte that is not UTF-8: escaped, never UnicodeEncodeError
    return 0
