"""Fashion-MNIST from the four standard IDX files (gzip or plain), held in memory.

Default location is where Debian's ``dataset-fashion-mnist`` puts them; ``--data-dir`` or
``$TRAINMARK_FASHION_MNIST`` point elsewhere. Every format problem is a UserError naming the file.
"""
from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trainmark.errors import UserError

DEFAULT_DIR = Path("/usr/share/datasets/fashion-mnist")
ENV_VAR = "TRAINMARK_FASHION_MNIST"
FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "eval_images": "t10k-images-idx3-ubyte",
    "eval_labels": "t10k-labels-idx1-ubyte",
}
HOW_TO_GET = ("install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist), or download "
              "the four *-ubyte.gz files of zalandoresearch/fashion-mnist and pass --data-dir DIR "
              f"(or set ${ENV_VAR})")
# Mean and standard deviation of the 60,000 training images' pixels in [0, 1]
# (computed with `python -m trainmark.reference.fashion_mnist`).
MEAN, STD = 0.2860, 0.3530

_IDX_DTYPES = {0x08: np.uint8}


@dataclass
class FashionMNIST:
    train_images: torch.Tensor  # uint8 [N, 28, 28]
    train_labels: torch.Tensor  # int64 [N]
    eval_images: torch.Tensor
    eval_labels: torch.Tensor


def resolve_dir(data_dir: Path | None) -> Path:
    return Path(data_dir or os.environ.get(ENV_VAR) or DEFAULT_DIR)


def _find(folder: Path, stem: str) -> Path:
    for name in (stem + ".gz", stem):
        if (folder / name).is_file():
            return folder / name
    raise UserError(f"Fashion-MNIST file {stem}[.gz] not found in {folder}: {HOW_TO_GET}")


def read_idx(path: Path) -> np.ndarray:
    """Parse one IDX file: magic (0, 0, dtype, ndim), big-endian dims, then the data."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UserError(f"{path}: cannot read IDX file ({exc}); re-install or re-download it") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise UserError(f"{path}: not an IDX file of unsigned bytes (bad magic number)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise UserError(f"{path}: truncated IDX header")
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    expected = header + int(np.prod(dims))
    if len(raw) != expected:
        raise UserError(f"{path}: IDX size {len(raw)} bytes, header promises {expected}: truncated or corrupt")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load(data_dir: Path | None = None) -> FashionMNIST:
    folder = resolve_dir(data_dir)
    if not folder.is_dir():
        raise UserError(f"Fashion-MNIST folder {folder} does not exist: {HOW_TO_GET}")
    arrays = {key: read_idx(_find(folder, stem)) for key, stem in FILES.items()}
    for split in ("train", "eval"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise UserError(f"{folder}: {split} images {images.shape} and labels {labels.shape} do not pair up")
        if labels.max(initial=0) > 9:
            raise UserError(f"{folder}: {split} labels outside 0-9")
    return FashionMNIST(**{k: torch.from_numpy(v.copy()).long() if "labels" in k else torch.from_numpy(v.copy())
                           for k, v in arrays.items()})


if __name__ == "__main__":
    d = load()
    x = d.train_images.float() / 255
    print(f"mean {x.mean():.4f} std {x.std():.4f}")
