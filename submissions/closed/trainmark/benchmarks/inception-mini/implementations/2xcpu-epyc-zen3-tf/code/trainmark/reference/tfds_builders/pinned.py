"""What trainmark's tensorflow-datasets builders share: local files pinned by the rules' SHA-256.

Nothing may be downloaded at run time, and the rules pin each benchmark's files by checksum
(``dataset.files``). So every builder reads the folder a TensorFlow trial is given as tfds's
manual-download folder and checks every file against the rules' SHA-256 before reading it; its
builder config is named after the pinned checksums (``files-<16 hex>``), so another set of files
(a test's fixture, the test rules' cuts) builds a dataset of its own and a changed file is never
read from a stale build. Built datasets are kept in ``data/tfds`` (or ``$TRAINMARK_TFDS_DIR``).

Imports TensorFlow (after torch: ``trainmark.reference.tf_import``): only the builders import this module.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import Iterator

import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402
from absl import logging as absl_logging  # noqa: E402

from trainmark.digest import sha256_file  # noqa: E402
from trainmark.errors import UserError  # noqa: E402

DEFAULT_DIR = Path("data/tfds")  # where built datasets are kept, relative to the working folder
ENV_VAR = "TRAINMARK_TFDS_DIR"


@dataclasses.dataclass(eq=False)
class PinnedFiles(tfds.core.BuilderConfig):
    """A builder config for one set of files: (file name, SHA-256) pairs from the rules."""

    files: tuple[tuple[str, str], ...] = ()


def config_for(files: dict[str, str | None], dataset: str, needed: tuple[str, ...] = ()) -> PinnedFiles:
    """The config of the files a rule file pins (entries without a checksum are not read); ``needed``
    names the files the builder reads, which the rules must pin."""
    unpinned = [name for name in needed if not files.get(name)]
    pinned = tuple(sorted((name, digest) for name, digest in files.items() if digest))
    if unpinned or not pinned:
        raise UserError(f"{dataset} through tensorflow-datasets needs the rules' SHA-256 of "
                        f"{', '.join(unpinned) or 'its files'}")
    key = hashlib.sha256("".join(f"{name} {digest}\n" for name, digest in pinned).encode()).hexdigest()[:16]
    return PinnedFiles(name=f"files-{key}", description="built from " + ", ".join(n for n, _ in pinned),
                       files=pinned)


def check_files(folder: Path, config: PinnedFiles, how_to_get: str, digests: bool = True) -> None:
    """A one-line UserError for the first pinned file missing from ``folder`` (or, with ``digests``,
    whose SHA-256 is not the rules')."""
    for name, expected in config.files:
        path = folder / name
        if not path.is_file():
            raise UserError(f"{path}: missing: {how_to_get}")
        if digests and (actual := sha256_file(path)) != expected:
            raise UserError(f"{path}: sha256 {actual[:16]}..., rules say {expected[:16]}...")


def checked_folder(builder: tfds.core.DatasetBuilder, dl_manager) -> Path:
    """The manual-download folder, every pinned file checked: a builder's ``_split_generators`` starts here."""
    folder = Path(dl_manager.manual_dir)
    check_files(folder, builder.builder_config, builder.HOW_TO_GET)
    return folder


def tfds_dir(path: Path | None = None) -> Path:
    return Path(path or os.environ.get(ENV_VAR) or DEFAULT_DIR)


def prepared(builder_class: type, folder: Path, config: PinnedFiles, data_dir: Path | None = None,
             how_to_get: str | None = None) -> tfds.core.DatasetBuilder:
    """The builder of ``config`` in ``data_dir`` (or $TRAINMARK_TFDS_DIR, or data/tfds), built from
    ``folder`` unless it is built already; ``how_to_get`` replaces the builder's own advice."""
    tfds.disable_progress_bar()  # the harness draws its own; tfds's bars would break --quiet's output
    with _scratch_tempdir(), _quiet_absl():
        builder = builder_class(data_dir=str(tfds_dir(data_dir)), config=config)
        if how_to_get is not None:
            builder.HOW_TO_GET = how_to_get
        if not builder.is_prepared():
            # tfds refuses a missing or empty manual folder with a multi-line AssertionError: say which file first
            check_files(Path(folder), config, builder.HOW_TO_GET, digests=False)
            with contextlib.redirect_stdout(io.StringIO()):  # tfds prints "Downloading and preparing ..."
                builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(folder)))
    return builder


@contextlib.contextmanager
def _quiet_absl() -> Iterator[None]:
    """tfds's warnings about what a custom builder is (its whole config, a folder not built yet) are no
    news to a trial: absl logs errors only, meanwhile."""
    saved = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.ERROR)
    try:
        yield
    finally:
        absl_logging.set_verbosity(saved)


@contextlib.contextmanager
def _scratch_tempdir() -> Iterator[None]:
    """``tempfile``'s folder pointed at a temporary folder of its own, removed afterwards: an unbuilt
    builder makes an empty temporary folder for metadata from GCS (off without a network) and never
    removes it."""
    saved = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="trainmark-tfds-") as scratch:
        tempfile.tempdir = scratch
        try:
            yield
        finally:
            tempfile.tempdir = saved


def whole_split(builder: tfds.core.DatasetBuilder, split: str) -> dict:
    """A split of fixed-shape features as numpy arrays, every example in file order."""
    return tfds.as_numpy(builder.as_dataset(split=split, batch_size=-1, shuffle_files=False))


def examples(builder: tfds.core.DatasetBuilder, split: str) -> Iterator[dict]:
    """A split's examples one by one, as numpy, in file order (for features of varying shapes)."""
    return iter(tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)))


def text(values) -> list[str]:
    """A numpy array of UTF-8 byte strings (tfds's Text, read back) as Python strings."""
    return [v.decode("utf-8") for v in values]
