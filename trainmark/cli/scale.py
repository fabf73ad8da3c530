"""``trainmark scale``: the distributed saturation curve and its projection (harness/scale/saturation.py)."""
from __future__ import annotations

from pathlib import Path

from trainmark.cli.arguments import positive_ints
from trainmark.errors import UserError

# validate's model defaults: chosen on the v4.1 and v5.0 pairs themselves (docs/scale.md gives the
# leave-one-benchmark-out figures, which do not reuse a benchmark's own pairs)
VALIDATE_OVERLAP, VALIDATE_FIXED_FRACTION = 0.5, 0.1


def _fraction(value: float | None, default: float, flag: str) -> float:
    value = default if value is None else value
    if not 0 <= value <= 1:
        raise UserError(f"{flag} {value}: must lie in [0, 1]")
    return value


def _ints(text: str, flag: str) -> list[int]:
    return positive_ints(text, flag, "1,2,4", "every value must be a positive integer")


DESCRIPTION = """\
Measure a benchmark's training step over world sizes (one torchrun launch per size): throughput,
scaling efficiency and where it saturates, then project time to train to thousands of
accelerators with a fitted all-reduce link and compute/communication overlap (docs/scale.md).
'trainmark scale validate ROUND_DIR...' checks the projection against MLPerf's published results."""

EXAMPLES = """\
  trainmark scale resnet-mini --nproc 1,2,4 --out scale/
  trainmark scale resnet-mini --device cuda --nproc 1,2,4,8 --link-from allreduce.json -q
  trainmark scale validate training_results_v4.1 training_results_v5.0 --json validate.json
"""


def register(sub) -> None:
    from trainmark.cli.parsing import add_json, add_measured_output, add_rules_group, command
    from trainmark.rules import LATEST_VERSION

    p = command(sub, "scale", help="throughput, efficiency and saturation over world sizes (torchrun), "
                                   "and a projection to thousands of accelerators",
                description=DESCRIPTION, examples=EXAMPLES)
    p.add_argument("benchmark", help="benchmark name ('trainmark list'), or 'validate' followed by MLPerf round "
                                     "folders: the projection checked against every same-system pair in them")
    p.add_argument("rounds", nargs="*", type=Path, metavar="ROUND_DIR",
                   help="with 'validate': MLPerf Training result folders (training_results_vX.Y, or one submitter)")
    model = p.add_argument_group("projection and validate")
    add_json(model)
    model.add_argument("--scaling", choices=["best", "weak", "strong"], default="best",
                       help="projection and validation: weak (each accelerator keeps its batch; the global batch "
                            "grows, capped to what converges), strong (the global batch stays), or best (of the "
                            "covered batches between the two, the one fastest to train) (default: %(default)s)")
    model.add_argument("--fixed-step-fraction", type=float,
                       help="part of the measured compute per step that does not shrink with the local batch (0..1; "
                            f"default: 0 for a projection, {VALIDATE_FIXED_FRACTION} for validate)")
    model.add_argument("--rcp", metavar="MLPERF_BENCHMARK",
                       help="take the convergence points from MLPerf's reference points of this benchmark (e.g. "
                            "resnet, bert), as mlperf-logging ships them (default: the rules' convergence.points)")
    model.add_argument("--rcp-version", help="MLPerf training ruleset of --rcp (e.g. 4.0.0; default: the newest)")
    model.add_argument("--train-samples", type=int,
                       help="training samples per epoch, for time to train (default: from the rules' dataset)")
    model.add_argument("--sweep", type=Path, metavar="SWEEP_JSON",
                       help="projection: compute per step over the local batch from a 'trainmark sweep' report of one "
                            "device (its shape, scaled to the one-rank point), instead of linear in the batch")
    model.add_argument("--max-spread", type=float, default=0.25,
                       help="a point whose step time varies more than this fraction is suspect (default: %(default)s)")
    launch = p.add_argument_group("measurement (torchrun launches)")
    launch.add_argument("--nproc", default="1,2,4",
                        help="processes per node, one torchrun launch each (default: %(default)s)")
    launch.add_argument("--nnodes", type=int, default=1, help="nodes; run the same command on each (default: 1)")
    launch.add_argument("--node-rank", type=int, default=0, help="this node's rank when --nnodes > 1")
    launch.add_argument("--rdzv-endpoint", help="HOST:PORT of node 0 (c10d rendezvous) when --nnodes > 1")
    launch.add_argument("--device", default="auto", help="auto, cpu or an accelerator type (each rank takes the "
                                                         "device of its local rank) (default: auto)")
    launch.add_argument("--precision", default="fp32", choices=["fp32", "amp"], help="fp32 (default) or amp")
    launch.add_argument("--data", choices=["synthetic", "real"], default="synthetic",
                        help="synthetic: one resident batch (no input pipeline, no network); real: the dataset")
    launch.add_argument("--data-dir", type=Path, help="dataset folder for --data real (default: the rules' location)")
    launch.add_argument("--batch-size", type=int, help="global batch size (default: the rules')")
    launch.add_argument("--steps", type=int, default=5, help="steps per timed block (default: %(default)s)")
    launch.add_argument("--warmup-steps", type=int, default=2,
                        help="untimed steps before measuring (default: %(default)s)")
    launch.add_argument("--repeats", type=int, default=3,
                        help="timed blocks per kind; medians count (default: %(default)s)")
    launch.add_argument("--min-gain", type=float, default=0.05,
                        help="saturation: the next world size adds less than this fraction (default: %(default)s)")
    _projection_arguments(p.add_argument_group("projection model"))
    launch.add_argument("--timeout", type=float, default=600.0, help="seconds per launch (default: %(default)s)")
    add_measured_output(p, "scale", "write JSON and CSV only, no scale.png")
    add_rules_group(p, LATEST_VERSION)
    p.set_defaults(func=cmd_scale)


