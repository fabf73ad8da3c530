"""``trainmark profile``: which operators of a benchmark's step take the time, each against its roof.

The command checks its arguments and prints; the profile is harness/profile/, the framework's profiler
harness/frameworks/*_profile.py, the page and the roofline report/profile_page.py.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from trainmark.cli.arguments import DEVICE_HELP, device_of
from trainmark.errors import UserError
from trainmark.harness.frameworks.backend import BACKENDS  # stdlib only: keeps --help light

DESCRIPTION = """\
Profile a few training steps of a benchmark after warm-up with the framework's own profiler
(torch.profiler; TensorFlow's for the Keras twins) and print its operators: calls, time, FLOPs,
bytes, arithmetic intensity, achieved FLOP/s and bandwidth, roof, fraction of roof and bound
(compute, memory or overhead), and the step's phases. --all: one line per benchmark (workload
characterization). --out writes profile.json and a page with the roofline (docs/profile.md)."""

EXAMPLES = """\
  trainmark profile resnet-mini --steps 5 --json -
  trainmark profile resnet-mini --device cuda --ceilings ops.json --out results/.../resnet-mini/
  trainmark profile --all --steps 1
"""
PROFILE_JSON = "profile.json"
PROFILE_HTML = "profile.html"


def register(sub) -> None:
    from trainmark.cli.parsing import add_json, add_rules_group, command
    from trainmark.rules import LATEST_VERSION

    p = command(sub, "profile", help="per-operator profile of a benchmark's step, with roofs and bounds",
                description=DESCRIPTION, examples=EXAMPLES)
    p.add_argument("benchmark", nargs="?", help="benchmark name ('trainmark list'); none with --all")
    what = p.add_argument_group("what is profiled")
    what.add_argument("--all", action="store_true", help="every benchmark of the rules, one line each "
                                                         "(batch size min(rules, 32) unless --batch-size)")
    what.add_argument("--framework", choices=list(BACKENDS), default="pytorch",
                      help="the framework whose step is profiled (default: %(default)s)")
    what.add_argument("--device", default="cpu", help=DEVICE_HELP)
    what.add_argument("--precision", choices=("fp32", "amp"), default="fp32", help="default: %(default)s")
    what.add_argument("--batch-size", type=int, help="default: the rules' global batch size")
    what.add_argument("--steps", type=int, help="profiled steps (default: 5; 1 with --all)")
    what.add_argument("--warmup-steps", type=int, help="untimed steps first (default: 3; 1 with --all)")
    what.add_argument("--data", choices=("synthetic", "real"), default="synthetic",
                      help="synthetic: one batch reused (no input pipeline); real: the dataset (--data-dir)")
    what.add_argument("--data-dir", type=Path, help="dataset folder for --data real")
    what.add_argument("--ceilings", type=Path, metavar="OPS_JSON",
                      help="a 'trainmark ops --json' report: its measured ceilings are the roofs")
    out = p.add_argument_group("output")
    add_json(out)
    out.add_argument("--out", type=Path, metavar="DIR", help=f"write {PROFILE_JSON} and {PROFILE_HTML} (its page) "
                                                            "there; in a benchmark result folder, 'trainmark "
                                                            "report' shows it")
    out.add_argument("--top", type=int, default=25, help="operators printed (default: %(default)s)")
    add_rules_group(p, LATEST_VERSION)
    p.set_defaults(func=cmd_profile)


def _check(args) -> None:
    from trainmark.outputs import ensure_writable

    if args.all == bool(args.benchmark):
        raise UserError("name one benchmark, or --all for every benchmark")
    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size), ("--top", args.top)):
        if value is not None and value < 1:
            raise UserError(f"{flag} must be at least 1")
    if args.warmup_steps is not None and args.warmup_steps < 0:
        raise UserError("--warmup-steps must be 0 or more")
    if args.framework == "tensorflow" and args.precision != "fp32":
        raise UserError("--framework tensorflow: only --precision fp32 for now (docs/frameworks.md)")
    if args.all and args.data == "real":
        raise UserError("--all profiles synthetic batches (each benchmark's data would have to be present)")
    if args.json:
        ensure_writable(args.json, "--json")


def _settings(args):
    from trainmark.harness.profile.session import ProfileSettings

    default_steps = 1 if args.all else 5
    return ProfileSettings(framework=args.framework, precision=args.precision, batch_size=args.batch_size,
                           steps=args.steps or default_steps,
                           warmup_steps=args.warmup_steps if args.warmup_steps is not None else 1 if args.all else 3,
                           data=args.data)


def _ceilings(args) -> dict | None:
    if not args.ceilings:
        return None
    from trainmark.harness.throughput import ops

    return ops.measured_ceilings(ops.read_report(args.ceilings)[0])


def cmd_profile(args) -> int:
    from trainmark.harness.frameworks import backend

    _check(args)
    backend.available(args.framework)
    device = device_of(args.device)
    if args.framework != "pytorch" and device.type != "cpu":
        raise UserError(f"--framework {args.framework}: only --device cpu for now")
    if args.all:
        return _all(args, device)
    return _one(args, device)


def _one(args, device) -> int:
    from trainmark.cli.arguments import known_benchmark
    from trainmark.harness.profile import output, session
    from trainmark.outputs import is_stdout, write_output
    from trainmark.reference import registry
    from trainmark.rules.ruleset import get_rules

    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)
    rules = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    backend_check(args.framework, rules)
    ref = registry.for_rules(rules)
    data = _real_data(args, rules, ref, device)
    say = sys.stderr if is_stdout(args.json) else sys.stdout
    if not args.quiet:
        print(f"profiling {rules.name} ({args.framework}) on {device}...", file=say, flush=True)
    result = session.profile_benchmark(rules, ref, device, _settings(args), data=data, ceilings=_ceilings(args))
    print(output.format_profile(result, args.top), file=say)
    if args.json:
        write_output(args.json, json.dumps(result, indent=1) + "\n", "--json")
    if args.out:
        _write_folder(args.out, result, say)
    return 0


def backend_check(framework: str, rules) -> None:
    from trainmark.harness.frameworks.backend import implements

    implements(framework, rules)


def _real_data(args, rules, ref, device):
    if args.data != "real":
        return None
    from trainmark.cli.sweep import _real_data as sweep_data

    return sweep_data(args, rules, ref, device)


def _write_folder(folder: Path, result: dict, say) -> None:
    from trainmark.files import write_json_atomic, write_text_atomic
    from trainmark.report.profile_page import render_page

    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / PROFILE_JSON, result)
    write_text_atomic(folder / PROFILE_HTML, render_page(result))
    print(f"wrote {folder / PROFILE_JSON} and {folder / PROFILE_HTML}", file=say)


def _all(args, device) -> int:
    from trainmark.harness.profile import characterize, output
    from trainmark.outputs import is_stdout, write_output
    from trainmark.rules import load_ruleset

    rule_set = load_ruleset(args.rules_version, args.rules_dir) if args.rules_dir else load_ruleset(args.rules_version)
    say = sys.stderr if is_stdout(args.json) else sys.stdout
    rows, skipped = characterize.characterize(
        rule_set, device, _settings(args), ceilings=_ceilings(args),
        progress=(lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True)))
    from trainmark.harness.measure.system import cpu_model

    where = f"{device} ({cpu_model()})" if device.type == "cpu" else str(device)
    print(output.format_characterization(rows, where, skipped), file=say)
    if args.json:
        write_output(args.json, json.dumps({"format": "trainmark-characterization/1", "device": where,
                                            "rows": rows, "skipped": skipped}, indent=1) + "\n", "--json")
    return 0 if rows else 1
