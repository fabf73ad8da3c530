"""Read a submitted folder without trusting it: no links, no special files, capped sizes.

Every path is opened one component at a time relative to the checked folder's own
descriptor with ``O_NOFOLLOW``, so neither a symbolic link, nor ``..``, nor a link
swapped in between listing and reading can lead outside the folder. Special files
(FIFOs, sockets, devices) are refused before they are opened, because opening one can
block or have side effects.
"""
from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

from trainmark.checker.verdict.registry import ERROR, rule

HOSTILE_001 = rule(
    "HOSTILE-001", ERROR, "a symbolic link (never followed)",
    fix="replace the link by the file itself",
    why="A link could point outside the checked folder (another submitter's results, /etc/passwd) or be swapped "
    "between listing and reading; every path is opened with O_NOFOLLOW, so a link is reported, never read. It cannot "
    "tell whether the link's target was honest: the file must be there itself.",
    bad="results/sys/resnet-mini/result_1.txt -> ../../other/result_1.txt",
    good="result_1.txt as a regular file", module=__name__)
HOSTILE_002 = rule(
    "HOSTILE-002", ERROR, "a file larger than the checker reads",
    fix="a harness-written file stays far below the cap; remove padding or unrelated data",
    why="Every file is read with a cap (64 MiB for logs, 1 MiB for JSON), so a padded or endless file cannot exhaust "
    "memory or time. It proves only that the file is too large to be one the harness wrote; its content is not read.",
    bad="a 200 MiB result_1.txt padded with blank lines",
    good="the result_1.txt the harness wrote (kilobytes)", module=__name__)
HOSTILE_003 = rule(
    "HOSTILE-003", ERROR, "an entry that is neither a regular file nor a folder",
    fix="remove FIFOs, sockets and device files",
    why="Opening a FIFO, socket or device can block forever or have side effects, so such entries are refused before "
    "they are opened. The finding says only what the entry is, not what it would have delivered.",
    bad="a FIFO named epochs.log",
    good="epochs.log as a regular file", module=__name__)
HOSTILE_006 = rule(
    "HOSTILE-006", ERROR, "a folder with more entries than the checker lists",
    fix="keep only the files the format defines",
    why="Listing a folder of millions of entries costs unbounded time and memory; the checker lists at most 10,000 per "
    "folder and refuses the rest. It cannot say which of the entries were meant to be there.",
    bad="a trial folder with 50,000 generated files",
    good="trial_1/ with the few files the harness writes", module=__name__)
HOSTILE_007 = rule(
    "HOSTILE-007", ERROR, "a file or folder that cannot be read",
    fix="make it readable (permissions) or remove it",
    why="A file the checker cannot open (permissions, an I/O error) is evidence nobody can verify; it is an error "
    "rather than silently skipped. It does not say the content was wrong, only that it was not read.",
    bad="trial_1/trial.json with mode 000",
    good="trial_1/trial.json readable by the reviewer", module=__name__)

HOSTILE_008 = rule(
    "HOSTILE-008", ERROR, "a file with more than one hard link (never read)",
    fix="copy the file itself into the folder (cp, not ln)",
    why="A hard link is the same file under two names and O_NOFOLLOW cannot see it: epochs.log linked to /etc/shadow "
    "would be read, and quoted in findings, as a log. A file with more than one link (st_nlink) is refused before it "
    "is read, so its content never appears. It cannot tell an honest copy made with ln from a hostile one.",
    bad="trial_1/epochs.log hard-linked to /etc/passwd",
    good="epochs.log as a file of its own (one link)", module=__name__)

MiB = 1 << 20
LOG_CAP = 64 * MiB        # epochs.log, result_<k>.txt
JSON_CAP = 1 * MiB        # systems/*.json, structure.json
MAX_ENTRIES = 10_000      # per folder listed

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class UnsafeEntry(Exception):
    """A path the checker refuses to read; ``rule`` is the finding's id."""

    def __init__(self, rule: str, message: str, seen: str = ""):
        super().__init__(message)
        self.rule = rule
        self.message = message
        self.seen = seen


class Missing(Exception):
    """The path does not exist (a layout finding, not a hostile one)."""


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str            # "dir", "file", "symlink" or "other"
    size: int = 0
    link_target: str = ""


