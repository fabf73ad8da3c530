"""``trainmark table``: a results table in MLPerf's published shape (trainmark.report.table)."""
from __future__ import annotations

import argparse
from pathlib import Path

from trainmark.cli.arguments import judge_arguments, judge_options
from trainmark.format.text import utf8_text
from trainmark.outputs import emit


def register(subparsers) -> None:
    p = subparsers.add_parser("table", help="results table in MLPerf's published shape (CSV, Markdown, JSON)",
                              description=__import__("trainmark.report.table", fromlist=["x"]).__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", type=Path, nargs="+", metavar="FOLDER", help="result folders or archives (one or more)")
    p.add_argument("--format", choices=("csv", "md", "json"), default="csv", help="csv (default), md or json")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here (default: standard output)")
    judge_arguments(p)
    p.set_defaults(func=run_table)


def run_table(args) -> int:
    from trainmark.cli.checked import table_of_folders
    from trainmark.report import table

    result = table_of_folders(list(args.paths), judge_options(args))
    text = {"csv": table.to_csv, "md": table.to_markdown, "json": table.to_json}[args.format](result)
    emit(utf8_text(text), args.output)  # a name's byte that is not UTF-8: escaped, never UnicodeEncodeError
    return 0
