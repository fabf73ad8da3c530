"""``trainmark data verify|prepare``: a dataset against the checksums in the rules, and building it."""
from __future__ import annotations

from pathlib import Path

from trainmark.cli.arguments import known_benchmark, version_arguments
from trainmark.cli.arguments import rules_dir as check_rules_dir
from trainmark.errors import UserError
from trainmark.rules import get_rules
from trainmark.rules.datasets import refuse_special_files, resolve_data_dir, verify_for


def register(sub) -> None:
    from trainmark.cli.parsing import command

    data = command(sub, "data", help="dataset checks", quiet=False,
                   description="Check a benchmark's dataset against the checksums its rules pin, or build it from "
                               "its source.",
                   examples="  trainmark data verify resnet-mini --data-dir ~/data/resnet-mini\n"
                            "  trainmark data prepare resnet-mini --source ~/downloads/imagenet\n")
    dsub = data.add_subparsers(dest="data_command", required=True, metavar="SUBCOMMAND")
    p = command(dsub, "verify", help="check a dataset against the checksums in the rules",
                description="Check a dataset against the checksums in the rules (exit 1 when it differs).",
                examples="  trainmark data verify resnet-mini\n"
                         "  trainmark data verify transformer-mini --framework tensorflow -q\n")
    p.add_argument("benchmark", help="benchmark name ('trainmark list')")
    p.add_argument("--data-dir", type=Path, help="dataset folder (default: the rules' folder or environment variable)")
    p.add_argument("--framework", choices=["pytorch", "tensorflow"], default="pytorch",
                   help="check what a run under this framework reads (tensorflow: the archives that "
                        "tensorflow-datasets builds ImageNet and WMT14 from, where the rules pin them)")
    version_arguments(p)
    p.set_defaults(func=cmd_verify)
    p = command(dsub, "prepare", help="build a dataset from its source (untimed), then verify it",
                description="Build a dataset from its source with the reference's own code (untimed), then verify "
                            "it against the rules.",
                examples="  trainmark data prepare resnet-mini\n"
                         "  trainmark data prepare resnet-mini --source ~/downloads/imagenet --data-dir /data/rm\n")
    p.add_argument("benchmark", help="benchmark name ('trainmark list')")
    p.add_argument("--data-dir", type=Path, help="where to write it (default: the rules' folder)")
    p.add_argument("--source", type=Path, help="the source the benchmark builds from (see its rules)")
    p.add_argument("--framework", choices=["pytorch", "tensorflow"], default="pytorch",
                   help="prepare what a run under this framework reads (tensorflow: from the archives that "
                        "tensorflow-datasets builds from, where the reference's Keras twin says so)")
    version_arguments(p)
    p.set_defaults(func=cmd_prepare)


def cmd_verify(args) -> int:
    check_rules_dir(args.rules_dir)
    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)
    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    return _verify(r, resolve_data_dir(r, args.data_dir), args.framework)


def cmd_prepare(args) -> int:
    """The reference builds the data (its ``prepare_data``); the rules' checksums then judge it."""
    from trainmark.reference import registry

    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)

    r = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    folder = resolve_data_dir(r, args.data_dir)
    if args.source is not None:  # a FIFO in it would block the reference's read forever
        refuse_special_files(args.source, "--source")
    refuse_special_files(folder, "--data-dir", recursive=False)  # ... and one where it writes, its write
    ref = registry.for_rules(r)
    if args.framework == "tensorflow":  # the twin prepares from what tfds reads, if that differs
        from trainmark.harness.frameworks.tensorflow_backend import twin_module

        twin = twin_module(ref)
        prepare = getattr(twin, "prepare_data", None)
        written = (prepare(ref, r, folder, args.source) if prepare else ref.prepare_data(folder, args.source))
    else:
        written = ref.prepare_data(folder, args.source)
    if not args.quiet:
        print(f"{r.name}: wrote {len(written)} files to {folder}")
    return _verify(r, folder, args.framework)


def _verify(r, folder: Path, framework: str = "pytorch") -> int:
    problems, checked = verify_for(r, folder, framework)
    if problems:
        raise UserError(f"{r.name}: dataset in {folder} does not match rules {r.version}: " + "; ".join(problems), 1)
    print(f"{r.name}: {checked} files in {folder} match rules {r.version}")
    return 0
