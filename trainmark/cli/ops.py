"""``trainmark ops`` (operator microbenchmarks) and ``trainmark sweep`` (batch-size/precision sweeps)."""
from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from trainmark.errors import UserError
from trainmark.harness.frameworks.backend import BACKENDS  # stdlib only: keeps --help light

OPS_DEFAULT_DTYPES = {"cpu": "fp32,bf16", "cuda": "fp32,tf32,bf16,fp16"}


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _ints(text: str, flag: str) -> list[int]:
    try:
        values = [int(t) for t in _csv(text)]
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected comma-separated integers, e.g. 32,64,128") from None
    if not values or min(values) < 1:
        raise UserError(f"{flag} {text!r}: batch sizes must be positive")
    return values


def _device(text: str):
    from trainmark.harness.run import check_device
    return check_device(text)


def register(sub) -> None:
    p = sub.add_parser("ops", help="matmul/conv2d/bandwidth microbenchmarks against the datasheet peak")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:INDEX")
    p.add_argument("--dtype", help="comma-separated: fp32, tf32 (CUDA), bf16, fp16 "
                                   f"(default: cpu {OPS_DEFAULT_DTYPES['cpu']}; cuda {OPS_DEFAULT_DTYPES['cuda']})")
    p.add_argument("--op", default="matmul,conv2d,memory",
                   help="which benchmarks (default: %(default)s); allreduce alone: the link for `trainmark scale`")
    p.add_argument("--pass", dest="passes", default="fwd,bwd", help="fwd, bwd or both (default: %(default)s)")
    p.add_argument("--shapes", help="only these shape names (see the table), comma-separated")
    p.add_argument("--quick", action="store_true", help="three small shapes, few repeats (seconds; for tests)")
    p.add_argument("--repeats", type=int, help="timings per case (default 5; quick 3)")
    p.add_argument("--no-numpy", action="store_true", help="CPU: skip the NumPy BLAS reference rows")
    p.add_argument("--framework", choices=list(BACKENDS), default="pytorch",
                   help="the framework whose matmul, conv2d and memory kernels are timed (default: %(default)s)")
    p.add_argument("--nproc", type=int, default=2,
                   help="--op allreduce: ranks on this node, launched with torchrun (default: %(default)s)")
    p.add_argument("--json", dest="json_path", metavar="FILE",
                   help="write the full report as JSON to FILE ('-': standard output, instead of the table)")
    p.set_defaults(func=cmd_ops)

    p = sub.add_parser("sweep", help="throughput, TFLOPS, energy and memory over batch sizes and precisions")
    p.add_argument("benchmark", help="benchmark name (`trainmark list`)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:INDEX")
    p.add_argument("--batch-sizes", help="comma-separated (default: 1/4, 1/2, 1 and 2 x the rules' batch size)")
    p.add_argument("--precisions", help="fp32 and/or amp (default: fp32,amp; under tensorflow: fp32)")
    p.add_argument("--data", choices=["synthetic", "real"], default="synthetic",
                   help="synthetic: one device-resident batch (no input pipeline); real: the dataset")
    p.add_argument("--data-dir", type=Path, help="dataset folder for --data real")
    p.add_argument("--framework", choices=list(BACKENDS), default="pytorch",
                   help="the framework whose training step is timed (default: %(default)s; tensorflow: "
                        "fp32 on CPU, docs/frameworks.md)")
    p.add_argument("--steps", type=int, default=10, help="timed steps per point (default: %(default)s)")
    p.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (default: %(default)s)")
    p.add_argument("--min-seconds", type=float, help="time each point at least this long "
                                                      "(default: 2 on CUDA for the energy counter, 0 on CPU)")
    p.add_argument("--oom-search", action="store_true", help="find the largest batch size that fits (CUDA)")
    p.add_argument("--max-batch", type=int, default=1 << 16, help="upper bound of the search (default: %(default)s)")
    p.add_argument("--memory-limit-gb", type=float, help="CUDA: cap the allocator (e.g. to emulate a smaller GPU)")
    p.add_argument("--ceilings", type=Path,
                   help="a `trainmark ops --json` report: utilization against its measured ceilings too")
    p.add_argument("--energy-estimate-watts", type=float,
                   help="when no energy counter exists, report W x time, labelled 'estimated'")
    p.add_argument("--out", type=Path, default=Path("sweep"), help="output folder (default: %(default)s)")
    p.add_argument("--no-plots", action="store_true", help="write the CSV and JSON but no PNG plots")
    p.add_argument("--rules-version", default=None, help="rules version (default: the latest)")
    p.add_argument("--rules-dir", type=Path, help="read rule files from this folder instead of the shipped ones")
    p.set_defaults(func=cmd_sweep)


