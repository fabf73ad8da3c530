"""Training samples/s of a Fashion-MNIST mini's step by memory layout, thread count and ``torch.compile`` (issue 40).

Where a shorter mini suite could come from without touching a recipe: each configuration runs in its own process
(a channels-last and a contiguous model in one process slow each other, benchmarks/reference_step.py), in rounds
that alternate the configurations so drift on the machine hits them alike. A step is the reference's own
(``ref.to_device``, ``ref.criterion``, its optimizer and schedule) on real Fashion-MNIST batches; ``compile``
wraps the model in ``torch.compile`` and reports the seconds of its first three steps (compilation: about a
minute the first time on a machine, seconds once inductor's cache in the temporary folder holds it).

    python benchmarks/mini_step.py inception-mini --configs cl:2 cl:1 nchw:2 compile:2 --rounds 2
    python benchmarks/mini_step.py resnet-mini --batch 128
    python benchmarks/mini_step.py vgg-mini --configs cl:2 bf16:2

Prints the CPU, then per configuration the samples/s of each round and the median.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time

from trainmark.harness.measure.system import cpu_model


def measure(name: str, layout: str, threads: int, batch: int, steps: int) -> tuple[float, float]:
    """(samples/s over ``steps`` steps, seconds of the three untimed steps before them) in this process."""
    import torch

    from trainmark.reference import registry

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    ref = registry.get(name)
    hp, data = dict(ref.rules.defaults()), ref.load_data(None)
    model = ref.build_model()
    ref.channels_last = layout in ("cl", "compile", "bf16")
    if ref.channels_last:
        model = model.to(memory_format=torch.channels_last)
    forward = torch.compile(model) if layout == "compile" else model
    optimizer, schedule = ref.make_optimizer(model, hp, len(data.train_labels) // batch)
    batches = ref.train_batches(data, 0, batch, torch.Generator().manual_seed(0))
    model.train()

    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if layout == "bf16" else contextlib.nullcontext

    def step() -> None:
        images, labels = ref.to_device(next(batches), torch.device("cpu"), train=True)
        with autocast():
            loss = ref.criterion(forward(images), labels, hp)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()

    start = time.perf_counter()
    for _ in range(3):
        step()
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * batch / (time.perf_counter() - start), first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mini", choices=["resnet-mini", "inception-mini", "vgg-mini"])
    ap.add_argument("--configs", nargs="+", default=["cl:2", "cl:1", "nchw:2", "compile:2"],
                    help="LAYOUT:THREADS, LAYOUT one of cl (the reference's), nchw, compile (cl + torch.compile), "
                         "bf16 (cl under bf16 autocast, as --precision amp on a CPU)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # LAYOUT:THREADS, measured in this process (the child)
    args = ap.parse_args()
    if args.one:
        layout, threads = args.one.split(":")
        rate, first = measure(args.mini, layout, int(threads), args.batch, args.steps)
        print(f"{rate:.1f} {first:.2f}")
        return
    print(f"{args.mini}, batch {args.batch}, {args.steps} steps per round; CPU: {cpu_model()}")
    results: dict[str, list[tuple[float, float]]] = {c: [] for c in args.configs}
    for _ in range(args.rounds):
        for config in args.configs:
            out = subprocess.run([sys.executable, __file__, args.mini, "--one", config, "--batch", str(args.batch),
                                  "--steps", str(args.steps)], capture_output=True, text=True, check=True)
            rate, first = (float(x) for x in out.stdout.split()[-2:])
            results[config].append((rate, first))
    for config, rounds in results.items():
        rates = ", ".join(f"{r:.0f}" for r, _ in rounds)
        firsts = ", ".join(f"{f:.1f}" for _, f in rounds)
        print(f"{config:>10}: {statistics.median(r for r, _ in rounds):6.0f} samples/s (rounds: {rates}); "
              f"first 3 steps {firsts} s")


if __name__ == "__main__":
    main()
