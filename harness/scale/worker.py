"""One world size of ``trainmark scale``: every rank of a torchrun launch runs this.

Three timed blocks, repeated and interleaved so that a slow spell on a shared machine hits
all three alike: ``steps`` ordinary data-parallel steps (DDP, gradients all-reduced), ``steps``
steps under ``DistributedDataParallel.no_sync`` (the same compute, no communication) and
``steps`` all-reduces of one flat buffer of the gradients' size (the communication alone).
A block is timed on each rank between a barrier and a device synchronisation; the slowest
rank's time counts, since it gates the step. Each node's local rank 0 writes the same result file
atomically (all ranks hold the gathered figures), so every node of a multi-node launch has them.

With ``--allreduce-sizes`` the ranks also time all-reduces of several message sizes: the
latency and bandwidth of the projection's ring model are fitted from those
(``trainmark.harness.scale.projection.fit_link``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from trainmark.format.artifacts import SCALE_POINT_FORMAT as FORMAT


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trainmark.harness.scale.worker", description=__doc__.splitlines()[0])
    p.add_argument("--benchmark", help="required unless --only-allreduce")
    p.add_argument("--result", type=Path, required=True, help="rank 0 writes the JSON here")
    p.add_argument("--global-batch", type=int, help="required unless --only-allreduce")
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--data", choices=["synthetic", "real"], default="synthetic")
    p.add_argument("--data-dir", type=Path)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--allreduce-sizes", default="", help="comma-separated message sizes in bytes")
    p.add_argument("--only-allreduce", action="store_true", help="time the all-reduce sizes only (trainmark ops)")
    p.add_argument("--rules-version")
    p.add_argument("--rules-dir", type=Path)
    return p


def _block(fn, n: int, sync, barrier) -> float:
    """Seconds per call of ``fn`` over ``n`` calls on this rank, between a barrier and a sync."""
    barrier()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> int:
    from trainmark.errors import UserError

    try:
        return _main(argv)
    except UserError as exc:  # one line per rank, which the launching `trainmark scale` quotes
        import os
        print(f"trainmark scale (rank {os.environ.get('RANK', 0)}): error: {exc}", file=sys.stderr)
        return exc.exit_code


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.only_allreduce and (not args.benchmark or not args.global_batch):
        parser.error("--benchmark and --global-batch are required unless --only-allreduce")
    from trainmark.files import write_json_atomic
    from trainmark.harness.frameworks import distributed, pytorch_scale
    from trainmark.harness.throughput.sweep import resolve_precision

    device, dist = pytorch_scale.join(args.device)
    sync = pytorch_scale.synchronizer(device)
    barrier = dist.barrier
    sizes = [int(s) for s in args.allreduce_sizes.split(",") if s.strip()]
    result: dict = {"format": FORMAT, "world_size": dist.world, **pytorch_scale.group_facts(dist)}
    if not args.only_allreduce:
        result.update(_measure_steps(args, dist, device, sync, barrier, resolve_precision))
    if sizes and dist.world > 1:
        result["allreduce"] = pytorch_scale.measure_allreduce(sizes, args.steps, args.repeats, dist, device, sync,
                                                              barrier, _block)
    if dist.local_rank == 0:  # every node's first rank: the figures are gathered on all ranks, each node keeps them
        write_json_atomic(args.result, result)
    distributed.shutdown()
    return 0


def _measure_steps(args, dist, device, sync, barrier, resolve_precision) -> dict:
    from trainmark.harness.frameworks import pytorch_scale
    from trainmark.harness.frameworks.pytorch_backend import PyTorchBackend
    from trainmark.reference import registry
    from trainmark.rules import LATEST_VERSION
    from trainmark.rules.ruleset import get_rules

    rules = get_rules(args.benchmark, args.rules_version or LATEST_VERSION, args.rules_dir)
    ref = registry.for_rules(rules)
    hp = {**rules.defaults(), "global_batch_size": args.global_batch}
    local = args.global_batch // dist.world
    resolve_precision(device, args.precision)  # refuses a precision other than fp32 or amp
    # the training step `trainmark run` times (the framework seam), DDP-wrapped over the ranks; the same
    # initial weights on every rank (DDP broadcasts them anyway)
    trainer = PyTorchBackend(device, args.precision, dist).trainer(ref, ref.build_model, hp, None, seed=1234,
                                                                   count_flops=False, schedule_steps=100)
    model, label = trainer.model, trainer.precision_used
    batches = _batches(ref, args, rules, local, dist, device)

    def step(synced: bool):
        trainer.step(batches(), sync=synced)

    allreduce, grad_numel, grad_bytes = pytorch_scale.gradient_allreduce(model, device, dist)
    for _ in range(args.warmup_steps):
        step(True)
    synced, compute, comm = [], [], []
    for _ in range(args.repeats):
        synced.append(_block(lambda: step(True), args.steps, sync, barrier))
        if dist.world > 1:  # in a world of one both blocks are the same work: the step is the compute
            compute.append(_block(lambda: step(False), args.steps, sync, barrier))
            comm.append(_block(allreduce, args.steps, sync, barrier))
    compute, comm = compute or synced, comm or [0.0]
    mine = [statistics.median(synced), statistics.median(compute), statistics.median(comm), min(synced), max(synced)]
    per_rank = pytorch_scale.gather(mine, dist, device)
    repeat_spread, rank_spread = _spreads(per_rank)
    step_s, compute_s, comm_s = (max(r[i] for r in per_rank) for i in range(3))
    return {
        "benchmark": rules.name, "data": args.data, "precision_used": label, "device": str(device),
        "global_batch": args.global_batch, "local_batch": local, "steps": args.steps, "repeats": args.repeats,
        "warmup_steps": args.warmup_steps, "parameter_count": grad_numel, "gradient_bytes": grad_bytes,
        "step_s": step_s, "compute_s": compute_s, "comm_s": comm_s,
        "exposed_comm_s": max(0.0, step_s - compute_s), "samples_per_s": args.global_batch / step_s,
        "step_spread": max((x for x in (repeat_spread, rank_spread) if x is not None), default=None),
        "step_spread_repeats": repeat_spread, "step_spread_ranks": rank_spread,
        "per_rank": [{"rank": i, "step_s": r[0], "compute_s": r[1], "comm_s": r[2], "step_s_min": r[3],
                      "step_s_max": r[4]} for i, r in enumerate(per_rank)],
    }


def _spreads(per_rank: list[list[float]]) -> tuple[float | None, float | None]:
    """Step-time spread over each rank's repeats (slowest / fastest - 1, the worst rank) and between the
    ranks' medians: a point whose steps vary more than a bound is suspect (docs/scale.md)."""
    if any(r[0] <= 0 or r[3] <= 0 for r in per_rank):
        return None, None
    repeats = max(r[4] / r[3] - 1 for r in per_rank)
    ranks = max(r[0] for r in per_rank) / min(r[0] for r in per_rank) - 1
    return repeats, ranks


def _batches(ref, args, rules, local: int, dist, device, _unused=None):
    """Synthetic: one device-resident batch reused (no input pipeline). Real: this rank's share, cycled.
    (The last parameter is not used: callers once passed torch.)"""
    from trainmark.harness.throughput.sweep import batch_source

    data = None
    if args.data != "synthetic":
        from trainmark.rules.datasets import resolve_data_dir

        data = ref.load_data(resolve_data_dir(rules, args.data_dir))
    return batch_source(ref, device, local, data, seed=1234, rank=dist.rank, world=dist.world)


if __name__ == "__main__":
    sys.exit(main())
