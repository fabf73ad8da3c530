"""What the mini CNN references on Fashion-MNIST share: in-memory batches, recipe and evaluation.

The data path and recipe of resnet-mini, vgg-mini and inception-mini: no augmentation (rules 1.1's random
horizontal flip cost 0.005 of top-1 in a 3-epoch run, docs/calibration.md); SGD with Nesterov momentum,
warm-up, the peak held, then a linear decay to 0, label smoothing; no weight decay on batch norm and biases.
A change here moves every one of their calibrations: re-run them.
A subclass names the benchmark and builds its model.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from trainmark.reference import fashion_mnist
from trainmark.reference.base import Reference


def warmup_hold_decay_to_zero(step: int, steps_per_epoch: int, warmup_epochs: float, decay_start_epochs: float,
                              decay_epochs: float) -> float:
    """Learning-rate factor: linear warm-up from 0.1 to 1, the peak held until ``decay_start_epochs``
    (at least the warm-up's end; rules without the key decay right after it: inception-mini), then
    linear decay to 0 at ``decay_epochs``. A short final decay lifts every seed's accuracy past the
    target in the same epoch, so time-to-target barely varies between seeds (docs/calibration.md).
    The sequence minis' shape is ``recipe.warmup_linear_decay``."""
    epoch = step / steps_per_epoch
    if epoch < warmup_epochs:
        return 0.1 + 0.9 * epoch / warmup_epochs
    start = max(warmup_epochs, decay_start_epochs)
    if epoch < start:
        return 1.0
    return max(0.0, (decay_epochs - epoch) / max(decay_epochs - start, 1e-9))


class FashionMnistClassifier(Reference):
    input_shape = (1, 28, 28)
    num_classes = 10
    channels_last = True
    eval_batch_size = 1000

    def load_data(self, data_dir: Path | None):
        return fashion_mnist.load(data_dir)

    def train_samples(self, data) -> int:
        return len(data.train_labels)

    def eval_samples(self, data) -> int:
        return len(data.eval_labels)

    def train_batches(self, data, epoch, batch_size, generator, rank=0, world=1):
        n = len(data.train_labels) // world * world  # the same number of steps on every rank
        order = torch.randperm(len(data.train_labels), generator=generator)[:n][rank::world]
        for i in range(len(order) // batch_size):  # the ragged last batch is dropped
            idx = order[i * batch_size:(i + 1) * batch_size]
            yield data.train_images[idx], data.train_labels[idx]

    def to_device(self, batch, device, train):
        images, labels = (t.to(device, non_blocking=True) for t in batch)
        images = (images.unsqueeze(1).float() / 255 - fashion_mnist.MEAN) / fashion_mnist.STD
        if self.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        return images, labels

    def synthetic_batch(self, batch_size, device="cpu"):
        """Random uint8 28x28 images and labels, in the form ``train_batches`` yields."""
        images = torch.randint(0, 256, (batch_size, 28, 28), dtype=torch.uint8, device=device)
        return images, torch.randint(0, self.num_classes, (batch_size,), device=device)

    def make_optimizer(self, model, hp: dict[str, Any], steps_per_epoch: int):
        decay, no_decay = [], []
        for p in model.parameters():
            (no_decay if p.ndim <= 1 else decay).append(p)
        opt = torch.optim.SGD(
            [{"params": decay, "weight_decay": hp["opt_weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
            lr=hp["opt_base_learning_rate"], momentum=hp["opt_momentum"], nesterov=hp["opt_nesterov"])
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: warmup_hold_decay_to_zero(
            step, steps_per_epoch, hp["opt_learning_rate_warmup_epochs"],
            hp.get("opt_learning_rate_decay_start_epochs", 0), hp["opt_learning_rate_decay_epochs"]))
        return opt, sched

    def criterion(self, output, labels, hp):
        return F.cross_entropy(output, labels, label_smoothing=hp["label_smoothing"])

    @torch.no_grad()
    def evaluate(self, model, data, device, rank=0, world=1):
        correct = torch.zeros((), dtype=torch.int64, device=device)
        count = 0
        for start in range(rank * self.eval_batch_size, len(data.eval_labels), self.eval_batch_size * world):
            batch = (data.eval_images[start:start + self.eval_batch_size],
                     data.eval_labels[start:start + self.eval_batch_size])
            images, labels = self.to_device(batch, device, train=False)
            correct += (model(images).argmax(1) == labels).sum()
            count += len(labels)
        return float(correct.item()), float(count)
