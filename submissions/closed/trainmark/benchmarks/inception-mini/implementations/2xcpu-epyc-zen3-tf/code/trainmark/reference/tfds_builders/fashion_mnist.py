"""Fashion-MNIST as a tensorflow-datasets dataset, built from the local files the rules pin.

tfds's own ``fashion_mnist`` builder downloads Zalando's archives and checks them against its own
SHA-256 list; Debian's package holds the same images recompressed (other checksums: the rules'
``dataset.files``), and nothing may be downloaded at run time. This builder reads the folder a
TensorFlow trial is given as tfds's manual-download folder, checks every file against the rules'
SHA-256 before reading it, and writes a tfds dataset with tfds's metadata (features, splits,
example counts) and ``fashion_mnist``'s features and class names.

The builder config is named after the pinned checksums, so another set of files (the tests' subset)
builds a dataset of its own and a changed file can never be read from a stale one. Examples keep the
files' order (``disable_shuffling``): a TensorFlow trial draws exactly the PyTorch reference's batches
for a seed, and a test proves the arrays equal ``trainmark.reference.fashion_mnist.load``'s.

Imports TensorFlow: only ``trainmark.harness.frameworks.tensorflow_backend`` imports this module.
"""
from __future__ import annotations

from pathlib import Path

import torch

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402

from trainmark.reference import fashion_mnist  # noqa: E402
from trainmark.reference.tfds_builders import pinned  # noqa: E402
from trainmark.reference.tfds_builders.pinned import DEFAULT_DIR, ENV_VAR, PinnedFiles, tfds_dir  # noqa: E402,F401

# tfds fashion_mnist's ClassLabel names, in label order
LABELS = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")


def config_for(files: dict[str, str | None]) -> PinnedFiles:
    """The config of the files a rule file pins (entries without a checksum are not read)."""
    return pinned.config_for(files, "Fashion-MNIST")


class TrainmarkFashionMnist(tfds.core.GeneratorBasedBuilder):
    """Fashion-MNIST's four IDX files, read from a local folder, in file order."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "the four IDX files of Fashion-MNIST, checked against the rules' SHA-256"}
    MANUAL_DOWNLOAD_INSTRUCTIONS = HOW_TO_GET = fashion_mnist.HOW_TO_GET

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="Fashion-MNIST (Xiao et al. 2017, arXiv 1708.07747): 28x28 grey images of 10 classes "
                        "of Zalando's articles, 60,000 for training and 10,000 for testing.",
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Image(shape=(28, 28, 1)),
                "label": tfds.features.ClassLabel(names=list(LABELS)),
            }),
            supervised_keys=("image", "label"),
            homepage="https://github.com/zalandoresearch/fashion-mnist",
            disable_shuffling=True,
        )

    def _split_generators(self, dl_manager):
        folder = pinned.checked_folder(self, dl_manager)
        data = fashion_mnist.load(folder)
        return {"train": self._generate_examples(data.train_images, data.train_labels),
                "test": self._generate_examples(data.eval_images, data.eval_labels)}

    def _generate_examples(self, images: torch.Tensor, labels: torch.Tensor):
        for index, (image, label) in enumerate(zip(images.numpy(), labels.numpy())):
            yield index, {"image": image[..., None], "label": int(label)}


def load(folder: Path, files: dict[str, str | None], data_dir: Path | None = None) -> fashion_mnist.FashionMNIST:
    """The rules' Fashion-MNIST through tfds: built once into ``data_dir`` (or $TRAINMARK_TFDS_DIR,
    or data/tfds), then read back whole, as ``fashion_mnist.load`` returns it."""
    builder = pinned.prepared(TrainmarkFashionMnist, folder, config_for(files), data_dir)
    split = {name: pinned.whole_split(builder, name) for name in ("train", "test")}
    as_torch = lambda array: torch.from_numpy(array.copy())  # noqa: E731
    return fashion_mnist.FashionMNIST(
        train_images=as_torch(split["train"]["image"][..., 0]), train_labels=as_torch(split["train"]["label"]).long(),
        eval_images=as_torch(split["test"]["image"][..., 0]), eval_labels=as_torch(split["test"]["label"]).long())
