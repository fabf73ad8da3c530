"""``trainmark rules list|show|docs`` and ``trainmark data verify|prepare``."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from trainmark.errors import UserError
from trainmark.rules import LATEST_VERSION, get_rules, load_ruleset
from trainmark.rules.datasets import resolve_data_dir, verify_dataset
from trainmark.rules.docs import render_markdown


def _version_args(p) -> None:
    p.add_argument("--rules-version", default=LATEST_VERSION, help="rules version (default: %(default)s)")
    p.add_argument("--rules-dir", type=Path, help="read rule files from this folder instead of the shipped ones")


def register(sub) -> None:
    rules = sub.add_parser("rules", help="show the versioned benchmark rules")
    rsub = rules.add_subparsers(dest="rules_command", required=True)
    p = rsub.add_parser("list", help="each benchmark with its dataset, metric and target")
    _version_args(p)
    p.set_defaults(func=cmd_list)
    p = rsub.add_parser("show", help="one benchmark's full rules")
    p.add_argument("benchmark")
    p.add_argument("--json", action="store_true", help="print the rule file as JSON")
    _version_args(p)
    p.set_defaults(func=cmd_show)
    p = rsub.add_parser("docs", help="write docs/rules.md from the rule files")
    p.add_argument("--output", type=Path, default=Path("docs/rules.md"))
    _version_args(p)
    p.set_defaults(func=cmd_docs)

    data = sub.add_parser("data", help="dataset checks")
    dsub = data.add_subparsers(dest="data_command", required=True)
    p = dsub.add_parser("verify", help="check a dataset against the checksums in the rules")
    p.add_argument("benchmark")
    p.add_argument("--data-dir", type=Path)
    _version_args(p)
    p.set_defaults(func=cmd_verify)
    p = dsub.add_parser("prepare", help="build a dataset from its source (untimed), then verify it")
    p.add_argument("benchmark")
    p.add_argument("--data-dir", type=Path, help="where to write it (default: the rules' folder)")
    p.add_argument("--source", type=Path, help="the source the benchmark builds from (see its rules)")
    _version_args(p)
    p.set_defaults(func=cmd_prepare)


def benchmarks_table(version: str, rules_dir: Path | None) -> Table:
    table = Table(title=f"trainmark benchmarks (rules {version})")
    for col in ("benchmark", "task", "dataset", "metric", "target", "trials"):
        table.add_column(col)
    for name, r in load_ruleset(version, rules_dir).items():
        sign = ">=" if r.higher_is_better else "<="
        table.add_row(name, r.task, r.dataset["name"], r.metric["name"], f"{sign} {r.target:g}", str(r.trials))
    return table


def cmd_list(args) -> int:
    Console().print(benchmarks_table(args.rules_version, args.rules_dir))
    return 0


def cmd_show(args) -> int:
    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    if args.json:
        print(json.dumps(r.data, indent=2))
    else:
        print(r.path.read_text(encoding="utf-8"), end="")
    return 0


def cmd_docs(args) -> int:
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render_markdown(args.rules_version, args.rules_dir), encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


def cmd_verify(args) -> int:
    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    return _verify(r, resolve_data_dir(r, args.data_dir))


def cmd_prepare(args) -> int:
    """The reference builds the data (its ``prepare_data``); the rules' checksums then judge it."""
    from trainmark.reference import registry

    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    folder = resolve_data_dir(r, args.data_dir)
    written = registry.get(r.reference_model["id"]).prepare_data(folder, args.source)
    print(f"{r.name}: wrote {len(written)} files to {folder}")
    return _verify(r, folder)


def _verify(r, folder: Path) -> int:
    problems = verify_dataset(r, folder)
    if problems:
        raise UserError(f"{r.name}: dataset in {folder} does not match rules {r.version}: " + "; ".join(problems), 1)
    listed = sum(pin["files"] for pin in r.dataset.get("listing", {}).get("splits", {}).values())
    print(f"{r.name}: {len(r.dataset['files']) + listed} files in {folder} match rules {r.version}")
    return 0
