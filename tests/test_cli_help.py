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


def _commands(parser):
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub


def test_one_module_per_command_in_the_order_of_the_help():
    """trainmark/cli/NAME.py adds the command NAME, and only it; `trainmark --help` lists them in COMMAND_MODULES'
    order (adding a command = a module + one line)."""
    import importlib

    from trainmark.cli import COMMAND_MODULES

    names = []
    for module_name in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        importlib.import_module(module_name).register(parser.add_subparsers())
        added = list(_commands(parser).choices)
        module = module_name.rsplit(".", 1)[1]
        # `list`'s module is list_benchmarks: a submodule named list would shadow the builtin in trainmark.cli
        assert added == [{"list_benchmarks": "list"}.get(module, module)], (module_name, added)
        names += added
    assert list(_commands(build_parser()).choices) == names
    assert names == ["run", "list", "calibrate", "rules", "data", "check", "package", "ops", "sweep", "profile",
                     "report", "compare", "table", "scale"]


def test_list_is_rules_list():
    """`trainmark list` and `trainmark rules list`: one function, the same options."""
    commands = _commands(build_parser()).choices
    rules_list = _commands(commands["rules"]).choices["list"]
    top_list = commands["list"]
    assert top_list.get_default("func") is rules_list.get_default("func")
    assert [(a.option_strings, a.dest, a.default, a.const, a.help) for a in top_list._actions] == \
        [(a.option_strings, a.dest, a.default, a.const, a.help) for a in rules_list._actions]


def test_list_and_rules_list_print_the_same(capsys):
    from trainmark.cli import main

    assert main(["list", "--json"]) == 0
    top = capsys.readouterr().out
    assert main(["rules", "list", "--json"]) == 0
    assert capsys.readouterr().out == top and '"benchmarks"' in top


def test_the_root_shows_errors_without_the_checker():
    """trainmark.cli's main() escapes an error line with the root's helper, not the checker's."""
    import inspect

    import trainmark.cli

    assert "trainmark.checker" not in inspect.getsource(trainmark.cli)
