"""``trainmark rules list|show|docs`` and ``trainmark data verify|prepare``."""
from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from trainmark.errors import UserError
from trainmark.rules import LATEST_VERSION, get_rules, load_ruleset
from trainmark.rules.datasets import resolve_data_dir, verify_for
from trainmark.rules.docs import render_markdown


def _version_args(p) -> None:
    p.add_argument("--rules-version", default=LATEST_VERSION, help="rules version (default: %(default)s)")
    p.add_argument("--rules-dir", type=Path, help="read rule files from this folder instead of the shipped ones")


def register(sub) -> None:
    rules = sub.add_parser("rules", help="show the versioned benchmark rules")
    rsub = rules.add_subparsers(dest="rules_command", required=True)
    p = rsub.add_parser("list", help="each benchmark with its dataset, metric and target")
    _version_args(p)
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the list as JSON to FILE ('-' or no FILE: standard output)")
    p.set_defaults(func=cmd_list)
    p = rsub.add_parser("show", help="one benchmark's full rules")
    p.add_argument("benchmark", help="benchmark name (`trainmark rules list`)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the rules as JSON to FILE ('-' or no FILE: standard output)")
    _version_args(p)
    p.set_defaults(func=cmd_show)
    p = rsub.add_parser("docs", help="write docs/rules.md from the rule files and the finding-code table of "
                                     "docs/checker.md from the catalogue")
    p.add_argument("--output", type=Path, default=None, metavar="FILE",
                   help="where to write (default: docs/rules.md beside the package's rules/, wherever the "
                        "command is run from)")
    _version_args(p)
    p.set_defaults(func=cmd_docs)
    from trainmark.cli.rules_code_hashes import register_code_hashes  # light modules: no torch at import
    from trainmark.cli.rules_compliance import register_compliance
    register_compliance(rsub, _version_args)
    register_code_hashes(rsub, _version_args)

    data = sub.add_parser("data", help="dataset checks")
    dsub = data.add_subparsers(dest="data_command", required=True)
    p = dsub.add_parser("verify", help="check a dataset against the checksums in the rules")
    p.add_argument("benchmark", help="benchmark name (`trainmark list`)")
    p.add_argument("--data-dir", type=Path, help="dataset folder (default: the rules' folder or environment variable)")
    p.add_argument("--framework", choices=["pytorch", "tensorflow"], default="pytorch",
                   help="check what a run under this framework reads (tensorflow: the archives that "
                        "tensorflow-datasets builds ImageNet and WMT14 from, where the rules pin them)")
    _version_args(p)
    p.set_defaults(func=cmd_verify)
    p = dsub.add_parser("prepare", help="build a dataset from its source (untimed), then verify it")
    p.add_argument("benchmark", help="benchmark name (`trainmark list`)")
    p.add_argument("--data-dir", type=Path, help="where to write it (default: the rules' folder)")
    p.add_argument("--source", type=Path, help="the source the benchmark builds from (see its rules)")
    p.add_argument("--framework", choices=["pytorch", "tensorflow"], default="pytorch",
                   help="prepare what a run under this framework reads (tensorflow: from the archives that "
                        "tensorflow-datasets builds from, where the reference's Keras twin says so)")
    _version_args(p)
    p.set_defaults(func=cmd_prepare)


def benchmarks_table(version: str, rules_dir: Path | None) -> Table:
    table = Table(title=f"trainmark benchmarks (rules {version})")
    for col in ("benchmark", "task", "dataset", "metric", "target", "trials"):
        table.add_column(col, overflow="fold")  # a narrow terminal wraps a name, never cuts it
    for row in benchmark_rows(version, rules_dir):
        sign = ">=" if row["higher_is_better"] else "<="
        table.add_row(row["benchmark"], row["task"], row["dataset"], row["metric"], f"{sign} {row['target']:g}",
                      str(row["trials"]))
    return table


def benchmark_rows(version: str, rules_dir: Path | None) -> list[dict]:
    from trainmark.cli.arguments import rules_dir as check_rules_dir

    check_rules_dir(rules_dir)
    return [{"benchmark": name, "task": r.task, "dataset": r.dataset["name"], "metric": r.metric["name"],
             "higher_is_better": r.higher_is_better, "target": r.target, "trials": r.trials}
            for name, r in load_ruleset(version, rules_dir).items()]


def cmd_list(args) -> int:
    from trainmark.outputs import ensure_writable, table_console, write_output

    if getattr(args, "json", None) is not None:
        ensure_writable(args.json, "--json")
        rows = benchmark_rows(args.rules_version, args.rules_dir)
        write_output(args.json, json.dumps({"rules_version": args.rules_version, "benchmarks": rows}, indent=2)
                     + "\n", "--json")
        return 0
    table_console().print(benchmarks_table(args.rules_version, args.rules_dir))
    return 0


def cmd_show(args) -> int:
    from trainmark.cli.arguments import rules_dir as check_rules_dir
    from trainmark.outputs import write_output

    check_rules_dir(args.rules_dir)
    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    if args.json is not None:
        write_output(args.json, json.dumps(r.data, indent=2) + "\n", "--json")
    else:
        print(r.path.read_text(encoding="utf-8"), end="")
    return 0


def default_docs_path() -> Path:
    """docs/rules.md of this checkout (rules/ and docs/ are siblings), not of the current folder."""
    return Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def cmd_docs(args) -> int:
    from trainmark.cli.arguments import rules_dir as check_rules_dir
    from trainmark.outputs import ensure_writable, write_output

    check_rules_dir(args.rules_dir)
    output = args.output or default_docs_path()
    if args.output is None and not output.parent.is_dir():
        raise UserError(f"no docs/ folder beside the package ({output.parent}): pass --output FILE")
    ensure_writable(output, "--output")
    write_output(output, render_markdown(args.rules_version, args.rules_dir), "--output")
    if str(output) != "-":
        print(f"wrote {output}")
    if args.output is None:  # the package's own docs: the finding-code table too
        from trainmark.checker.verdict import codes_docs as catalog_docs

        checker_md = catalog_docs.default_path()
        write_output(checker_md, catalog_docs.updated(checker_md.read_text(encoding="utf-8")), "--output")
        print(f"wrote the finding-code table of {checker_md}")
    return 0


def cmd_verify(args) -> int:
    from trainmark.cli.arguments import rules_dir as check_rules_dir

    check_rules_dir(args.rules_dir)
    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    return _verify(r, resolve_data_dir(r, args.data_dir), args.framework)


def cmd_prepare(args) -> int:
    """The reference builds the data (its ``prepare_data``); the rules' checksums then judge it."""
    from trainmark.reference import registry

    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    folder = resolve_data_dir(r, args.data_dir)
    ref = registry.for_rules(r)
    if args.framework == "tensorflow":  # the twin prepares from what tfds reads, if that differs
        from trainmark.harness.frameworks.tensorflow_backend import twin_module

        twin = twin_module(ref)
        prepare = getattr(twin, "prepare_data", None)
        written = (prepare(ref, r, folder, args.source) if prepare else ref.prepare_data(folder, args.source))
    else:
        written = ref.prepare_data(folder, args.source)
    print(f"{r.name}: wrote {len(written)} files to {folder}")
    return _verify(r, folder, args.framework)


def _verify(r, folder: Path, framework: str = "pytorch") -> int:
    problems, checked = verify_for(r, folder, framework)
    if problems:
        raise UserError(f"{r.name}: dataset in {folder} does not match rules {r.version}: " + "; ".join(problems), 1)
    print(f"{r.name}: {checked} files in {folder} match rules {r.version}")
    return 0
