"""What ``trainmark profile``'s profiler costs: the same training step timed without and with the framework's
profiler, side by side in one process, rounds in ABBA order (plain, profiled, profiled, plain, ...) so that
drift on a shared machine hits both alike; the ratio of the medians is printed (issue 37).

    python benchmarks/profile_overhead.py [--benchmark resnet-mini] [--framework pytorch] [--batch 64]
                                          [--steps 3] [--rounds 4]

A profile states its own overhead too (``consistency.profiler_overhead``: its profiled steps over its
plain steps), from one measurement each; this script repeats it to separate the cost from the noise.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from trainmark.harness.frameworks import backend as _framework
from trainmark.harness.measure.other_load import OtherLoad
from trainmark.harness.measure.system import cpu_model
from trainmark.harness.throughput.sweep import batch_source
from trainmark.reference import registry
from trainmark.rules import get_rules


def _plain(trainer, next_batch, steps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.step(next_batch())
    trainer.loss_value()
    return (time.perf_counter() - t0) / steps


def _profiled(framework: str, trainer, next_batch, steps: int) -> float:
    if framework == "tensorflow":
        from trainmark.harness.frameworks import tensorflow_profile as tp

        _, wall, _ = tp.profiled(trainer.step, next_batch, steps, trainer.loss_value)
    else:
        from trainmark.harness.frameworks import pytorch_profile as pp

        _, wall, _ = pp.profiled(trainer.step, next_batch, steps, torch.device("cpu"), lambda: None)
    return wall / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", default="resnet-mini")
    ap.add_argument("--framework", default="pytorch", choices=("pytorch", "tensorflow"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3, help="steps per measurement")
    ap.add_argument("--rounds", type=int, default=4, help="ABBA rounds (each: 2 plain, 2 profiled)")
    args = ap.parse_args()
    rules = get_rules(args.benchmark)
    ref = registry.for_rules(rules)
    hp = {**rules.defaults(), "global_batch_size": args.batch}
    trainer = _framework.backend(args.framework, torch.device("cpu"), "fp32").trainer(
        ref, ref.build_model, hp, None, seed=0, count_flops=False)
    next_batch = batch_source(ref, torch.device("cpu"), args.batch, None, prepare=trainer.prepare)
    _plain(trainer, next_batch, 2)                                    # warm-up
    _profiled(args.framework, trainer, next_batch, 1)                 # the profiler's first start
    plain, profiled, load = [], [], OtherLoad()
    for _ in range(args.rounds):
        for kind in ("plain", "profiled", "profiled", "plain"):
            if kind == "plain":
                plain.append(_plain(trainer, next_batch, args.steps))
            else:
                profiled.append(_profiled(args.framework, trainer, next_batch, args.steps))
    ratio = statistics.median(profiled) / statistics.median(plain)
    print(f"{args.benchmark} ({args.framework}, batch {args.batch}) on {cpu_model()} "
          f"({torch.get_num_threads()} threads); other processes used {load.percent()} % of the CPUs")
    print(f"median step: plain {1e3 * statistics.median(plain):.1f} ms, profiled "
          f"{1e3 * statistics.median(profiled):.1f} ms over {len(plain)} measurements each")
    print(f"profiled / plain = {ratio:.3f} (profiler overhead {100 * (ratio - 1):.1f} %)")


if __name__ == "__main__":
    main()