def _inter_link(args):
    """The link between nodes: --node-size with both --inter-link-* flags, or none of them."""
    from trainmark.harness.scale import projection as scale_model

    given = [args.node_size, args.inter_link_bandwidth_gbs, args.inter_link_latency_us]
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        raise UserError("a two-level link needs --node-size, --inter-link-bandwidth-gbs and --inter-link-latency-us")
    if args.node_size < 1:
        raise UserError(f"--node-size {args.node_size}: must be positive")
    try:
        return scale_model.Link(args.inter_link_latency_us * 1e-6, args.inter_link_bandwidth_gbs * 1e9,
                                "between nodes, given on the command line")
    except ValueError as exc:
        raise UserError(f"--inter-link-*: {exc}") from None


def convergence_from_args(args, rules) -> dict:
    """Convergence points (rules or MLPerf's) and samples per epoch for the time-to-train projection."""
    from trainmark.harness.scale import time_to_train as ttt

    if args.rcp:
        conv = ttt.from_mlperf(args.rcp, args.rcp_version)
        if conv is None:
            raise UserError(f"--rcp {args.rcp}: mlperf-logging ships no reference convergence points of that "
                            "benchmark" + (f" at or before {args.rcp_version}" if args.rcp_version else ""))
    else:
        conv = ttt.from_rules(rules)
    if args.train_samples is not None:
        if args.train_samples < 1:
            raise UserError(f"--train-samples {args.train_samples}: must be positive")
        spe, source = args.train_samples, "--train-samples"
    else:
        spe, source = ttt.samples_per_epoch(rules)
    return {"convergence": conv, "samples_per_epoch": spe, "samples_per_epoch_source": source}


def _projection_arguments(p) -> None:
    """The link, overlap and compute model of the projection."""
    p.add_argument("--link-bandwidth-gbs", type=float, help="projection: per-link bandwidth, GB/s (default: fitted)")
    p.add_argument("--link-latency-us", type=float, help="projection: per-hop latency, microseconds")
    p.add_argument("--link-from", type=Path, metavar="ALLREDUCE_JSON",
                   help="projection: the link of a 'trainmark ops --op allreduce --json' report")
    p.add_argument("--node-size", type=int, metavar="N",
                   help="projection: accelerators per node (or NVLink domain); with --inter-link-*: a two-level "
                        "all-reduce, the link above inside a node and this one between nodes, ring or tree")
    p.add_argument("--inter-link-bandwidth-gbs", type=float, help="projection: per-accelerator bandwidth between "
                                                                  "nodes, GB/s (with --node-size)")
    p.add_argument("--inter-link-latency-us", type=float, help="projection: latency between nodes, microseconds")
    p.add_argument("--overlap", type=float,
                   help="projection: fraction of a compute time that hides all-reduce (0..1; default: measured in the "
                        f"largest launch for a projection, {VALIDATE_OVERLAP} for validate)")
    p.add_argument("--project-sizes", default=",".join(map(str, (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096))),
                   help="world sizes to project with the model (default: %(default)s)")


