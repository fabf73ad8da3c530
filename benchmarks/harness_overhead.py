"""Cost of the harness's instrumentation: samples/s of the instrumented trial loop beside a bare
PyTorch loop on the same model, data, recipe and seed, measured side by side in one run.

    python benchmarks/harness_overhead.py [--benchmark resnet-mini] [--epochs 1] [--repeats 2]

Runs alternate in ABBA order (bare, harness, harness, bare, ...) so drift on a shared machine
hits both alike; the ratio of the medians is printed. Target: the harness costs at most 2%.
Run it on a quiet machine: with 2 cores, any other busy process slows PyTorch's OpenMP threads
by far more than the effect being measured.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from trainmark.format.mllog import TrialLogWriter
from trainmark.harness.frameworks.pytorch_backend import PyTorchBackend
from trainmark.harness.measure.energy import open_meter
from trainmark.harness.measure.windows import Monitor
from trainmark.harness.timeline import Timeline
from trainmark.harness.trial import TrialConfig, run_trial
from trainmark.reference import registry
from trainmark.rules import get_rules


def bare_loop(ref, data, hp, epochs: int, seed: int) -> float:
    """The plain PyTorch loop: the same batches, loss and optimizer, nothing else."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = ref.build_model()
    if ref.channels_last:
        model = model.to(memory_format=torch.channels_last)
    bs = hp["global_batch_size"]
    opt, sched = ref.make_optimizer(model, hp, ref.train_samples(data) // bs)
    samples, start = 0, time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        for batch in ref.train_batches(data, epoch, bs, generator):
            batch = ref.to_device(batch, torch.device("cpu"), train=True)
            loss = ref.loss(model, batch, hp)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            samples += bs
    return samples / (time.perf_counter() - start)


def harness_loop(ref, data, rules, hp, epochs: int, seed: int, log_dir) -> float:
    """The real trial loop (Timeline windows, MLLOG, energy meter, divergence checks) and its training
    step (the framework seam's ``Trainer.step``, as ``trainmark run`` uses it), evaluation excluded."""
    cfg = TrialConfig(benchmark=rules.name, trial=1, seed=seed, division="closed", submitter="bench",
                      system_name="bench", rules_version=rules.version, hparams=hp, max_epochs=epochs,
                      eval_every=10 ** 6,
                      target_reached=lambda m: False, metric_name=rules.metric["name"])
    log = TrialLogWriter(log_dir / f"result_{time.monotonic_ns()}.txt")
    meter = open_meter("cpu")
    meter.start()
    try:
        result, _ = run_trial(cfg, ref, data, PyTorchBackend(torch.device("cpu"), "fp32"),
                              Timeline(Monitor(meter), log))
    finally:
        log.close()
        meter.stop()
    return result.train_samples_per_s


def main() -> None:
    import tempfile
    from pathlib import Path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", default="resnet-mini")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=4)
    args = ap.parse_args()
    rules = get_rules(args.benchmark)
    ref = registry.for_rules(rules)
    data = ref.load_data(None)
    hp = rules.defaults()
    bare, harness = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            order = ("bare", "harness") if r % 2 == 0 else ("harness", "bare")
            for which in order:
                if which == "bare":
                    bare.append(bare_loop(ref, data, hp, args.epochs, seed=r))
                else:
                    harness.append(harness_loop(ref, data, rules, hp, args.epochs, seed=r, log_dir=Path(tmp)))
            print(f"repeat {r + 1} ({' then '.join(order)}): bare {bare[-1]:.0f} samples/s, "
                  f"harness {harness[-1]:.0f} samples/s", flush=True)
    b, h = statistics.median(bare), statistics.median(harness)
    print(f"{args.benchmark}: {args.epochs} epoch(s) x {args.repeats} repeats, batch {hp['global_batch_size']}, "
          f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    print(f"median samples/s: bare {b:.0f}, harness {h:.0f}; harness/bare = {h / b:.3f} "
          f"(overhead {100 * (1 - h / b):+.1f}%; target <= 2%)")


if __name__ == "__main__":
    main()
