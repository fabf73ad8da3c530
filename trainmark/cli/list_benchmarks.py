"""``trainmark list``: the benchmarks with their dataset, metric and target (``trainmark rules list``)."""
from __future__ import annotations

from trainmark.cli.rules import cmd_list, list_arguments


def register(sub) -> None:
    p = sub.add_parser("list", help="benchmarks with their dataset, metric and target")
    list_arguments(p)
    p.set_defaults(func=cmd_list)
