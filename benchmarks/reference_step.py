"""Training samples/s of our full-size reference step beside a plain PyTorch step, side by side.

    python benchmarks/reference_step.py [--models resnet50 inception-v3 vgg16] [--batch 4]
        [--inception-batch 2] [--steps 3] [--repeats 4] [--threads N]
        [--device cpu|cuda] [--amp] [--channels-last]

"ours" is what the harness runs per step: ``ref.to_device`` (uint8 batch -> normalised float,
channels-last when the reference asks for it), ``ref.loss``, ``zero_grad``, ``backward``,
the reference's optimizer and scheduler. "plain" is the textbook loop on the same architecture,
initialisation and batch (normalised once, already on the device), ``model(x)``, cross-entropy
(plus 0.4 x the auxiliary loss for Inception v3, as its training needs), ``backward``, SGD.
``--channels-last`` makes the plain step channels-last too; ``--amp`` runs both under the
harness's autocast (bf16 where supported). Rounds alternate in ABBA order (plain, ours, ours,
plain, ...) so drift on a shared machine hits both alike; medians are compared. Ours must not be
slower (ratio >= 0.98, the noise allowance). The plain step gets the very batch ours converts:
random uint8 images ran about 8% slower than ``torch.randn`` input on this CPU, whatever the step.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from torchvision.models.inception import InceptionOutputs

from trainmark.harness.trial import autocast_for
from trainmark.reference import registry
from trainmark.rules import get_rules

TOLERANCE = 0.98  # ratio below which "ours" counts as slower: beyond the round-to-round noise seen here


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _fresh_model(ref, seed: int, device: torch.device, channels_last: bool):
    torch.manual_seed(seed)  # both steps start from the same initialisation
    model = ref.build_model().to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model.train()


def plain_loss(output, labels):
    if isinstance(output, InceptionOutputs):
        return F.cross_entropy(output.logits, labels) + 0.4 * F.cross_entropy(output.aux_logits, labels)
    return F.cross_entropy(output, labels)


def time_steps(step, steps: int, device: torch.device) -> float:
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(device)
    return time.perf_counter() - start


def measure(name: str, batch: int, args, device: torch.device) -> tuple[float, float]:
    ref = registry.get(name)
    hp = {**get_rules(name).defaults(), "global_batch_size": batch}
    autocast, _, _ = autocast_for(device, "amp" if args.amp else "fp32")

    ours_model = _fresh_model(ref, 0, device, ref.channels_last)
    ours_opt, ours_sched = ref.make_optimizer(ours_model, hp, steps_per_epoch=1000)
    cpu_batch = ref.synthetic_batch(batch, "cpu")
    if device.type == "cuda":
        cpu_batch = tuple(t.pin_memory() for t in cpu_batch)  # as the DataLoader delivers it

    def ours():
        b = ref.to_device(cpu_batch, device, train=True)
        with autocast():
            loss = ref.loss(ours_model, b, hp)
        ours_opt.zero_grad(set_to_none=True)
        loss.backward()
        ours_opt.step()
        ours_sched.step()

    plain_model = _fresh_model(ref, 0, device, args.channels_last)
    plain_opt = torch.optim.SGD(plain_model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    x, y = ref.to_device(cpu_batch, device, train=True)  # the same batch, prepared once, outside the clock
    x = x.contiguous(memory_format=fmt)

    def plain():
        with autocast():
            loss = plain_loss(plain_model(x), y)
        plain_opt.zero_grad()
        loss.backward()
        plain_opt.step()

    for fn in (plain, ours):  # warm-up: allocator, oneDNN/cuDNN algorithm choice
        time_steps(fn, args.warmup, device)
    rates = {plain: [], ours: []}
    for r in range(args.repeats):
        for fn in ((plain, ours) if r % 2 == 0 else (ours, plain)):  # ABBA: linear drift cancels out
            rates[fn].append(batch * args.steps / time_steps(fn, args.steps, device))
    plain_rates, ours_rates = rates[plain], rates[ours]
    del ours_model, plain_model, ours_opt, plain_opt
    return statistics.median(plain_rates), statistics.median(ours_rates)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["resnet50", "inception-v3", "vgg16"])
    ap.add_argument("--batch", type=int, default=4, help="batch at 224 pixels (default: %(default)s)")
    ap.add_argument("--inception-batch", type=int, default=2, help="batch at 299 pixels (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=3, help="steps per timed round (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=4, help="alternating rounds (default: %(default)s)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--amp", action="store_true", help="autocast both steps (bf16 where supported)")
    ap.add_argument("--channels-last", action="store_true", help="the plain step channels-last too")
    ap.add_argument("--threads", type=int, help="CPU threads (default: torch's); 1 avoids OpenMP "
                    "oversubscription when other jobs share the cores")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    label = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"
    print(f"{label}; torch {torch.__version__}; {'amp' if args.amp else 'fp32'}; plain "
          f"{'channels-last' if args.channels_last else 'contiguous'}; {args.repeats} x {args.steps} steps")
    print(f"{'model':<14}{'batch':>6}{'plain/s':>10}{'ours/s':>10}{'ours/plain':>12}")
    slower = []
    for name in args.models:
        batch = args.inception_batch if name == "inception-v3" else args.batch
        plain, ours = measure(name, batch, args, device)
        print(f"{name:<14}{batch:>6}{plain:>10.2f}{ours:>10.2f}{ours / plain:>12.3f}", flush=True)
        if ours / plain < TOLERANCE:
            slower.append(name)
    print("ours is slower for: " + ", ".join(slower) if slower else f"ours is not slower (all ratios >= {TOLERANCE})")
    return 1 if slower else 0


if __name__ == "__main__":
    raise SystemExit(main())
