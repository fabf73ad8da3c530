"""``trainmark package FOLDER -o NAME.tar.gz``: one archive of a submission, and its SHA256SUMS line.

The folder is checked first and a failing one refused (``--allow-failing`` packs it anyway):
an archive is what a submitter hands over, and a failing one used to be packed without a word.
``trainmark check NAME.tar.gz`` reads the archive directly (trainmark.checker.read.archive).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainmark.errors import UserError

DESCRIPTION = """\
Check a submission folder, then write it as one archive NAME.tar.gz (owners, times and
permissions normalised; links and special files refused) and add its line to SHA256SUMS in
the archive's folder. A folder that fails its check is refused (exit 1) unless --allow-failing.
'trainmark check NAME.tar.gz' checks the archive as it was handed over."""

EXAMPLES = """\
  trainmark package submission/ -o acme-v1.1.tar.gz
  trainmark package submission/closed/acme -o acme-closed.tar.gz -q
  trainmark package submission/ -o draft.tar.gz --allow-failing     # a draft to share, not to submit
"""


def register(subparsers) -> None:
    from trainmark.cli.arguments import judge_arguments
    from trainmark.cli.parsing import command

    parser = command(subparsers, "package",
                     help="check a submission folder and write it as NAME.tar.gz with a SHA256SUMS line beside it",
                     description=DESCRIPTION, examples=EXAMPLES)
    parser.add_argument("folder", type=Path,
                        help="a submission root (closed/, open/), a division or a submitter folder")
    out = parser.add_argument_group("output")
    out.add_argument("-o", "--output", type=Path, required=True, metavar="NAME.tar.gz",
                     help="the archive to write (a file, never '-'); SHA256SUMS in the same folder gets its line")
    out.add_argument("--allow-failing", action="store_true",
                     help="pack a folder even when its check finds errors (they are named on standard error)")
    judge_arguments(parser)
    parser.set_defaults(func=run)


def _checked(args: argparse.Namespace) -> None:
    """The folder's check: refused (exit 1) when it fails, unless --allow-failing, which still says so."""
    from trainmark.checker.check import check_path
    from trainmark.cli.arguments import judge_options

    if not args.folder.is_dir():
        raise UserError(f"{args.folder}: not a folder (package a submission, division or submitter folder)")
    report = check_path(args.folder, judge_options(args))
    if report.exit_code == 0:
        return
    counts = report.to_dict()["counts"]
    said = f"{args.folder} fails its check: {counts['error']} error(s), {counts['warning']} warning(s)"
    if not args.allow_failing:
        raise UserError(f"{said}; run 'trainmark check {args.folder}' to see them (or --allow-failing to pack "
                        "it anyway)", 1)
    print(f"trainmark package: warning: {said}; packed anyway (--allow-failing)", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from trainmark.checker.pack import write_archive

    if str(args.output) == "-":
        raise UserError("-o -: package writes an archive file and its SHA256SUMS line; name the file")
    if args.output.parent and not args.output.parent.is_dir():
        raise UserError(f"-o {args.output}: folder {args.output.parent} does not exist")
    _checked(args)
    try:
        path, digest, count = write_archive(args.folder, args.output)
    except OSError as exc:
        raise UserError(f"cannot write {args.output}: {exc.strerror or exc} ({exc.filename or ''})") from None
    if not args.quiet:
        print(f"wrote {path} ({count} members, {path.stat().st_size / 1e6:.1f} MB)")
    print(f"{digest}  {path.name}   (added to {path.parent / 'SHA256SUMS'})")
    return 0
