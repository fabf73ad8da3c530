"""``trainmark rules list|show|docs|compliance|code-hashes``: the versioned benchmark rules.

``trainmark list`` is ``rules list`` under a shorter name (trainmark/cli/list_benchmarks.py).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.table import Table

from trainmark import rules as rules_package
from trainmark.cli.arguments import rules_dir as check_rules_dir
from trainmark.cli.arguments import version_arguments
from trainmark.errors import UserError
from trainmark.format import layout
from trainmark.rules import get_rules, load_ruleset
from trainmark.rules.docs import render_markdown


def list_arguments(p) -> None:
    """The options of ``rules list`` and ``trainmark list``."""
    version_arguments(p)
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the list as JSON to FILE ('-' or no FILE: standard output)")


def register(sub) -> None:
    rules = sub.add_parser("rules", help="show the versioned benchmark rules")
    rsub = rules.add_subparsers(dest="rules_command", required=True)
    p = rsub.add_parser("list", help="each benchmark with its dataset, metric and target")
    list_arguments(p)
    p.set_defaults(func=cmd_list)
    p = rsub.add_parser("show", help="one benchmark's full rules")
    p.add_argument("benchmark", help="benchmark name (`trainmark rules list`)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the rules as JSON to FILE ('-' or no FILE: standard output)")
    version_arguments(p)
    p.set_defaults(func=cmd_show)
    p = rsub.add_parser("docs", help="write docs/rules.md from the rule files and the finding-code table of "
                                     "docs/checker.md from the catalogue")
    p.add_argument("--output", type=Path, default=None, metavar="FILE",
                   help="where to write (default: docs/rules.md beside the package's rules/, wherever the "
                        "command is run from)")
    version_arguments(p)
    p.set_defaults(func=cmd_docs)
    p = rsub.add_parser("compliance", help="print the mlperf-logging compliance config the checker uses")
    p.add_argument("benchmark", help="benchmark name (trainmark rules list)")
    p.add_argument("--division", default="closed", help="closed or open (default: %(default)s)")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the config to FILE instead of stdout")
    version_arguments(p)
    p.set_defaults(func=cmd_compliance)
    p = rsub.add_parser("code-hashes", help="write rules/<version>/reference-code.json and "
                        "reference-structures.json: the released reference's code hashes and model "
                        "structures the checker compares submissions with")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when the file is stale")
    version_arguments(p)
    p.set_defaults(func=cmd_code_hashes)


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
    return Path(rules_package.__file__).resolve().parent.parent / "docs" / "rules.md"


def cmd_docs(args) -> int:
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


def cmd_compliance(args) -> int:
    """Print (or ``-o FILE``) the generated compliance config for one benchmark and division.

    The config is the one ``trainmark check`` runs through mlperf-logging's compliance engine
    (``trainmark.checker.mlperf.compliance_rules.compliance_yaml``), printed so that anyone can run MLPerf's own
    checker with it::

        trainmark rules compliance resnet-mini --division closed > resnet-mini-closed.yaml
        python -m mlperf_logging.compliance_checker --usage training --ruleset 4.1.0 \\
            --config "$PWD/resnet-mini-closed.yaml" result_1.txt

    (``--ruleset`` only picks mlperf-logging's line parser; ``--config`` needs an absolute path.)
    """
    from trainmark.checker.mlperf import compliance_rules
    from trainmark.files import write_text_atomic

    if args.division not in layout.DIVISIONS:
        raise UserError(f"--division {args.division!r}: use closed or open")
    rules = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    text = compliance_rules.compliance_yaml(rules, args.division)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        write_text_atomic(args.output, text)
    except OSError as exc:
        raise UserError(f"-o {args.output}: cannot write: {exc.strerror or exc}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_code_hashes(args) -> int:
    """Write (or ``--check``) the released reference code's hashes and model structures.

    ``rules/<version>/reference-code.json`` is what the checker compares a closed-division
    submission's code with; regenerate it whenever a reference module or rule file changes
    (tests/test_implementation_record.py fails while it is stale).
    """
    from trainmark.files import write_text_atomic
    from trainmark.rules import reference_code, reference_structures

    frozen = reference_code.frozen(args.rules_version, args.rules_dir)
    code_file = reference_code.hash_file(args.rules_version, args.rules_dir)
    if frozen and not args.check:
        raise UserError(f"{code_file} is frozen ({frozen}): it is never rewritten")
    outputs = [] if frozen else [
        (code_file, reference_code.render(reference_code.hash_table(args.rules_version, args.rules_dir)))]
    outputs.append((reference_structures.structure_file(args.rules_version, args.rules_dir),
                    reference_structures.render(structure_table(args.rules_version, args.rules_dir))))
    if frozen:
        print(f"{code_file} is frozen as released: not compared")
    stale = 0
    for path, text in outputs:
        if args.check:
            current = path.read_text(encoding="utf-8") if path.is_file() else ""
            if current != text:
                print(f"{path} is stale: run `trainmark rules code-hashes --rules-version {args.rules_version}`",
                      file=sys.stderr)
                stale = 1
            else:
                print(f"{path} is up to date")
            continue
        try:
            write_text_atomic(path, text)
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
        print(f"wrote {path}")
    return stale


def structure_table(version: str, rules_root: Path | None = None) -> dict:
    """The content of ``rules/<version>/reference-structures.json``: each benchmark's reference model, built on
    the meta device (imports torch) from the class its rule file names, described."""
    import torch

    from trainmark.format import structure
    from trainmark.reference import registry
    from trainmark.rules import reference_structures

    benchmarks = {}
    for name, rules in sorted(load_ruleset(version, rules_root).items()):
        with torch.device("meta"):
            model = registry.for_rules(rules).build_model()
        benchmarks[name] = structure.describe(model)
    return {"format": reference_structures.FORMAT, "rules_version": version, "benchmarks": benchmarks}
