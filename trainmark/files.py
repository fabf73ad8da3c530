"""Atomic result files: write to a temporary name in the same folder, fsync, rename.

A crash leaves either the old file or the new one, never half of one.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)``, then move the finished file onto ``path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide results from their readers
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")


def append_line(path: Path, line: str) -> None:
    """Append one line to a log and push it to disk (logs are append-only, never rewritten)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_json_report(path: Path | str, flag: str, cap: int = 16 * 2**20) -> tuple[Any, bytes]:
    """A JSON report a user names with ``flag`` (``--ceilings``, ``--link-from``, ``--sweep``) and its
    bytes: at most ``cap`` bytes read; any problem is a one-line UserError naming the flag and file."""
    from trainmark.errors import UserError

    try:
        with open(path, "rb") as fh:
            raw = fh.read(cap + 1)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > cap:
        raise UserError(f"{flag} {path}: larger than {cap} bytes: not a trainmark report")
    try:
        return json.loads(raw.decode("utf-8")), raw
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UserError(f"{flag} {path}: not UTF-8 JSON ({exc})") from None
