"""``trainmark package FOLDER -o NAME.tar.gz``: one archive of a submission, and its SHA256SUMS line.

``trainmark check NAME.tar.gz`` reads the archive directly (trainmark.checker.read.archive).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from trainmark.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "package", help="write a submission folder as NAME.tar.gz with a SHA256SUMS line beside it",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path,
                        help="a submission root (closed/, open/), a division or a submitter folder")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="NAME.tar.gz",
                        help="the archive to write; SHA256SUMS in the same folder gets its line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainmark.checker.read.archive import write_archive

    if args.output.parent and not args.output.parent.is_dir():
        raise UserError(f"-o {args.output}: folder {args.output.parent} does not exist")
    try:
        path, digest, count = write_archive(args.folder, args.output)
    except OSError as exc:
        raise UserError(f"cannot write {args.output}: {exc.strerror or exc} ({exc.filename or ''})") from None
    print(f"wrote {path} ({count} members, {path.stat().st_size / 1e6:.1f} MB)")
    print(f"{digest}  {path.name}   (added to {path.parent / 'SHA256SUMS'})")
    return 0
