"""How far a recipe alone moves a Fashion-MNIST mini's epochs to target (issue 40): top-1 after each epoch.

Before a recipe is calibrated through the harness (``trainmark calibrate``, 10 trials), this tries it on
a few seeds with the reference's own model, data, optimizer, loss and evaluation (the mini's class in
``reference/``); only the loop is written here, plain, without the harness's logs, meters and checks,
so its seconds are indicative, not a trial's. What it varies: the epoch count (the schedule's warm-up,
hold and linear decay to 0 at the last epoch), the batch size, the peak rate, label smoothing, the
random horizontal flip (``flip=0``: every epoch sees the images as they are), and inception-mini's width
(``div=16``: every Inception v3 width divided by 16 instead of the reference's 8) and stem (``stem=4``: its
second convolution strided too, so the blocks see 7x7, 3x3 and 1x1 maps instead of 14x14, 6x6 and 2x2).

    python benchmarks/recipe_study.py resnet-mini 3 bs=128 flip=0 seeds=1000,1001
    python benchmarks/recipe_study.py inception-mini 3 bs=128 flip=0 warm=0.5 hold=2 lr=0.2 ls=0.1
    python benchmarks/recipe_study.py inception-mini 3 bs=128 flip=0 div=16

Prints one line per seed: the top-1 on all 10,000 test images after each epoch and each epoch's
training seconds, with the CPU and thread count (compare only lines of one run, on a quiet machine).
"""
from __future__ import annotations

import sys
import time

import torch

from trainmark.harness.measure.system import cpu_model
from trainmark.reference import registry


def unflipped_batches(data, epoch, batch_size, generator):
    """The reference's batches without its random horizontal flip (the ragged last batch dropped alike)."""
    order = torch.randperm(len(data.train_labels), generator=generator)
    for i in range(len(order) // batch_size):
        idx = order[i * batch_size:(i + 1) * batch_size]
        yield data.train_images[idx], data.train_labels[idx]


def recipe(ref, epochs: int, settings: dict[str, str]) -> tuple[dict, int]:
    """The rules' defaults with the study's settings over them: (hyperparameters, batch size)."""
    hp = dict(ref.rules.defaults())
    hp["opt_base_learning_rate"] = float(settings.get("lr", hp["opt_base_learning_rate"]))
    hp["opt_learning_rate_warmup_epochs"] = float(settings.get("warm", 0.5))
    hp["opt_learning_rate_decay_start_epochs"] = float(settings.get("hold", epochs - 1))
    hp["opt_learning_rate_decay_epochs"] = float(epochs)
    hp["label_smoothing"] = float(settings.get("ls", hp["label_smoothing"]))
    return hp, int(settings.get("bs", hp["global_batch_size"]))


def trial(ref, data, hp: dict, batch_size: int, epochs: int, seed: int) -> tuple[list[float], list[float]]:
    """One seed: (top-1 after each epoch, training seconds of each epoch)."""
    torch.manual_seed(seed)
    generator, device = torch.Generator().manual_seed(seed), torch.device("cpu")
    model = ref.build_model()
    if ref.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer, schedule = ref.make_optimizer(model, hp, len(data.train_labels) // batch_size)
    accuracy, seconds = [], []
    for epoch in range(epochs):
        model.train()
        start = time.perf_counter()
        for batch in ref.train_batches(data, epoch, batch_size, generator):
            images, labels = ref.to_device(batch, device, train=True)
            loss = ref.criterion(model(images), labels, hp)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
        seconds.append(round(time.perf_counter() - start, 1))
        model.eval()
        correct, count = ref.evaluate(model, data, device)
        accuracy.append(round(correct / count, 4))
    return accuracy, seconds


def _inception(classes: int, divisor: int, stride_4: bool):
    from trainmark.reference.inception_mini import _init, inception_mini, narrow_conv

    model = inception_mini(classes, divisor=divisor)
    if stride_4:
        model.Conv2d_2a_3x3 = narrow_conv(32, 32, divisor, kernel_size=3, stride=2, padding=1)
        _init(model.Conv2d_2a_3x3)
    return model


def main(argv: list[str]) -> None:
    name, epochs = argv[0], int(argv[1])
    settings = dict(arg.split("=", 1) for arg in argv[2:])
    ref = registry.get(name)
    hp, batch_size = recipe(ref, epochs, settings)
    if settings.get("flip", "1") == "0":
        ref.train_batches = unflipped_batches
    if "div" in settings or "stem" in settings:  # inception-mini narrower, or with a stem of stride 4
        ref.build_model = lambda: _inception(ref.num_classes, int(settings.get("div", 8)), settings.get("stem") == "4")
    data = ref.load_data(None)
    print(f"{name}, {epochs} epochs, {settings}; CPU {cpu_model()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}", flush=True)
    for seed in [int(s) for s in settings.get("seeds", "1000").split(",")]:
        accuracy, seconds = trial(ref, data, hp, batch_size, epochs, seed)
        print(f"  seed {seed}: top-1 {accuracy}, train s {seconds}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