# ---------------------------------------------------------------- ops

def cmd_ops(args) -> int:
    from trainmark.cli.arguments import ops_args
    from trainmark.harness.frameworks import backend as framework
    from trainmark.harness.throughput import ops
    from trainmark.outputs import is_stdout, write_output

    ops_args(args)  # before measuring: an unwritable --json used to fail only at the end
    framework.available(args.framework)
    device = _device(args.device)
    if args.framework != "pytorch" and device.type != "cpu":
        raise UserError(f"--framework {args.framework}: only --device cpu for now")
    dtypes = _csv(args.dtype or OPS_DEFAULT_DTYPES.get(device.type, "fp32"))
    bad = [d for d in dtypes if d not in (*ops.DTYPES, "fp8")]
    if bad:
        raise UserError(f"--dtype {','.join(bad)}: use fp32, tf32, bf16, fp16")
    op_list = _csv(args.op)
    if "allreduce" in op_list:  # the link of the scale projection (trainmark/cli/scale.py)
        from trainmark.cli.scale import cmd_allreduce
        return cmd_allreduce(args, op_list)
    if set(op_list) - {"matmul", "conv2d", "memory"}:
        raise UserError(f"--op {args.op!r}: use matmul, conv2d, memory, or allreduce alone")
    passes = _csv(args.passes)
    if not passes or set(passes) - {"fwd", "bwd"}:
        raise UserError(f"--pass {args.passes!r}: use fwd, bwd or fwd,bwd")
    shapes = ops.default_shapes(device.type, args.quick)
    if args.shapes:
        wanted = set(_csv(args.shapes))
        unknown = wanted - {s.name for s in shapes}
        if unknown:
            raise UserError(f"--shapes: unknown {', '.join(sorted(unknown))}; known: "
                            f"{', '.join(s.name for s in shapes)}")
        shapes = [s for s in shapes if s.name in wanted]
    if args.repeats is not None and args.repeats < 1:
        raise UserError("--repeats must be at least 1")
    table_out = sys.stderr if is_stdout(args.json_path) else sys.stdout  # '-': stdout is the JSON alone
    print(ops.HEADER, flush=True, file=table_out)
    report = ops.run_ops(device, dtypes, ops=op_list, passes=passes, quick=args.quick, shapes=shapes,
                         numpy_backend=not args.no_numpy, repeats=args.repeats, framework=args.framework,
                         progress=lambda row: print(ops.format_row(row), flush=True, file=table_out))
    print(file=table_out)
    print(ops.format_report(report), file=table_out)
    if args.json_path:
        write_output(args.json_path, json.dumps(report, indent=2) + "\n", "--json")
        if not is_stdout(args.json_path):
            print(f"report: {args.json_path}")
    return 0


# ---------------------------------------------------------------- sweep

def load_ceilings(path: Path) -> dict:
    """Measured ceilings from a ``trainmark ops --json`` report."""
    from trainmark.harness.throughput import ops

    return ops.measured_ceilings(ops.read_report(path)[0])


