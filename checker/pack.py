"""``trainmark package``'s archive: a submission folder written as one .tar.gz, atomically, with its sha256.

Writing lives here, beside the check that reads an archive back (``read/archive.py`` only unpacks): the
member names keep the folder names above the packed folder that carry meaning (division, submitter).
"""
from __future__ import annotations

import gzip
import os
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import Iterator

from trainmark.digest import sha256_file
from trainmark.errors import UserError
from trainmark.format.layout import DIVISIONS, RESULTS_DIR, SYSTEMS_DIR


def _archive_prefix(folder: Path) -> list[str]:
    """Member-name prefix that keeps the names above ``folder`` which carry meaning."""
    entries = {p.name for p in folder.iterdir() if p.is_dir() and not p.is_symlink()}
    if entries & set(DIVISIONS):
        return []                                        # a submission root
    if folder.name in DIVISIONS:
        return [folder.name]                             # a division
    if entries & {SYSTEMS_DIR, RESULTS_DIR}:
        parent = folder.parent.name
        return [parent, folder.name] if parent in DIVISIONS else [folder.name]   # a submitter
    if any((folder / d / RESULTS_DIR).is_dir() or (folder / d / SYSTEMS_DIR).is_dir() for d in entries):
        return [folder.name]  # MLPerf's layout, a folder of submitters: its name may carry the version
    raise UserError(f"{folder}: not a submission root (closed/, open/), a division or a submitter folder "
                    "(systems/, results/); package one of those")


def _members(folder: Path, skip: set[Path]) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        for name in [*dirnames, *sorted(filenames)]:
            path = here / name
            if path.resolve() in skip:
                continue
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise UserError(f"{path}: a link or special file; a submission holds regular files and folders only")
            yield path


def write_archive(folder: Path, out: Path) -> tuple[Path, str, int]:
    """Write ``out`` (.tar.gz) from ``folder`` atomically; returns (path, sha256, member count)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder")
    out = Path(out)
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise UserError(f"-o {out}: name the archive NAME.tar.gz")
    prefix = _archive_prefix(folder)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    count = 0
    try:
        with os.fdopen(fd, "wb") as raw:
            with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for path in _members(folder, {out.resolve(), Path(tmp).resolve()}):
                    info = tar.gettarinfo(str(path), arcname="/".join([*prefix, path.relative_to(folder).as_posix()]))
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mode = 0o755 if info.isdir() else 0o644
                    if info.isdir():
                        tar.addfile(info)
                    else:
                        with open(path, "rb") as f:
                            tar.addfile(info, f)
                    count += 1
            raw.flush()
            os.fsync(raw.fileno())
        digest = sha256_file(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _update_sums(out.parent / "SHA256SUMS", out.name, digest)
    return out, digest, count


def _update_sums(sums: Path, name: str, digest: str) -> None:
    """Add or replace ``name``'s line in ``SHA256SUMS`` (``sha256sum -c`` format); other lines stay."""
    lines = []
    if sums.is_file():
        lines = [ln for ln in sums.read_text(encoding="utf-8").splitlines()
                 if ln and ln.split(maxsplit=1)[-1].lstrip("*") != name]
    lines.append(f"{digest}  {name}")
    fd, tmp = tempfile.mkstemp(prefix=".SHA256SUMS.", dir=sums.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(ln + "\n" for ln in sorted(lines, key=lambda ln: ln.split(maxsplit=1)[-1])))
    os.chmod(tmp, 0o644)
    os.replace(tmp, sums)
