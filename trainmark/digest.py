"""SHA-256 of a file, read in 1 MiB blocks: datasets, released reference code, archives."""
from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path | str, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()
