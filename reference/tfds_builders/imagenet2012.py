"""ImageNet (ILSVRC2012) through tensorflow-datasets' own ``imagenet2012`` builder, from the two tars.

tfds builds ``imagenet2012`` from a manual folder holding ``ILSVRC2012_img_train.tar`` and
``ILSVRC2012_img_val.tar``, the archives image-net.org hands out (rules/1.0/resnet50.yaml names them
and their MD5 under ``dataset.archives``); nothing is downloaded. It is built once, as array_record
files, so that examples can be read by index: the reference's own DataLoader (reference/imagenet.py,
with its sampler order, worker seeds and torchvision transforms) then draws from tfds's records the
batches a PyTorch trial draws from the extracted folders.

Two things are put back as the PyTorch loader has them, once per build, in an index kept beside tfds's
files (``trainmark-order-<split>.npz``): the order (class folder, then file name; tfds shuffles its
records by a hash of their keys) and the class numbers (the wnid's place among the classes present,
as torchvision's ImageFolder numbers them; the same as tfds's over all 1,000 wnids, not over a subset).
Images are decoded as the PyTorch path decodes them (PIL, then RGB); tfds re-encodes 23 CMYK images
and one PNG as RGB JPEG when it builds, and only those can differ by a pixel value.

Imports TensorFlow: only the ImageNet twins (reference/keras_twins/imagenet.py) import this module.
"""
from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import numpy as np
import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split
from PIL import Image

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402
from torch.utils.data import Dataset  # noqa: E402

from trainmark.errors import UserError  # noqa: E402
from trainmark.reference import imagenet  # noqa: E402
from trainmark.reference.tfds_builders import pinned  # noqa: E402

ARCHIVES = {"train": "ILSVRC2012_img_train.tar", "validation": "ILSVRC2012_img_val.tar"}
HOW_TO_GET = (f"tensorflow-datasets' imagenet2012 builder reads {ARCHIVES['train']} and {ARCHIVES['validation']} "
              "(registration at https://image-net.org) from --data-dir DIR (or $" + imagenet.ENV_VAR + ")")
ORDER_FILE = "trainmark-order-{split}.npz"


def prepared(folder: Path, data_dir: Path | None = None) -> tfds.core.DatasetBuilder:
    """tfds's imagenet2012, built from the tars in ``folder`` into ``data_dir`` (or $TRAINMARK_TFDS_DIR,
    or data/tfds) as array_record files, unless it is built already."""
    tfds.disable_progress_bar()
    with pinned._scratch_tempdir(), pinned._quiet_absl():  # noqa: SLF001 - the builders' shared quiet build
        builder = tfds.builder("imagenet2012", data_dir=str(pinned.tfds_dir(data_dir)), file_format="array_record")
        if not builder.is_prepared():
            for archive in ARCHIVES.values():
                if not (Path(folder) / archive).is_file():
                    raise UserError(f"{Path(folder) / archive}: missing: {HOW_TO_GET}")
            with contextlib.redirect_stdout(io.StringIO()):
                builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(folder)))
    return builder


def record_order(builder: tfds.core.DatasetBuilder, split: str, classes: list[str] | None = None) -> dict:
    """{"wnids": the classes present, sorted; "index": record numbers in the PyTorch loader's order;
    "labels": their class numbers}, read once from the records' labels and file names and kept in
    ``trainmark-order-<split>.npz`` beside them. ``classes`` fixes the wnids (validation uses train's)."""
    from trainmark.files import write_atomic

    path = Path(builder.data_dir) / ORDER_FILE.format(split=split)
    if not path.is_file():
        source = builder.as_data_source(split, decoders={"image": tfds.decode.SkipDecoding()})
        names = builder.info.features["label"].names
        wnids, files = [], []
        for record in source:  # every record once: the image bytes are read, not decoded
            wnids.append(names[int(record["label"])])
            files.append(record["file_name"].decode() if isinstance(record["file_name"], bytes)
                         else str(record["file_name"]))
        order = np.lexsort((np.array(files), np.array(wnids)))  # wnid first, then file name

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:  # a file, not a name: numpy would append ".npz" to the temporary name
                np.savez(f, index=order.astype(np.int64), wnids=np.array(wnids)[order])
        write_atomic(path, write)
    with np.load(path) as saved:  # arrays of numbers and fixed-width strings: no pickle
        index, wnids = saved["index"], saved["wnids"]
    present = sorted(set(wnids.tolist()))
    if classes is not None and present != classes:
        missing, extra = sorted(set(classes) - set(present)), sorted(set(present) - set(classes))
        raise UserError(f"{builder.data_dir} ({split}): classes differ from train's (missing {missing[:5]}, "
                        f"extra {extra[:5]})")
    position = {wnid: i for i, wnid in enumerate(present)}
    return {"wnids": present, "index": index, "labels": np.array([position[w] for w in wnids.tolist()], np.int64)}


class TfdsImageSplit(Dataset):
    """One split of tfds's records, as ``imagenet.ImageFolderSplit``: ``(uint8 tensor [3, crop, crop], label)``
    per index, in the PyTorch loader's order, through the reference's own transform."""

    # DataLoader workers forked from a process that has run TensorFlow and array_record's readers die of a
    # segmentation fault (measured with 2 workers on the test fixture): they start as fresh processes instead
    worker_start_method = "spawn"

    def __init__(self, builder_dir: str, split: str, index: np.ndarray, labels: np.ndarray, transform):
        self.builder_dir, self.split, self.transform = builder_dir, split, transform
        self.index, self.labels = index, labels
        self._source, self._pid = None, None

    def __len__(self) -> int:
        return len(self.labels)

    def _records(self):
        """The split's data source, opened once per process (DataLoader workers are forked)."""
        if self._source is None or self._pid != os.getpid():
            builder = tfds.builder_from_directory(self.builder_dir)
            self._source = builder.as_data_source(self.split, decoders={"image": tfds.decode.SkipDecoding()})
            self._pid = os.getpid()
        return self._source

    def __getitem__(self, i: int):
        record = self._records()[int(self.index[i])]
        with Image.open(io.BytesIO(record["image"])) as im:
            image = im.convert("RGB")
        return self.transform(image), int(self.labels[i])

    def __getstate__(self) -> dict:  # a worker started by spawn opens its own source
        return {**self.__dict__, "_source": None, "_pid": None}


def load(folder: Path, train_crop: int, eval_resize: int, eval_crop: int,
         data_dir: Path | None = None) -> imagenet.ImageNet:
    """ImageNet through tfds, as ``imagenet.load`` returns it: the same classes, the same examples in the
    same order, the reference's own transforms."""
    builder = prepared(Path(folder), data_dir)
    train = record_order(builder, "train")
    val = record_order(builder, "validation", train["wnids"])
    where, evaluate = str(builder.data_dir), imagenet.eval_transform(eval_resize, eval_crop)
    return imagenet.ImageNet(
        train["wnids"],
        TfdsImageSplit(where, "train", train["index"], train["labels"], imagenet.train_transform(train_crop)),
        TfdsImageSplit(where, "validation", val["index"], val["labels"], evaluate))
