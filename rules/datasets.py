"""Dataset checks against the SHA-256 sums the rules pin (``trainmark data verify``)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from trainmark.rules.ruleset import BenchmarkRules


def resolve_data_dir(rules: BenchmarkRules, data_dir: Path | None) -> Path:
    """``--data-dir``, else the rules' environment variable, else the rules' default folder."""
    env = rules.dataset.get("env_var")
    return Path(data_dir or (env and os.environ.get(env)) or rules.dataset["default_dir"])


def sha256(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_dataset(rules: BenchmarkRules, folder: Path) -> list[str]:
    """What is missing or differs from the rules' checksums (empty: the data matches)."""
    problems = []
    for name, expected in rules.dataset["files"].items():
        path = Path(folder) / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif (actual := sha256(path)) != expected:
            problems.append(f"{path}: sha256 {actual[:16]}..., rules say {expected[:16]}...")
    return problems
