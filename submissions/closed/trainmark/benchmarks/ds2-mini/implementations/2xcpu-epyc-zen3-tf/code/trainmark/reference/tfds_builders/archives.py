"""tensorflow-datasets' own builders fed the archives the rules pin, from a local folder (WMT14, LibriSpeech).

tfds takes a file from its manual-download folder instead of downloading it when the file has the name its
checksums register (``UrlInfo.filename``), and checks the file's size and SHA-256. The checksums handed to
the builder are the rules' (``dataset.archives``: ``{name: {sha256, bytes}}``, copied from tfds's own
checksum files), so another set of archives (a test's miniature ones) is checked against its own rules and
built into a folder of its own (``archives-<16 hex>``), and a changed archive is never read from a stale
build. Nothing is downloaded: a missing or changed archive is a one-line error before tfds starts.

Imports TensorFlow: only the tfds builders of WMT14 and LibriSpeech import this module.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path

import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402
from tensorflow_datasets.core.download import checksums as tfds_checksums  # noqa: E402
from tensorflow_datasets.core.download.download_manager import NonMatchingChecksumError  # noqa: E402

from trainmark.errors import UserError  # noqa: E402
from trainmark.reference.tfds_builders import pinned  # noqa: E402
from trainmark.rules.datasets import archive_problems  # noqa: E402


def url_infos(registered_infos: dict, archives: dict[str, dict], needed: set[str],
              dataset: str) -> dict[str, tfds_checksums.UrlInfo]:
    """tfds's registered URLs (``registered_infos``: a builder's ``url_infos``) of the archives the rules
    name, each with the rules' SHA-256 and size. A UserError names a rules' archive that the builder does not
    register, or one of ``needed`` that the rules leave out."""
    registered = {info.filename: url for url, info in registered_infos.items()}
    unknown, missing = sorted(set(archives) - set(registered)), sorted(needed - set(archives))
    if unknown or missing or any("sha256" not in sums or "bytes" not in sums for sums in archives.values()):
        raise UserError(f"{dataset} through tensorflow-datasets needs the rules' sha256 and bytes of "
                        f"{sorted(needed)} (unknown: {unknown}, missing: {missing})")
    return {registered[name]: tfds_checksums.UrlInfo(size=sums["bytes"], checksum=sums["sha256"], filename=name)
            for name, sums in archives.items()}


def prepared(builder_class: type, folder: Path, archives: dict[str, dict], infos: dict, how_to_get: str,
             data_dir: Path | None = None, **builder_args) -> tfds.core.DatasetBuilder:
    """``builder_class`` (a tfds builder whose ``url_infos`` are ``infos``) built from the archives in ``folder``
    (checked against ``archives``, the rules' {name: {sha256, bytes}}) into ``data_dir`` (or
    $TRAINMARK_TFDS_DIR, or data/tfds)/archives-<key>, unless it is built already."""
    key = hashlib.sha256("".join(f"{i.filename} {i.checksum}\n" for i in sorted(
        infos.values(), key=lambda i: i.filename)).encode()).hexdigest()[:16]
    tfds.disable_progress_bar()
    with pinned._scratch_tempdir(), pinned._quiet_absl():  # noqa: SLF001 - the builders' shared quiet build
        builder = builder_class(data_dir=str(pinned.tfds_dir(data_dir) / f"archives-{key}"), **builder_args)
        if not builder.is_prepared():
            # tfds would try to download a missing archive, and says more than one line of a changed one
            if problems := archive_problems(archives, Path(folder)):
                raise UserError(f"{problems[0]} ({how_to_get})")
            config = tfds.download.DownloadConfig(manual_dir=str(folder), force_checksums_validation=True)
            try:  # tfds checks each archive again as it takes it
                with contextlib.redirect_stdout(io.StringIO()):
                    builder.download_and_prepare(download_config=config)
            except NonMatchingChecksumError as exc:
                raise UserError(f"{folder}: {str(exc).splitlines()[0]}") from None
    return builder
