"""The ``trainmark`` command: one module per command in this package (``trainmark.cli.NAME``).

A command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed arguments and returning an exit status.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from trainmark import __version__
from trainmark.cli.parsing import Parser
from trainmark.errors import UserError
from trainmark.format.text import printable  # stdlib only: keeps --help light

# Adding a command means adding its module here (one module per command, in `trainmark --help`'s order).
COMMAND_MODULES = [
    "trainmark.cli.run",
    "trainmark.cli.list_benchmarks",  # list
    "trainmark.cli.calibrate",
    "trainmark.cli.rules",      # rules list|show|docs|compliance|code-hashes
    "trainmark.cli.data",       # data verify|prepare
    "trainmark.cli.check",
    "trainmark.cli.package",
    "trainmark.cli.ops",        # ops, and ops --op allreduce
    "trainmark.cli.sweep",
    "trainmark.cli.profile",    # per-operator profile, roofline; --all: workload characterization
    "trainmark.cli.report",
    "trainmark.cli.compare",
    "trainmark.cli.table",
    "trainmark.cli.scale",
]


USER_DESCRIPTION = """\
Time-to-quality training benchmarks and a compliance checker for AI accelerators.

  trainmark list                          the benchmarks, their data and quality targets
  trainmark run resnet-mini --submitter X train to the target, trial after trial
  trainmark check submission/             validate a result folder and recompute its scores

'trainmark COMMAND --help' explains a command; README.md and docs/ in trainmark's source tree (not
installed with the package) explain the formats, the checks and the rules.
Every command takes -q/--quiet; '-' as an output FILE (-o, --output, --json, --csv) is standard output
(but for package -o, which writes an archive);
options are never abbreviated (write them in full)."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="trainmark", description=USER_DESCRIPTION,
                    formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"trainmark {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real missing dependency, not a command still to come
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from trainmark.leftovers import remove_empty_inductor_cache_at_exit
    from trainmark.outputs import robust_stdio

    robust_stdio()  # an odd byte in a name is escaped, never a UnicodeEncodeError
    remove_empty_inductor_cache_at_exit()  # torch creates it at import; trainmark never compiles
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: run's --resume hint repeats it
    try:
        return int(args.func(args) or 0)
    except UserError as exc:  # one line, whatever names the message quotes
        print(f"trainmark {args.command}: error: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"trainmark {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # the environment, not a bug: disk full, a folder not writable, a path too long
        from trainmark.outputs import os_error_line

        print(f"trainmark {args.command}: error: {printable(os_error_line(exc))}", file=sys.stderr)
        return 2