class SafeTree:
    """Read-only access to the files below one trusted root folder."""

    def __init__(self, root: Path):
        self.root = Path(root)

    # -- opening ---------------------------------------------------------------------
    def _split(self, rel: str) -> list[str]:
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise UnsafeEntry(HOSTILE_001, f"path {rel!r} leaves the checked folder")
        return parts

    def _open_dir_fd(self, parts: list[str], rel: str) -> int:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            for i, name in enumerate(parts):
                sub = "/".join(parts[: i + 1])
                self._refuse_non_dir(fd, name, sub)
                try:
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise self._map_error(exc, sub) from None
                os.close(fd)
                fd = nfd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _refuse_non_dir(self, dir_fd: int, name: str, rel: str) -> None:
        st = self._lstat(dir_fd, name, rel)
        if stat.S_ISLNK(st.st_mode):
            raise self._link_error(dir_fd, name, rel)
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeEntry(HOSTILE_003, f"{rel} is not a folder", _kind_name(st.st_mode))

    def _lstat(self, dir_fd: int, name: str, rel: str) -> os.stat_result:
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise self._map_error(exc, rel) from None

    def _link_error(self, dir_fd: int, name: str, rel: str) -> UnsafeEntry:
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        return UnsafeEntry(HOSTILE_001, link_finding_message(rel, target), f"link -> {target}")

    def _map_error(self, exc: OSError, rel: str) -> Exception:
        if exc.errno == errno.ENOENT:
            return Missing(rel)
        if exc.errno == errno.ELOOP:
            return UnsafeEntry(HOSTILE_001, f"{rel} is a symbolic link; never followed", "symbolic link")
        if exc.errno in (errno.ENXIO, errno.ENODEV):
            return UnsafeEntry(HOSTILE_003, f"{rel} is not a regular file", exc.strerror or "")
        return UnsafeEntry(HOSTILE_007, f"{rel} cannot be read: {exc.strerror}", exc.strerror or "")

    def _open_file_fd(self, rel: str) -> tuple[int, int]:
        """Descriptor and size of the regular file ``rel``."""
        parts = self._split(rel)
        if not parts:
            raise UnsafeEntry(HOSTILE_003, "the checked folder is not a file")
        dir_fd = self._open_dir_fd(parts[:-1], rel)
        try:
            st = self._lstat(dir_fd, parts[-1], rel)
            if stat.S_ISLNK(st.st_mode):
                raise self._link_error(dir_fd, parts[-1], rel)
            if not stat.S_ISREG(st.st_mode):
                raise UnsafeEntry(HOSTILE_003, special_file_message(rel, _kind_name(st.st_mode)),
                                  _kind_name(st.st_mode))
            _refuse_hard_links(st, rel)
            try:
                fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                raise self._map_error(exc, rel) from None
        finally:
            os.close(dir_fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped after the lstat above
            os.close(fd)
            raise UnsafeEntry(HOSTILE_003, special_file_message(rel, _kind_name(st.st_mode)),
                              _kind_name(st.st_mode))
        if st.st_nlink > 1:  # linked after the lstat above
            os.close(fd)
            _refuse_hard_links(st, rel)
        return fd, st.st_size

    # -- reading ---------------------------------------------------------------------
    def read_bytes(self, rel: str, cap: int) -> bytes:
        """The whole file, refused when it is larger than ``cap`` bytes."""
        fd, size = self._open_file_fd(rel)
        try:
            if size > cap:
                raise UnsafeEntry(HOSTILE_002, f"{rel} has {size} bytes; the checker reads at most {cap}",
                                  f"{size} bytes")
            data = _read_fd(fd, cap + 1)
        except OSError as exc:
            raise UnsafeEntry(HOSTILE_007, f"{rel} cannot be read: {exc.strerror}") from None
        finally:
            os.close(fd)
        if len(data) > cap:  # grew while being read
            raise UnsafeEntry(HOSTILE_002, f"{rel} has more than {cap} bytes", f">{cap} bytes")
        return data

    def read_head(self, rel: str, length: int) -> tuple[bytes, int]:
        """The first ``length`` bytes (fewer if the file is shorter) and the file's size."""
        fd, size = self._open_file_fd(rel)
        try:
            return _read_fd(fd, length), size
        except OSError as exc:
            raise UnsafeEntry(HOSTILE_007, f"{rel} cannot be read: {exc.strerror}") from None
        finally:
            os.close(fd)

    def read_range(self, rel: str, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (fewer at the end of the file): weights are read a tensor at a
        time, never whole."""
        fd, _ = self._open_file_fd(rel)
        try:
            return os.pread(fd, length, offset)
        except OSError as exc:
            raise UnsafeEntry(HOSTILE_007, f"{rel} cannot be read: {exc.strerror}") from None
        finally:
            os.close(fd)

    def list_dir(self, rel: str = "") -> list[Entry]:
        """The folder's entries by name, links reported as links (never followed)."""
        parts = self._split(rel)
        fd = self._open_dir_fd(parts, rel)
        entries: list[Entry] = []
        try:
            with os.scandir(fd) as it:
                for item in it:
                    if len(entries) >= MAX_ENTRIES:
                        raise UnsafeEntry(HOSTILE_006, f"{rel or '.'} has more than {MAX_ENTRIES} entries",
                                          f">{MAX_ENTRIES} entries")
                    entries.append(self._entry(fd, item, posixpath.join(rel, item.name)))
        except OSError as exc:
            raise UnsafeEntry(HOSTILE_007, f"{rel or '.'} cannot be listed: {exc.strerror}") from None
        finally:
            os.close(fd)
        return sorted(entries, key=lambda e: e.name)

    def _entry(self, dir_fd: int, item: os.DirEntry, rel: str) -> Entry:
        st = item.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(item.name, dir_fd=dir_fd)
            except OSError:
                target = "?"
            return Entry(item.name, "symlink", 0, target)
        if stat.S_ISDIR(st.st_mode):
            return Entry(item.name, "dir")
        if stat.S_ISREG(st.st_mode):
            return Entry(item.name, "file", st.st_size)
        return Entry(item.name, "other", 0, _kind_name(st.st_mode))


def _refuse_hard_links(st: os.stat_result, rel: str) -> None:
    """HOSTILE-008 for a file with more than one hard link: it may be any file of the machine (never read)."""
    if st.st_nlink > 1:
        raise UnsafeEntry(HOSTILE_008, f"{rel} has {st.st_nlink} hard links: it may be another file of this machine; "
                          "never read", f"{st.st_nlink} hard links")


def link_finding_message(rel: str, target: str) -> str:
    where = "outside the checked folder" if _escapes(rel, target) else "inside the checked folder"
    return f"{rel} is a symbolic link to {target!r} ({where}); never followed"


def special_file_message(rel: str, kind: str) -> str:
    return f"{rel} is a {kind}, not a regular file or folder; never opened"


def _escapes(rel: str, target: str) -> bool:
    if target.startswith("/"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return joined == ".." or joined.startswith("../")


def _read_fd(fd: int, limit: int) -> bytes:
    chunks = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 4 * MiB))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _kind_name(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "folder"), (stat.S_ISLNK, "symbolic link")):
        if test(mode):
            return name
    return "regular file" if stat.S_ISREG(mode) else "special file"
