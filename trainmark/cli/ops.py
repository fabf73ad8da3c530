"""``trainmark ops``: matmul/conv2d/bandwidth microbenchmarks, and ``--op allreduce``: the link of a cluster."""
from __future__ import annotations

import json
import sys

from trainmark.cli.arguments import DEVICE_HELP, csv_items, device_of, ops_args
from trainmark.errors import UserError
from trainmark.harness.frameworks.backend import BACKENDS  # stdlib only: keeps --help light

OPS_DEFAULT_DTYPES = {"cpu": "fp32,bf16", "accelerator": "fp32,tf32,bf16,fp16"}  # tf32: NVIDIA only, else skipped


DESCRIPTION = """\
Time matmul, conv2d and memory-bandwidth kernels on one device, forward and backward, and
report each against the datasheet peak: the ceilings that 'trainmark run --ceilings' and
'trainmark sweep --ceilings' report utilization against. '--op allreduce' instead times
all-reduce over ranks launched with torchrun and fits the link 'trainmark scale' projects with."""

EXAMPLES = """\
  trainmark ops --device cuda --json ops.json
  trainmark ops --quick --dtype fp32 -q
  trainmark ops --op allreduce --nproc 4 --device cuda --json allreduce.json
"""


def register(sub) -> None:
    from trainmark.cli.parsing import add_json, command

    p = command(sub, "ops", help="matmul/conv2d/bandwidth microbenchmarks against the datasheet peak",
                description=DESCRIPTION, examples=EXAMPLES)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--dtype", help="comma-separated: fp32, tf32 (CUDA), bf16, fp16 "
                                   f"(default: cpu {OPS_DEFAULT_DTYPES['cpu']}; "
                                   f"an accelerator {OPS_DEFAULT_DTYPES['accelerator']})")
    p.add_argument("--op", default="matmul,conv2d,memory",
                   help="which benchmarks (default: %(default)s); allreduce alone: the link for 'trainmark scale'")
    p.add_argument("--pass", dest="passes", default="fwd,bwd", help="fwd, bwd or both (default: %(default)s)")
    p.add_argument("--shapes", help="only these shape names (see the table), comma-separated")
    p.add_argument("--quick", action="store_true", help="three small shapes, few repeats (seconds; for tests)")
    p.add_argument("--repeats", type=int, help="timings per case (default 5; quick 3)")
    p.add_argument("--no-numpy", action="store_true", help="CPU: skip the NumPy BLAS reference rows")
    p.add_argument("--framework", choices=list(BACKENDS), default="pytorch",
                   help="the framework whose matmul, conv2d and memory kernels are timed (default: %(default)s)")
    p.add_argument("--nproc", type=int, default=2,
                   help="--op allreduce: ranks on this node, launched with torchrun (default: %(default)s)")
    add_json(p.add_argument_group("output"), dest="json_path")
    p.set_defaults(func=cmd_ops)


def cmd_ops(args) -> int:
    from trainmark.harness.frameworks import backend
    from trainmark.harness.throughput import ops
    from trainmark.outputs import is_stdout, write_output

    ops_args(args)  # before measuring: an unwritable --json used to fail only at the end
    backend.available(args.framework)
    device = device_of(args.device)
    if args.framework != "pytorch" and device.type != "cpu":
        raise UserError(f"--framework {args.framework}: only --device cpu for now")
    dtypes = csv_items(args.dtype or OPS_DEFAULT_DTYPES["cpu" if device.type == "cpu" else "accelerator"])
    bad = [d for d in dtypes if d not in (*ops.DTYPES, "fp8")]
    if bad:
        raise UserError(f"--dtype {','.join(bad)}: use fp32, tf32, bf16, fp16")
    op_list = csv_items(args.op)
    if "allreduce" in op_list:  # the link of `trainmark scale`'s projection
        return cmd_allreduce(args, op_list)
    if set(op_list) - {"matmul", "conv2d", "memory"}:
        raise UserError(f"--op {args.op!r}: use matmul, conv2d, memory, or allreduce alone")
    passes = csv_items(args.passes)
    if not passes or set(passes) - {"fwd", "bwd"}:
        raise UserError(f"--pass {args.passes!r}: use fwd, bwd or fwd,bwd")
    shapes = ops.default_shapes(device.type, args.quick)
    if args.shapes:
        wanted = set(csv_items(args.shapes))
        unknown = wanted - {s.name for s in shapes}
        if unknown:
            raise UserError(f"--shapes: unknown {', '.join(sorted(unknown))}; known: "
                            f"{', '.join(s.name for s in shapes)}")
        shapes = [s for s in shapes if s.name in wanted]
    if args.repeats is not None and args.repeats < 1:
        raise UserError("--repeats must be at least 1")
    table_out = sys.stderr if is_stdout(args.json_path) else sys.stdout  # '-': stdout is the JSON alone
    rows_out = None if args.quiet else table_out  # -q: the final report only, no row as it is measured
    print(ops.HEADER, flush=True, file=rows_out or _null())
    report = ops.run_ops(device, dtypes, ops=op_list, passes=passes, quick=args.quick, shapes=shapes,
                         numpy_backend=not args.no_numpy, repeats=args.repeats, framework=args.framework,
                         progress=lambda row: print(ops.format_row(row), flush=True, file=rows_out or _null()))
    if rows_out is not None:
        print(file=table_out)
    print(ops.format_report(report), file=table_out)
    if args.json_path:
        write_output(args.json_path, json.dumps(report, indent=2) + "\n", "--json")
        if not is_stdout(args.json_path):
            print(f"report: {args.json_path}")
    return 0


def _null():
    import io

    return io.StringIO()


def cmd_allreduce(args, op_list: list[str], entry: list[str] | None = None) -> int:
    """``trainmark ops --op allreduce [--nproc N] [--json FILE]``: all-reduce timings and the fitted ring link."""
    from trainmark.harness.scale import saturation
    from trainmark.outputs import is_stdout, write_output

    if op_list != ["allreduce"]:
        raise UserError(f"--op {','.join(op_list)}: allreduce runs alone (it launches torchrun); "
                        "measure matmul, conv2d and memory in a separate call")
    if args.repeats is not None and args.repeats < 1:
        raise UserError("--repeats must be at least 1")
    report = saturation.measure_allreduce(args.nproc, str(device_of(args.device)), steps=3 if args.quick else 5,
                                     repeats=args.repeats or (2 if args.quick else 3), entry=entry)
    print(saturation.format_allreduce(report), file=sys.stderr if is_stdout(args.json_path) else sys.stdout)
    if args.json_path:
        write_output(args.json_path, json.dumps(report, indent=2) + "\n", "--json")
    return 0