def cmd_sweep(args) -> int:
    from trainmark.cli.arguments import sweep_args
    from trainmark.harness.measure import energy
    from trainmark.harness.throughput import oom, sweep
    from trainmark.harness.throughput import sweep_output as sweep_report
    from trainmark.reference import registry
    from trainmark.rules import LATEST_VERSION
    from trainmark.rules.ruleset import get_rules

    sweep_args(args)  # before measuring: '' batch sizes, NaN seconds, an unwritable --out
    device = _device(args.device)
    rules = get_rules(args.benchmark, args.rules_version or LATEST_VERSION, args.rules_dir)
    ref = registry.for_rules(rules)
    hp = rules.defaults()
    base = int(hp["global_batch_size"])
    batch_sizes = (_ints(args.batch_sizes, "--batch-sizes") if args.batch_sizes is not None
                   else sorted({max(1, base // 4), max(1, base // 2), base, base * 2}))
    precisions = _csv(args.precisions if args.precisions is not None
                      else "fp32" if args.framework == "tensorflow" else "fp32,amp")
    if args.framework == "tensorflow" and precisions != ["fp32"]:
        raise UserError("--framework tensorflow: only --precisions fp32 for now (docs/frameworks.md)")
    if not precisions or set(precisions) - {"fp32", "amp"}:
        raise UserError(f"--precisions {args.precisions!r}: use fp32 and/or amp")
    not_allowed = [p for p in precisions if p not in rules.precisions]
    if not_allowed:
        raise UserError(f"--precisions: {rules.name} allows {', '.join(rules.precisions)}")
    if args.steps < 1 or args.warmup_steps < 0:
        raise UserError("--steps must be >= 1 and --warmup-steps >= 0")
    if args.oom_search and device.type != "cuda":
        raise UserError("--oom-search needs a device allocator to run out (CUDA); on CPU the operating "
                        "system's OOM killer would end the process instead")
    if args.memory_limit_gb is not None and device.type != "cuda":
        raise UserError("--memory-limit-gb caps the CUDA allocator; it has no meaning on CPU")
    data = None
    if args.data == "real":
        from trainmark.rules.datasets import resolve_data_dir
        data_dir = resolve_data_dir(rules, args.data_dir)
        if args.framework == "pytorch":
            data = ref.load_data(data_dir)
        else:  # the framework's own data path (tensorflow-datasets), as its runs read the data
            from trainmark.harness.frameworks import backend as framework
            data = framework.backend(args.framework, device, "fp32").load_data(ref, rules, data_dir)
    settings = sweep.SweepSettings(
        batch_sizes=batch_sizes, precisions=precisions, data=args.data, warmup_steps=args.warmup_steps,
        steps=args.steps, min_seconds=args.min_seconds if args.min_seconds is not None
        else (2.0 if device.type == "cuda" else 0.0), oom_search=args.oom_search, max_batch=args.max_batch,
        framework=args.framework)
    ceilings = load_ceilings(args.ceilings) if args.ceilings else None
    meter = energy.open_meter(str(device), args.energy_estimate_watts)
    cap = (oom.cuda_memory_limit(int(args.memory_limit_gb * 2**30), device) if args.memory_limit_gb
           else contextlib.nullcontext())
    from trainmark.harness.throughput.sweep_output import format_summary
    print(f"sweep {rules.name} ({args.framework}) on {device}: batch sizes {batch_sizes}, precisions {precisions}, "
          f"{args.data} data; energy: {meter.method}" + (f" ({meter.reason})" if meter.reason else ""), flush=True)

    def progress(p):
        line = f"  {p['precision']:<5} batch {p['batch_size']:>6}: {p['status']}"
        if p["status"] == "ok":
            line += f", {p['samples_per_s']:.4g} samples/s"
            if p["tflops"] is not None:
                line += f", {p['tflops']:.4g} TFLOP/s"
        elif p["error"]:
            line += f" ({p['error'][:120]})"
        print(line, flush=True)

    with cap:
        result = sweep.run_sweep(ref, hp, device, settings, benchmark=rules.name, meter=meter, data=data,
                                 ceilings=ceilings, progress=progress)
    paths = sweep_report.write_outputs(result, args.out, plots=not args.no_plots)
    print(format_summary(result))
    for label, path in paths.items():
        if path:
            print(f"{label}: {path}")
    ok = any(p["status"] == "ok" for p in result["points"])
    if not ok:
        print("trainmark sweep: no point ran", file=sys.stderr)
    return 0 if ok else 1
