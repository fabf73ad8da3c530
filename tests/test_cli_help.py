"""Every command and option of `trainmark` explains itself in --help, in plain text."""
import argparse
import re

from trainmark.cli import build_parser


def _options():
    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])
            elif action.dest != "help":
                yield " ".join(path), action
    yield from walk(build_parser(), ["trainmark"])


def test_every_option_has_help():
    missing = [f"{cmd} {action.option_strings or action.dest}" for cmd, action in _options() if not action.help]
    assert missing == []


def test_no_restructuredtext_markup_in_help():
    marked = [f"{cmd} {action.option_strings or action.dest}" for cmd, action in _options()
              if action.help and re.search(r"``|:(?:func|class|mod):", action.help)]
    assert marked == []
