"""``trainmark rules list|show|docs|compliance|code-hashes``: the versioned benchmark rules.

``trainmark list`` is ``rules list`` under a shorter name (trainmark/cli/list_benchmarks.py).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.text import Text

from trainmark import rules as rules_package
from trainmark.cli import rules_evidence
from trainmark.cli.arguments import known_benchmark, version_arguments
from trainmark.cli.arguments import rules_dir as check_rules_dir
from trainmark.errors import UserError
from trainmark.format import layout
from trainmark.rules import get_rules, load_ruleset
from trainmark.rules.docs import render_markdown


def list_arguments(p) -> None:
    """The options of ``rules list`` and ``trainmark list``."""
    from trainmark.cli.parsing import add_json, add_quiet

    add_quiet(p)
    version_arguments(p)
    add_json(p)


LIST_EXAMPLES = """\
  trainmark rules list
  trainmark rules list --json benchmarks.json
"""


def register(sub) -> None:
    from trainmark.cli.parsing import add_json, add_output, command

    rules = command(sub, "rules", help="show the versioned benchmark rules", quiet=False, description=(
        "The versioned benchmark rules: one file per benchmark (rules/<version>/<benchmark>.yaml) with the "
        "dataset,\nthe quality target, the trial count, the hyperparameter limits and the reference model."),
        examples="  trainmark rules list\n  trainmark rules show resnet-mini\n"
                 "  trainmark rules compliance resnet-mini -o resnet-mini-closed.yaml\n")
    rsub = rules.add_subparsers(dest="rules_command", required=True, metavar="SUBCOMMAND")
    p = command(rsub, "list", help="each benchmark with its dataset, metric and target", quiet=False,
                description="Each benchmark of one rules version with its dataset, metric, target and trials.",
                examples=LIST_EXAMPLES)
    list_arguments(p)
    p.set_defaults(func=cmd_list)
    p = command(rsub, "show", help="one benchmark's full rules",
                description="One benchmark's rule file as shipped (YAML), or as JSON.",
                examples="  trainmark rules show resnet-mini\n  trainmark rules show resnet-mini --json -\n")
    p.add_argument("benchmark", help="benchmark name ('trainmark rules list')")
    add_json(p)
    version_arguments(p)
    p.set_defaults(func=cmd_show)
    p = command(rsub, "docs", help="write docs/rules.md from the rule files and the finding-code table of "
                                   "docs/checker.md from the catalogue",
                description="Write docs/rules.md from the rule files and, by default, the finding-code table of "
                            "docs/checker.md\nfrom the checker's catalogue (maintainers run it after changing "
                            "either).",
                examples="  trainmark rules docs\n  trainmark rules docs --output - | less\n")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                   help="where to write ('-': standard output; default: docs/rules.md beside the package's rules/, "
                        "wherever the command is run from)")
    version_arguments(p)
    p.set_defaults(func=cmd_docs)
    p = command(rsub, "compliance", help="print the mlperf-logging compliance config the checker uses",
                description=COMPLIANCE_DESCRIPTION, examples=COMPLIANCE_EXAMPLES)
    p.add_argument("benchmark", help="benchmark name ('trainmark rules list')")
    p.add_argument("--division", default="closed", help="closed or open (default: %(default)s)")
    add_output(p)
    version_arguments(p)
    p.set_defaults(func=cmd_compliance)
    p = command(rsub, "code-hashes", help="write rules/<version>/reference-code.json and "
                "reference-structures.json: the released reference's code hashes and model "
                "structures the checker compares submissions with",
                description="Write (or --check) rules/<version>/reference-code.json and reference-structures.json: "
                            "the released\nreference code's hashes and model structures that the checker compares "
                            "a closed-division submission with.",
                examples="  trainmark rules code-hashes --check\n  trainmark rules code-hashes --rules-version 1.1\n")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when the file is stale")
    version_arguments(p)
    p.set_defaults(func=cmd_code_hashes)
    rules_evidence.register(rsub)  # peaks, flops: what the checker derives a trial's work and peak from


COMPLIANCE_DESCRIPTION = """\
Print the compliance config that 'trainmark check' runs through mlperf-logging's compliance
engine for one benchmark and division, so that anyone can run MLPerf's own checker with it.
mlperf-logging's --ruleset only picks its line parser; its --config needs an absolute path."""

COMPLIANCE_EXAMPLES = """\
  trainmark rules compliance resnet-mini --division open
  trainmark rules compliance resnet-mini --division closed -o resnet-mini-closed.yaml
  python -m mlperf_logging.compliance_checker --usage training --ruleset 4.1.0 \\
      --config "$PWD/resnet-mini-closed.yaml" result_1.txt
"""


