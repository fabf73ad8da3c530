"""The parser every ``trainmark`` command is built with, and the flags whose meaning is the same everywhere.

Why one class: argparse accepts abbreviations by default (``--form json`` meant ``--format``), so
adding an option later broke scripts; a mistyped command or choice got a list of every name and a
usage block instead of "did you mean". ``Parser`` turns abbreviations off, suggests the closest
name (``difflib``) and prints one error line; subparsers inherit it (argparse's ``parser_class``).
Standard library only: ``trainmark --help`` stays light.
"""
from __future__ import annotations

import argparse
import difflib

QUIET_HELP = ("only errors, the output asked for and the final line (verdict or file written): "
              "no progress or other messages")
RULES_VERSION_HELP = "rules version, e.g. 1.1 (default: the latest shipped rules, {latest})"
RULES_DIR_HELP = "read the rules from DIR/<version>/<benchmark>.yaml instead of the shipped ones"
JSON_HELP = "write JSON to FILE ('-' or no FILE: standard output)"
OUTPUT_HELP = "write to FILE ('-': standard output, the default)"
MLPERF_RULESET_HELP = ("MLPerf Training ruleset for MLPerf folders (default: from the path, e.g. 'v4.0', else the "
                       "one ruleset that holds every benchmark present; never guessed: exit 2 names the candidates)")
STDOUT = "-"


def suggestion(value: str, names) -> str:
    """' (did you mean X?)' for the closest of ``names``, or ''."""
    close = difflib.get_close_matches(str(value), [str(n) for n in names], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """No abbreviations, examples shown as written, a one-line error with a suggestion for a mistyped name."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False  # an option added later must never break a script that abbreviated another
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            what = "command" if isinstance(action, argparse._SubParsersAction) else "choice"
            choices = ", ".join(map(str, action.choices))
            raise argparse.ArgumentError(
                action, f"unknown {what} {value!r}{suggestion(value, action.choices)}; choose from {choices}")
        super()._check_value(action, value)

    def error(self, message: str):
        """One line (a usage block buries the reason), exit 2 as argparse does."""
        self.exit(2, f"{self.prog}: error: {message} ('{self.prog} --help' explains)\n")


def command(sub, name: str, *, help: str, description: str, examples: str, quiet: bool = True) -> Parser:
    """A command's parser: its description, its examples as the help's epilog, and -q/--quiet."""
    parser = sub.add_parser(name, help=help, description=description,
                            epilog="examples:\n" + examples.rstrip("\n"),
                            formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    if quiet:
        add_quiet(parser)
    return parser


def add_quiet(parser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)


def add_json(parser, dest: str = "json") -> None:
    """``--json [FILE]``: the same kind of flag in every command ('-' or no FILE: standard output)."""
    parser.add_argument("--json", nargs="?", const=STDOUT, metavar="FILE", dest=dest, help=JSON_HELP)


def add_output(parser) -> None:
    """``-o/--output FILE``, '-' standard output."""
    from pathlib import Path

    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help=OUTPUT_HELP)


def add_rules_version(parser, latest: str) -> None:
    parser.add_argument("--rules-version", default=latest, metavar="VERSION",
                        help=RULES_VERSION_HELP.format(latest=latest))


def add_mlperf_ruleset(parser) -> None:
    parser.add_argument("--mlperf-ruleset", metavar="X.Y.Z", help=MLPERF_RULESET_HELP)


def add_rules_group(parser, latest: str):
    """The "rules" option group of the commands that train or measure: --rules-version and --rules-dir."""
    group = parser.add_argument_group("rules")
    add_rules_version(group, latest)
    add_rules_dir(group)
    return group


def add_measured_output(parser, default_folder: str, no_plots_help: str):
    """The "output" option group of ``sweep`` and ``scale``: --out FOLDER and --no-plots."""
    from pathlib import Path

    group = parser.add_argument_group("output")
    group.add_argument("--out", type=Path, default=Path(default_folder), help="output folder (default: %(default)s)")
    group.add_argument("--no-plots", action="store_true", help=no_plots_help)
    return group


def add_rules_dir(parser) -> None:
    from pathlib import Path

    parser.add_argument("--rules-dir", type=Path, metavar="DIR", help=RULES_DIR_HELP)