def settings_from_args(args):
    """Validated settings; every refusal happens here, before torchrun starts."""
    from trainmark.cli.arguments import known_benchmark
    from trainmark.harness.scale import projection as scale_model
    from trainmark.harness.scale import saturation as scale
    from trainmark.rules import LATEST_VERSION
    from trainmark.rules.ruleset import get_rules

    if args.rounds:
        raise UserError(f"{args.rounds[0]}: round folders are for `trainmark scale validate ROUND_DIR...`")
    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)
    rules = get_rules(args.benchmark, args.rules_version or LATEST_VERSION, args.rules_dir)
    from trainmark.reference import registry
    registry.for_rules(rules)  # an unknown reference fails here, not in every rank
    if args.precision not in rules.precisions:
        raise UserError(f"--precision {args.precision}: {rules.name} allows {', '.join(rules.precisions)}")
    nprocs = _ints(args.nproc, "--nproc")
    if args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        raise UserError(f"--nnodes {args.nnodes} --node-rank {args.node_rank}: need nnodes >= 1 and "
                        "0 <= node-rank < nnodes")
    if args.steps < 1 or args.warmup_steps < 0 or args.repeats < 1:
        raise UserError("--steps and --repeats must be >= 1, --warmup-steps >= 0")
    if not 0 <= args.min_gain < 1 or not args.max_spread > 0:
        raise UserError("--min-gain must lie in [0, 1) and --max-spread above 0")
    batch = args.batch_size or int(rules.defaults()["global_batch_size"])
    if batch < 1:
        raise UserError(f"--batch-size {batch}: must be positive")
    inter = _inter_link(args)
    if args.sweep is not None and args.fixed_step_fraction is not None:
        raise UserError("--sweep and --fixed-step-fraction: give one model of compute over the batch")
    link = None
    if (args.link_bandwidth_gbs is None) != (args.link_latency_us is None):
        raise UserError("give both --link-bandwidth-gbs and --link-latency-us, or neither (then they are fitted)")
    if args.link_from is not None:
        if args.link_bandwidth_gbs is not None:
            raise UserError("--link-from and --link-bandwidth-gbs/--link-latency-us: give one source of the link")
        link = scale.read_link(args.link_from)
    if args.link_bandwidth_gbs is not None:
        try:
            link = scale_model.Link(args.link_latency_us * 1e-6, args.link_bandwidth_gbs * 1e9,
                                    "given on the command line")
        except ValueError as exc:
            raise UserError(f"--link-*: {exc}") from None
    s = scale.ScaleSettings(
        benchmark=rules.name, nprocs=nprocs, global_batch=batch, nnodes=args.nnodes, node_rank=args.node_rank,
        rdzv_endpoint=args.rdzv_endpoint, device=_device_type(args.device), precision=args.precision, data=args.data,
        data_dir=args.data_dir, steps=args.steps, warmup_steps=args.warmup_steps, repeats=args.repeats,
        min_gain=args.min_gain, rules_version=rules.version, rules_dir=args.rules_dir, timeout_s=args.timeout,
        link=link, overlap=None if args.overlap is None else _fraction(args.overlap, 0.0, "--overlap"),
        fixed_fraction=_fraction(args.fixed_step_fraction, 0.0, "--fixed-step-fraction"),
        compute_curve=scale.read_sweep_curve(args.sweep, args.precision) if args.sweep else (),
        inter_link=inter, node_size=args.node_size if inter else None,
        project_sizes=_ints(args.project_sizes, "--project-sizes"),
        scaling=args.scaling, max_spread=args.max_spread, **convergence_from_args(args, rules))
    scale.check_world_sizes(s.global_batch, s.nprocs, s.nnodes)
    if s.nnodes > 1 and not s.rdzv_endpoint:
        raise UserError("--nnodes > 1 needs --rdzv-endpoint HOST:PORT (node 0's address, the same on every node)")
    return s


def cmd_scale(args, entry: list[str] | None = None) -> int:
    from trainmark.harness.scale import saturation as scale

    if args.benchmark == "validate":
        return cmd_validate(args)
    s = settings_from_args(args)
    say = (lambda *a, **k: None) if args.quiet else print
    say(f"scale {s.benchmark}: world sizes {[n * s.nnodes for n in s.nprocs]}, global batch {s.global_batch}, "
          f"{s.data} data, {s.device}", flush=True)
    result = scale.run_scale(s, entry, progress=lambda p: say(
        f"  world {p['world_size']}: {p['status']}" + (f", {p['samples_per_s']:.4g} samples/s" if p["samples_per_s"]
                                                         else f" ({p['error']})"), flush=True))
    paths = scale.write_outputs(result, args.out, plots=not args.no_plots)
    print(scale.format_summary(result))
    for label, path in paths.items():
        if path and not args.quiet:
            print(f"{label}: {path}")
    return 0 if all(p["status"] in ("ok", "elsewhere") for p in result["points"]) else 1



def cmd_validate(args) -> int:
    """``trainmark scale validate ROUND_DIR... --json FILE``: the projection against the public record."""
    import json

    from trainmark.harness.scale import mlperf_validate
    from trainmark.outputs import ensure_writable, is_stdout, write_output

    if not args.rounds:
        raise UserError("validate needs at least one MLPerf round folder (e.g. training_results_v5.0)")
    ensure_writable(args.json, "--json")
    for folder in args.rounds:
        if not folder.is_dir():
            raise UserError(f"{folder}: not a folder")
    result = mlperf_validate.validate_rounds(
        args.rounds, scaling=args.scaling, overlap=_fraction(args.overlap, VALIDATE_OVERLAP, "--overlap"),
        fixed_fraction=_fraction(args.fixed_step_fraction, VALIDATE_FIXED_FRACTION, "--fixed-step-fraction"),
        progress=(lambda msg: None) if args.quiet else (lambda msg: print(msg, flush=True)))
    if is_stdout(args.json):  # standard output is the JSON alone
        write_output("-", json.dumps(result, indent=2, allow_nan=False) + "\n", "--json")
        return 0
    print(mlperf_validate.format_summary(result))
    if args.json:
        write_output(args.json, json.dumps(result, indent=2, allow_nan=False) + "\n", "--json")
        print(f"json: {args.json}")
    return 0


def _device_type(text: str) -> str:
    """--device for the ranks: the type alone ('auto' resolved here), since each rank takes its local device."""
    from trainmark.cli.arguments import device_of
    return device_of(text).type