def list_columns(rows: list[dict]) -> list:
    """``trainmark list``'s columns: task and dataset are prose (they may wrap between words), the rest never wrap."""
    from trainmark.format.numbers import display
    from trainmark.outputs import Column

    targets = [f"{'>=' if r['higher_is_better'] else '<='} {display(r['target'], significant=6)}" for r in rows]
    return [Column("benchmark", [r["benchmark"] for r in rows]),
            Column("task", [r["task"] for r in rows], prose=True),
            Column("dataset", [r["dataset"] for r in rows], prose=True),
            Column("metric", [r["metric"] for r in rows]), Column("target", targets),
            Column("trials", [str(r["trials"]) for r in rows], justify="right")]


def print_benchmarks(version: str, rules_dir: Path | None, console, width: int | None) -> None:
    """A table when every column fits ``width`` (None: piped, no limit), else one block per benchmark.

    Either way no benchmark name, dataset word or target is split across lines (issue 32: at 60
    columns the table split its header and names).
    """
    from trainmark.outputs import block_lines, choose_columns, fitted_table

    rows = benchmark_rows(version, rules_dir)
    columns = list_columns(rows)
    title = f"trainmark benchmarks (rules {version})"
    if choose_columns(columns, width, list(range(len(columns))), required=len(columns)) is not None:
        console.print(fitted_table(columns, width, title))
        return
    console.print(Text(title, style="italic"))
    fields = [columns[i] for i in (3, 4, 5, 1, 2)]  # metric, target, trials, then the prose
    for k, row in enumerate(rows):
        for line in block_lines(row["benchmark"], [(c.label, c.cells[k]) for c in fields], width or 80):
            console.print(Text(line, style="bold" if line == row["benchmark"] else ""))


def benchmark_rows(version: str, rules_dir: Path | None) -> list[dict]:
    check_rules_dir(rules_dir)
    return [{"benchmark": name, "task": r.task, "dataset": r.dataset["name"], "metric": r.metric["name"],
             "higher_is_better": r.higher_is_better, "target": r.target, "trials": r.trials}
            for name, r in load_ruleset(version, rules_dir).items()]


def cmd_list(args) -> int:
    from trainmark.outputs import ensure_writable, fitting_console, write_output

    if getattr(args, "json", None) is not None:
        ensure_writable(args.json, "--json")
        rows = benchmark_rows(args.rules_version, args.rules_dir)
        write_output(args.json, json.dumps({"rules_version": args.rules_version, "benchmarks": rows}, indent=2)
                     + "\n", "--json")
        return 0
    print_benchmarks(args.rules_version, args.rules_dir, *fitting_console())
    return 0


def cmd_show(args) -> int:
    from trainmark.outputs import write_output

    check_rules_dir(args.rules_dir)
    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)
    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    if args.json is not None:
        write_output(args.json, json.dumps(with_batch_range(r), indent=2) + "\n", "--json")
    else:
        print(show_batch_range(r, r.path.read_text(encoding="utf-8")), end="")
    return 0


def calibrated_batches(r) -> dict | None:
    """``{framework: [smallest, largest]}`` of the closed division's calibrated batch sizes (None: no points)."""
    from trainmark.rules import admissible

    if admissible.batch_rule(r) is None:
        return None
    return {fw: list(span) if span else None for fw, span in admissible.calibrated_ranges(r).items()}


def with_batch_range(r) -> dict:
    """The rule file's data with the batch size's closed rule as ``trainmark run`` and ``check`` apply it."""
    ranges = calibrated_batches(r)
    if ranges is None or "global_batch_size" not in r.hyperparameters:
        return r.data
    spec = {**r.hyperparameters["global_batch_size"], "closed": {"calibrated": ranges}}
    return {**r.data, "hyperparameters": {**r.hyperparameters, "global_batch_size": spec}}


def show_batch_range(r, text: str) -> str:
    """The rule file's text, its ``global_batch_size: closed: free`` shown as what is enforced: the range of the
    convergence points (CONVERGE-003 outside it), which 'free' in the file predates."""
    import re

    ranges = calibrated_batches(r)
    if ranges is None:
        return text
    flow = ", ".join(f"{fw}: {span if span is None else list(span)}" for fw, span in ranges.items())
    return re.sub(r"(?m)^(  global_batch_size:\n(?:    (?!closed:).*\n)*    closed: )free$",
                  lambda m: m[1] + "{calibrated: {" + flow.replace("None", "null") + "}}  # the convergence points' "
                  "batch sizes: 'trainmark run' refuses others, 'trainmark check' rejects them (CONVERGE-003)",
                  text, count=1)


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
    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)
    rules = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    text = compliance_rules.compliance_yaml(rules, args.division)
    if args.output is None or str(args.output) == "-":
        sys.stdout.write(text)
        return 0
    try:
        write_text_atomic(args.output, text)
    except OSError as exc:
        raise UserError(f"-o {args.output}: cannot write: {exc.strerror or exc}") from None
    print(f"wrote {args.output}", file=sys.stderr)  # the final line, -q or not
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
