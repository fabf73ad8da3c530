"""Digests of a file, read in 1 MiB blocks: datasets, released reference code, archives."""
from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path | str, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_digests(path: Path | str, kinds: tuple[str, ...], block: int = 1 << 20) -> dict[str, str]:
    """{kind: hex digest} of one file, read once (``md5``: the checksum image-net.org and torchtext publish)."""
    digests = {kind: hashlib.new(kind, usedforsecurity=False) for kind in kinds}
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(block), b""):
            for digest in digests.values():
                digest.update(chunk)
    return {kind: digest.hexdigest() for kind, digest in digests.items()}
