"""What the three full-size ImageNet references share: data path, device transfer, recipe, evaluation.

A subclass names the benchmark, builds its torchvision model and states its resolutions
(``train_crop``; ``eval_resize`` then ``eval_crop``). Batches leave the workers as uint8
``[N, 3, H, W]`` and labels; ``to_device`` copies them (from pinned memory, asynchronously),
makes the images channels-last and normalises them on the device in two in-place passes.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from trainmark.reference import imagenet, sgd_recipe
from trainmark.reference.base import Reference


class ImageNetClassifier(Reference):
    num_classes = 1000
    channels_last = True
    train_crop = 224            # torchvision train.py --train-crop-size default
    eval_resize = 256           # --val-resize-size default
    eval_crop = 224             # --val-crop-size default
    eval_batch_size = 250       # 50,000 / 250 = 200 full batches on one rank

    def __init__(self):
        self._affine: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (3, self.train_crop, self.train_crop)

    def load_data(self, data_dir: Path | None) -> imagenet.ImageNet:
        return imagenet.load(data_dir, self.train_crop, self.eval_resize, self.eval_crop)

    def train_samples(self, data) -> int:
        return len(data.train)

    def eval_samples(self, data) -> int:
        return len(data.val)

    def train_batches(self, data, epoch, batch_size, generator, rank=0, world=1):
        n = len(data.train) // world * world  # every rank gets the same number of samples, hence of steps
        order = torch.randperm(len(data.train), generator=generator)[:n][rank::world]
        order = order[:len(order) // batch_size * batch_size]
        seed = int(torch.randint(0, 2 ** 62, (), generator=generator))  # the workers' augmentation seed
        yield from imagenet.loader(data.train, order.tolist(), batch_size, seed, drop_last=True)

    def _scale_shift(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        key = str(device)
        if key not in self._affine:
            mean = torch.tensor(imagenet.MEAN).view(1, 3, 1, 1)
            std = torch.tensor(imagenet.STD).view(1, 3, 1, 1)
            self._affine[key] = ((1 / (255 * std)).to(device), (-mean / std).to(device))
        return self._affine[key]

    def to_device(self, batch, device, train):
        images, labels = (t.to(device, non_blocking=True) for t in batch)
        if self.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        scale, shift = self._scale_shift(torch.device(device))
        return images.float().mul_(scale).add_(shift), labels  # (x / 255 - mean) / std

    def synthetic_batch(self, batch_size, device="cpu"):
        """Random uint8 images and labels in the form ``train_batches`` yields."""
        images = torch.randint(0, 256, (batch_size, *self.input_shape), dtype=torch.uint8, device=device)
        return images, torch.randint(0, self.num_classes, (batch_size,), device=device)

    def make_optimizer(self, model, hp: dict[str, Any], steps_per_epoch: int):
        return sgd_recipe.make_sgd(model, hp, steps_per_epoch)

    def criterion(self, output, labels, hp):
        return F.cross_entropy(output, labels, label_smoothing=hp["label_smoothing"])

    @torch.no_grad()
    def evaluate(self, model, data, device, rank=0, world=1):
        indices = list(range(rank, len(data.val), world))
        correct = torch.zeros((), dtype=torch.int64, device=device)
        for batch in imagenet.loader(data.val, indices, self.eval_batch_size, seed=0, drop_last=False):
            images, labels = self.to_device(batch, device, train=False)
            correct += (model(images).argmax(1) == labels).sum()
        return float(correct.item()), float(len(indices))
