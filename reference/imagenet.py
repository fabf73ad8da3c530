"""ImageNet (ILSVRC2012) from the standard folder layout, decoded by DataLoader worker processes.

Layout ``train/<wnid>/*.JPEG`` and ``val/<wnid>/*.JPEG``, as the usual preparation scripts leave
it (torchvision's ``ImageNet`` class, ``valprep.sh``); the class index is the wnid's position in
the sorted list of ``train/`` folders, as torchvision's ``ImageFolder`` assigns it. Workers decode
and augment to uint8 tensors (a quarter of float32's bytes to pin and copy); the reference's
``to_device`` converts and normalises on the device, so a GPU run is limited by the GPU.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T

from trainmark.errors import UserError

DEFAULT_DIR = Path("/data/imagenet")
ENV_VAR = "TRAINMARK_IMAGENET"
WORKERS_ENV = "TRAINMARK_DATA_WORKERS"
HOW_TO_GET = ("ImageNet needs registration at https://image-net.org; extract ILSVRC2012_img_train.tar and "
              "ILSVRC2012_img_val.tar into train/<wnid>/ and val/<wnid>/ (e.g. with torchvision.datasets.ImageNet "
              f"or valprep.sh) and pass --data-dir DIR (or set ${ENV_VAR})")
EXTENSIONS = (".jpeg", ".jpg")
# Channel mean and std of ImageNet in [0, 1]: torchvision references/classification/presets.py.
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def scan(split_dir: Path, classes: list[str] | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(sorted wnids, relative paths, labels) of one split; ``classes`` fixes the wnids (val uses train's)."""
    if not split_dir.is_dir():
        raise UserError(f"ImageNet folder {split_dir} does not exist: {HOW_TO_GET}")
    found = sorted(e.name for e in os.scandir(split_dir) if e.is_dir())
    if classes is not None and found != classes:
        missing, extra = sorted(set(classes) - set(found)), sorted(set(found) - set(classes))
        raise UserError(f"{split_dir}: class folders differ from train/ (missing {missing[:5]}, extra {extra[:5]})")
    if not found:
        raise UserError(f"{split_dir}: no class folders <wnid>/: {HOW_TO_GET}")
    paths, labels = [], []
    for index, wnid in enumerate(found):
        names = sorted(e.name for e in os.scandir(split_dir / wnid)
                       if e.is_file() and e.name.lower().endswith(EXTENSIONS))
        if not names:
            raise UserError(f"{split_dir / wnid}: no JPEG files")
        paths += [f"{wnid}/{n}" for n in names]
        labels += [index] * len(names)
    # One numpy buffer, not a list of Python strings: forked workers then share it without
    # touching reference counts (which would copy every page into every worker).
    return found, np.array(paths, dtype=np.bytes_), np.array(labels, dtype=np.int64)


def train_transform(crop: int) -> T.Compose:
    """torchvision's ClassificationPresetTrain without the optional policies: RandomResizedCrop
    (scale 0.08-1, bilinear) and a horizontal flip with probability 0.5."""
    return T.Compose([T.RandomResizedCrop(crop, antialias=True), T.RandomHorizontalFlip(), T.PILToTensor()])


def eval_transform(resize: int, crop: int) -> T.Compose:
    """torchvision's ClassificationPresetEval: resize the short side, then a center crop."""
    return T.Compose([T.Resize(resize, antialias=True), T.CenterCrop(crop), T.PILToTensor()])


class ImageFolderSplit(Dataset):
    """One split: ``(uint8 tensor [3, crop, crop], label)`` per index."""

    def __init__(self, root: Path, paths: np.ndarray, labels: np.ndarray, transform):
        self.root, self.paths, self.labels, self.transform = Path(root), paths, labels, transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        with Image.open(self.root / self.paths[i].decode()) as im:
            image = im.convert("RGB")  # a few ImageNet "JPEG"s are CMYK or PNG
        return self.transform(image), int(self.labels[i])


@dataclass
class ImageNet:
    classes: list[str]
    train: ImageFolderSplit
    val: ImageFolderSplit


def resolve_dir(data_dir: Path | None) -> Path:
    return Path(data_dir or os.environ.get(ENV_VAR) or DEFAULT_DIR)


def load(data_dir: Path | None, train_crop: int, eval_resize: int, eval_crop: int) -> ImageNet:
    root = resolve_dir(data_dir)
    classes, train_paths, train_labels = scan(root / "train")
    _, val_paths, val_labels = scan(root / "val", classes)
    return ImageNet(classes,
                    ImageFolderSplit(root / "train", train_paths, train_labels, train_transform(train_crop)),
                    ImageFolderSplit(root / "val", val_paths, val_labels, eval_transform(eval_resize, eval_crop)))


def num_workers() -> int:
    """``$TRAINMARK_DATA_WORKERS``, else this rank's share of the CPUs minus one for the training loop."""
    if os.environ.get(WORKERS_ENV):
        return int(os.environ[WORKERS_ENV])
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(0, cpus // int(os.environ.get("LOCAL_WORLD_SIZE", 1)) - 1)


def _has_accelerator() -> bool:
    """Pinned host memory pays only when batches are copied to an accelerator (any type PyTorch knows)."""
    acc = getattr(torch, "accelerator", None)
    return bool(acc is not None and acc.is_available())


def loader(split: ImageFolderSplit, indices: list[int], batch_size: int, seed: int, drop_last: bool) -> DataLoader:
    """Batches of ``split`` in the order of ``indices``; workers' augmentation seeded from ``seed``. Workers
    are forked, unless the split names another start method (``worker_start_method``: tfds's records)."""
    workers = num_workers()
    start = getattr(split, "worker_start_method", None) if workers else None
    return DataLoader(split, batch_size=batch_size, sampler=indices, num_workers=workers, drop_last=drop_last,
                      pin_memory=_has_accelerator(), generator=torch.Generator().manual_seed(seed),
                      multiprocessing_context=start)
