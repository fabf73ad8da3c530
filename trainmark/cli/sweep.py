"""``trainmark sweep``: throughput, TFLOPS, energy and memory over batch sizes and precisions.

The command checks its arguments and prints; the sweep itself is harness/throughput/sweep.py.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from trainmark.cli.arguments import DEVICE_HELP, csv_items, device_of, positive_ints, sweep_args
from trainmark.errors import UserError
from trainmark.harness.frameworks.backend import BACKENDS  # stdlib only: keeps --help light

DESCRIPTION = """\
Time a benchmark's training step over batch sizes and precisions (no convergence: throughput
only) and write sweep.csv, sweep.json and plots: samples per second, TFLOP/s, energy per sample
and peak memory, and with --oom-search the largest batch that fits. 'trainmark report --sweep'
adds its plots to a report."""

EXAMPLES = """\
  trainmark sweep resnet-mini --device cuda --out sweep/
  trainmark sweep resnet-mini --batch-sizes 32,64,128 --precisions fp32 -q
  trainmark sweep resnet-mini --device cuda --oom-search --memory-limit-gb 16
"""


def register(sub) -> None:
    from trainmark.cli.parsing import add_measured_output, add_rules_group, command
    from trainmark.rules import LATEST_VERSION

    p = command(sub, "sweep", help="throughput, TFLOPS, energy and memory over batch sizes and precisions",
                description=DESCRIPTION, examples=EXAMPLES)
    p.add_argument("benchmark", help="benchmark name ('trainmark list')")
    what = p.add_argument_group("what is timed")
    what.add_argument("--device", default="auto", help=DEVICE_HELP)
    what.add_argument("--batch-sizes", help="comma-separated (default: 1/4, 1/2, 1 and 2 x the rules' batch size)")
    what.add_argument("--precisions", help="fp32 and/or amp (default: fp32,amp; under tensorflow: fp32)")
    what.add_argument("--data", choices=["synthetic", "real"], default="synthetic",
                      help="synthetic: one device-resident batch (no input pipeline); real: the dataset")
    what.add_argument("--data-dir", type=Path, help="dataset folder for --data real")
    what.add_argument("--framework", choices=list(BACKENDS), default="pytorch",
                      help="the framework whose training step is timed (default: %(default)s; tensorflow: "
                           "fp32 on CPU, docs/frameworks.md)")
    timing = p.add_argument_group("timing")
    timing.add_argument("--steps", type=int, default=10, help="timed steps per point (default: %(default)s)")
    timing.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (default: %(default)s)")
    timing.add_argument("--min-seconds", type=float, help="time each point at least this long "
                                                          "(default: 2 on CUDA for the energy counter, 0 on CPU)")
    memory = p.add_argument_group("memory")
    memory.add_argument("--oom-search", action="store_true", help="find the largest batch size that fits (CUDA)")
    memory.add_argument("--max-batch", type=int, default=1 << 16,
                        help="upper bound of the search (default: %(default)s)")
    memory.add_argument("--memory-limit-gb", type=float, help="CUDA: cap the allocator (e.g. to emulate a smaller GPU)")
    measure = p.add_argument_group("measurement")
    measure.add_argument("--ceilings", type=Path, metavar="OPS_JSON",
                         help="a 'trainmark ops --json' report: utilization against its measured ceilings too")
    measure.add_argument("--energy-estimate-watts", type=float,
                         help="when no energy counter exists, report W x time, labelled 'estimated'")
    add_measured_output(p, "sweep", "write the CSV and JSON but no PNG plots")
    add_rules_group(p, LATEST_VERSION)
    p.set_defaults(func=cmd_sweep)


def load_ceilings(path: Path) -> dict:
    """Measured ceilings from a ``trainmark ops --json`` report."""
    from trainmark.harness.throughput import ops

    return ops.measured_ceilings(ops.read_report(path)[0])


def _batch_sizes(args, base: int) -> list[int]:
    """--batch-sizes, or 1/4, 1/2, 1 and 2 x the rules' batch size."""
    if args.batch_sizes is not None:
        return positive_ints(args.batch_sizes, "--batch-sizes", "32,64,128", "batch sizes must be positive")
    return sorted({max(1, base // 4), max(1, base // 2), base, base * 2})


def _precisions(args, rules) -> list[str]:
    """--precisions (default: fp32,amp; under tensorflow: fp32), each one the rules allow."""
    precisions = csv_items(args.precisions if args.precisions is not None
                           else "fp32" if args.framework == "tensorflow" else "fp32,amp")
    if args.framework == "tensorflow" and precisions != ["fp32"]:
        raise UserError("--framework tensorflow: only --precisions fp32 for now (docs/frameworks.md)")
    if not precisions or set(precisions) - {"fp32", "amp"}:
        raise UserError(f"--precisions {args.precisions!r}: use fp32 and/or amp")
    not_allowed = [p for p in precisions if p not in rules.precisions]
    if not_allowed:
        raise UserError(f"--precisions: {rules.name} allows {', '.join(rules.precisions)}")
    return precisions


def _check_steps_and_memory(args, device) -> None:
    if args.steps < 1 or args.warmup_steps < 0:
        raise UserError("--steps must be >= 1 and --warmup-steps >= 0")
    if args.oom_search and device.type == "cpu":
        raise UserError("--oom-search needs an accelerator's allocator to run out; on CPU the operating "
                        "system's OOM killer would end the process instead")
    if args.memory_limit_gb is not None and device.type == "cpu":
        raise UserError("--memory-limit-gb caps an accelerator's allocator; it has no meaning on CPU")


def _real_data(args, rules, ref, device):
    """--data real: the dataset, read as the framework's runs read it; None for synthetic data."""
    if args.data != "real":
        return None
    from trainmark.rules.datasets import resolve_data_dir
    data_dir = resolve_data_dir(rules, args.data_dir)
    if args.framework == "pytorch":
        return ref.load_data(data_dir)
    # the framework's own data path (tensorflow-datasets), as its runs read the data
    from trainmark.harness.frameworks import backend
    return backend.backend(args.framework, device, "fp32").load_data(ref, rules, data_dir)


def _progress(p) -> None:
    line = f"  {p['precision']:<5} batch {p['batch_size']:>6}: {p['status']}"
    if p["status"] == "ok":
        line += f", {p['samples_per_s']:.4g} samples/s"
        if p["tflops"] is not None:
            line += f", {p['tflops']:.4g} TFLOP/s"
    elif p["error"]:
        line += f" ({p['error'][:120]})"
    print(line, flush=True)


def _memory_cap(args, device):
    """--memory-limit-gb: the accelerator's allocator capped for the sweep; else nothing."""
    from trainmark.harness.throughput import oom

    return (oom.memory_limit(int(args.memory_limit_gb * 2**30), device) if args.memory_limit_gb
            else contextlib.nullcontext())


def _print_outputs(result, args) -> int:
    from trainmark.harness.throughput import sweep_output

    paths = sweep_output.write_outputs(result, args.out, plots=not args.no_plots)
    print(sweep_output.format_summary(result))
    for label, path in paths.items():
        if path and not args.quiet:
            print(f"{label}: {path}")
    ok = any(p["status"] == "ok" for p in result["points"])
    if not ok:
        print("trainmark sweep: no point ran", file=sys.stderr)
    return 0 if ok else 1


def cmd_sweep(args) -> int:
    from trainmark.cli.arguments import known_benchmark
    from trainmark.harness.measure import energy
    from trainmark.harness.throughput import sweep
    from trainmark.reference import registry
    from trainmark.rules import LATEST_VERSION
    from trainmark.rules.ruleset import get_rules

    sweep_args(args)  # before measuring: '' batch sizes, NaN seconds, an unwritable --out
    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)
    device = device_of(args.device)
    rules = get_rules(args.benchmark, args.rules_version or LATEST_VERSION, args.rules_dir)
    ref = registry.for_rules(rules)
    hp = rules.defaults()
    batch_sizes = _batch_sizes(args, int(hp["global_batch_size"]))
    precisions = _precisions(args, rules)
    _check_steps_and_memory(args, device)
    data = _real_data(args, rules, ref, device)
    settings = sweep.SweepSettings(
        batch_sizes=batch_sizes, precisions=precisions, data=args.data, warmup_steps=args.warmup_steps,
        steps=args.steps, min_seconds=args.min_seconds if args.min_seconds is not None
        else (0.0 if device.type == "cpu" else 2.0), oom_search=args.oom_search, max_batch=args.max_batch,
        framework=args.framework)
    ceilings = load_ceilings(args.ceilings) if args.ceilings else None
    meter = energy.open_meter(str(device), args.energy_estimate_watts)
    cap = _memory_cap(args, device)
    say = (lambda *a, **k: None) if args.quiet else print
    say(f"sweep {rules.name} ({args.framework}) on {device}: batch sizes {batch_sizes}, precisions {precisions}, "
          f"{args.data} data; energy: {meter.method}" + (f" ({meter.reason})" if meter.reason else ""), flush=True)
    with cap:
        result = sweep.run_sweep(ref, hp, device, settings, benchmark=rules.name, meter=meter, data=data,
                                 ceilings=ceilings, progress=(lambda p: None) if args.quiet else _progress)
    return _print_outputs(result, args)
