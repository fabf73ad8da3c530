"""``trainmark list``: the benchmarks with their dataset, metric and target (``trainmark rules list``)."""
from __future__ import annotations

from trainmark.cli.rules import cmd_list, list_arguments

DESCRIPTION = """\
The benchmarks of one rules version: task, dataset, quality metric and target, and the
number of trials a complete result needs. The same as 'trainmark rules list'."""

EXAMPLES = """\
  trainmark list
  trainmark list --rules-version 1.0
  trainmark list --json - | jq '.benchmarks[].benchmark'
"""


def register(sub) -> None:
    from trainmark.cli.parsing import command

    p = command(sub, "list", help="benchmarks with their dataset, metric and target", description=DESCRIPTION,
                examples=EXAMPLES, quiet=False)
    list_arguments(p)
    p.set_defaults(func=cmd_list)
