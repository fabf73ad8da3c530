"""Cost of the telemetry sampler: training steps per second with the sampler running at 10 Hz
beside the same steps without it, measured side by side in one run.

    python benchmarks/telemetry_overhead.py [--benchmark resnet-mini] [--batch 32] [--steps 40] [--repeats 4] [--hz 10]

The step loop is the reference's own (model, loss, optimizer) on a synthetic batch, so no dataset is
needed. The sampler reads every source this machine offers (energy domains, NVML/amdsmi GPUs,
cpufreq and thermal zones); where it offers none (a virtual machine), ``--proc`` adds a source reading
/proc/stat and /proc/meminfo each tick so the thread still does comparable work (said in the output).
Runs alternate in ABBA order (without, with, with, without, ...) so drift on a shared machine hits
both alike; the ratio of the medians is printed. Target: at most 1.01x. Say "contended machine" for
any figure measured while other work runs: with 2 cores, a busy neighbour moves PyTorch far more.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch


class ProcSource:
    """Stand-in work for a machine without sensors: two small /proc reads per tick."""

    columns = ["proc.cpu_jiffies", "proc.mem_available_kib"]

    def sample(self):
        cpu = sum(int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:])
        mem = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemAvailable"))
        return [cpu, mem]


def steps_per_s(ref, hp, batch, steps: int, sampler=None, device: str = "cpu") -> float:
    torch.manual_seed(0)
    model = ref.build_model().to(device)
    opt, sched = ref.make_optimizer(model, hp, steps)
    model.train()
    if sampler is not None:
        sampler.start()
    start = time.perf_counter()
    for _ in range(steps):
        loss = ref.loss(model, batch, hp)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    if sampler is not None:
        sampler.stop()
    return steps / elapsed


def main() -> None:
    from trainmark.harness.measure import energy, telemetry
    from trainmark.reference import registry
    from trainmark.rules import get_rules

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", default="resnet-mini")
    ap.add_argument("--batch", type=int, default=32, help="samples per step (default 32: short steps, so the "
                    "sampler's share is not hidden by long ones)")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--hz", type=float, default=10.0)
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:i] (the GPU's meter and NVML telemetry then sampled)")
    ap.add_argument("--proc", action="store_true", help="add the /proc stand-in source (machines without sensors)")
    args = ap.parse_args()
    rules = get_rules(args.benchmark)
    ref = registry.for_rules(rules)
    hp = rules.defaults()
    batch = ref.to_device(ref.synthetic_batch(args.batch, "cpu"), torch.device(args.device), train=True)
    meter = energy.open_meter(args.device)
    meter.start()
    sources = telemetry.sources_for(meter)
    if args.proc:
        sources.append(ProcSource())
    columns = [c for s in sources for c in s.columns]
    print(f"{args.benchmark} on {args.device}: {args.steps} steps x {args.repeats} ABBA pairs, batch {args.batch}, "
          f"torch {torch.__version__}, {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads")
    print(f"sampler at {args.hz:g} Hz over {len(columns)} columns: {', '.join(columns) or '(none on this machine)'}")
    steps_per_s(ref, hp, batch, max(5, args.steps // 4), device=args.device)  # warm-up
    without, with_ = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for arm in (("without", "with") if i % 2 == 0 else ("with", "without")):
                sampler = telemetry.Sampler(Path(tmp) / f"t{i}-{arm}.csv", sources, 1 / args.hz) \
                    if arm == "with" else None
                rate = steps_per_s(ref, hp, batch, args.steps, sampler, args.device)
                (with_ if arm == "with" else without).append(rate)
                extra = f", {sampler.samples} samples" if sampler else ""
                print(f"  pair {i + 1} {arm:>7}: {rate:8.2f} steps/s{extra}")
        cpu_s = sampler_cpu_s(Path(tmp) / "cost.csv", sources)
    meter.stop()
    ratio = statistics.median(without) / statistics.median(with_)
    print(f"median steps/s without {statistics.median(without):.2f}, with {statistics.median(with_):.2f}: "
          f"slowdown {ratio:.4f}x (target <= 1.01x)")
    print(f"sampler CPU time per sample {cpu_s * 1e6:.0f} us: at {args.hz:g} Hz {cpu_s * args.hz * 100:.3f}% "
          "of one core (a bound on the slowdown that machine noise does not blur)")


def sampler_cpu_s(path: Path, sources, samples: int = 200) -> float:
    """Median CPU time of one sample (thread CPU time, so other processes do not inflate it)."""
    from trainmark.harness.measure import telemetry

    sampler = telemetry.Sampler(path, sources, 3600).start()  # the thread's first tick is an hour away
    costs = []
    for _ in range(samples):
        t0 = time.thread_time()
        sampler.sample_now()
        costs.append(time.thread_time() - t0)
    sampler.stop()
    return statistics.median(costs)


if __name__ == "__main__":
    main()
