"""Training samples/s of the harness's training step beside a plain PyTorch step, side by side.

    python benchmarks/reference_step.py [--models resnet-mini lstm-mini transformer-mini resnet50
        inception-v3 vgg16] [--batch 4] [--inception-batch 2] [--mini-batch N] [--steps 3]
        [--repeats 4] [--threads N] [--device cpu|cuda] [--amp] [--plain-contiguous]

"ours" is the step ``trainmark run`` and ``trainmark sweep`` time: the framework seam's
``Trainer.step`` (harness/frameworks/backend.py,
harness/frameworks/pytorch_backend.py) after ``ref.to_device`` (uint8 batch -> normalised
float, channels-last when the reference asks for it): ``ref.loss`` under the precision's autocast,
``zero_grad``, ``backward``, the reference's optimizer and scheduler, and the device-side
non-finite-loss flag. "plain" is the textbook loop on the same architecture, initialisation and
batch (prepared once, already on the device): ``model(...)``, the loss written out by hand
(cross-entropy, plus 0.4 x the auxiliary loss for Inception v3; the LSTM's adaptive-softmax NLL;
the Transformer's label-smoothed cross-entropy), ``backward``, then SGD, or for the sequence models
Adam after clipping the gradient norm as their recipe does. The plain step uses the reference's
memory format (channels-last for the vision models): alternating a channels-last and a contiguous
model in one process slowed the channels-last one by a fifth on this CPU (resnet-mini, 0.83 against
0.99 matched), which measures the layouts' interference, not the harness. ``--plain-contiguous``
gives the earlier comparison (plain contiguous). ``--amp`` runs both under the harness's autocast
(bf16 where supported). Rounds alternate in ABBA order (plain, ours, ours, plain, ...) so drift on a shared
machine hits both alike; medians are compared. Ours must not be slower (ratio >= 0.98, the noise
allowance). The plain step gets the very batch ours converts: random uint8 images ran about 8%
slower than ``torch.randn`` input on this CPU, whatever the step. Minis run at their rules'
default batch unless ``--mini-batch`` says otherwise.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from torchvision.models.inception import InceptionOutputs

from trainmark.harness.frameworks.pytorch_backend import PyTorchBackend, autocast_for
from trainmark.reference import registry
from trainmark.rules import get_rules

TOLERANCE = 0.98  # ratio below which "ours" counts as slower: beyond the round-to-round noise seen here
FULL_SIZE = ("resnet50", "inception-v3", "vgg16")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _fresh_model(ref, seed: int, device: torch.device, channels_last: bool):
    torch.manual_seed(seed)  # both steps start from the same initialisation
    model = ref.build_model().to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model.train()


def plain_vision_loss(model, inputs, labels, hp):
    output = model(*inputs)
    if isinstance(output, InceptionOutputs):
        return F.cross_entropy(output.logits, labels) + 0.4 * F.cross_entropy(output.aux_logits, labels)
    return F.cross_entropy(output, labels)


def plain_lstm_loss(model, inputs, targets, hp):
    return model(*inputs)[0].mean()  # the adaptive softmax returns each token's NLL


def plain_transformer_loss(model, inputs, targets, hp):
    from trainmark.reference.transformer_model import PAD

    logits = model(*inputs)
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=PAD,
                           label_smoothing=hp["label_smoothing"])


def plain_sgd(model, hp):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4), None


def plain_clipped_adam(model, hp):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=hp["opt_base_learning_rate"], betas=(hp["opt_adam_beta1"], hp["opt_adam_beta2"]),
                           eps=hp["opt_adam_epsilon"], weight_decay=hp["opt_weight_decay"])
    return opt, float(hp["opt_gradient_clip_norm"])


PLAIN = {"lstm-mini": (plain_lstm_loss, plain_clipped_adam),
         "transformer-mini": (plain_transformer_loss, plain_clipped_adam)}


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
    precision = "amp" if args.amp else "fp32"
    autocast, _, _ = autocast_for(device, precision)
    vision = name not in PLAIN

    ours_trainer = PyTorchBackend(device, precision).trainer(ref, ref.build_model, hp, None, seed=0,
                                                             count_flops=False, schedule_steps=1000)
    cpu_batch = ref.synthetic_batch(batch, "cpu")
    if device.type == "cuda":
        cpu_batch = tuple(t.pin_memory() for t in cpu_batch)  # as the DataLoader delivers it

    def ours():
        ours_trainer.step(ref.to_device(cpu_batch, device, train=True))

    plain_loss, plain_optimizer = PLAIN.get(name, (plain_vision_loss, plain_sgd))
    channels_last = vision and ref.channels_last and not args.plain_contiguous
    plain_model = _fresh_model(ref, 0, device, channels_last)
    plain_opt, clip = plain_optimizer(plain_model, hp)
    inputs, targets = ref.split_batch(ref.to_device(cpu_batch, device, train=True))  # prepared once, unclocked
    if vision:
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        inputs = tuple(x.contiguous(memory_format=fmt) for x in inputs)

    def plain():
        with autocast():
            loss = plain_loss(plain_model, inputs, targets, hp)
        plain_opt.zero_grad()
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(plain_model.parameters(), clip)
        plain_opt.step()

    for fn in (plain, ours):  # warm-up: allocator, oneDNN/cuDNN algorithm choice
        time_steps(fn, args.warmup, device)
    rates = {plain: [], ours: []}
    for r in range(args.repeats):
        for fn in ((plain, ours) if r % 2 == 0 else (ours, plain)):  # ABBA: linear drift cancels out
            rates[fn].append(batch * args.steps / time_steps(fn, args.steps, device))
    plain_rates, ours_rates = rates[plain], rates[ours]
    return statistics.median(plain_rates), statistics.median(ours_rates)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["resnet-mini", "lstm-mini", "transformer-mini", *FULL_SIZE])
    ap.add_argument("--batch", type=int, default=4, help="batch at 224 pixels (default: %(default)s)")
    ap.add_argument("--inception-batch", type=int, default=2, help="batch at 299 pixels (default: %(default)s)")
    ap.add_argument("--mini-batch", type=int, help="batch of the mini benchmarks (default: their rules')")
    ap.add_argument("--steps", type=int, default=3, help="steps per timed round (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=4, help="alternating rounds (default: %(default)s)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--amp", action="store_true", help="autocast both steps (bf16 where supported)")
    ap.add_argument("--plain-contiguous", action="store_true",
                    help="the plain vision step contiguous (default: the reference's memory format)")
    ap.add_argument("--threads", type=int, help="CPU threads (default: torch's); 1 avoids OpenMP "
                    "oversubscription when other jobs share the cores")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    label = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"
    print(f"{label}; torch {torch.__version__}; {'amp' if args.amp else 'fp32'}; plain "
          f"{'contiguous' if args.plain_contiguous else 'in the reference memory format'}; "
          f"{args.repeats} x {args.steps} steps")
    print(f"{'model':<18}{'batch':>6}{'plain/s':>10}{'ours/s':>10}{'ours/plain':>12}")
    slower = []
    for name in args.models:
        batch = args.inception_batch if name == "inception-v3" else args.batch if name in FULL_SIZE \
            else args.mini_batch or get_rules(name).defaults()["global_batch_size"]
        plain, ours = measure(name, batch, args, device)
        print(f"{name:<18}{batch:>6}{plain:>10.2f}{ours:>10.2f}{ours / plain:>12.3f}", flush=True)
        if ours / plain < TOLERANCE:
            slower.append(name)
    print("ours is slower for: " + ", ".join(slower) if slower else f"ours is not slower (all ratios >= {TOLERANCE})")
    return 1 if slower else 0


if __name__ == "__main__":
    raise SystemExit(main())
