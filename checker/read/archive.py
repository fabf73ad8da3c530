"""Submission archives: ``trainmark package`` writes them, ``trainmark check ARCHIVE`` unpacks them safely.

Writing: a gzip'd tar of a submission (root, division or submitter folder) whose member names
start at the submission root (``closed/acme/...``), so the folder names that carry meaning
(division, submitter, system) survive; regular files and folders only, owner and group
cleared, sorted, gzip timestamp 0. ``SHA256SUMS`` beside it gets the archive's line.

Reading: a received archive is hostile. Every member is validated before anything is written
(``ARCHIVE-*`` findings): no absolute path, no ``..``, no symbolic or hard link, no device,
FIFO or other special member, no duplicate name, at most ``ArchiveLimits`` members, bytes per
member and bytes in all (the declared sizes, which are also exactly what extraction writes),
and no member, nor the whole archive, expanding more than ``max_ratio`` times the compressed
bytes it was read from (a decompression bomb: validation decompresses into memory only, so
the ratio is measured before anything is written). One finding refuses the whole archive:
nothing is extracted. Otherwise it is extracted with
tarfile's ``data`` filter (where Python has it) into a fresh temporary folder, which is
removed afterwards, also on Ctrl-C and SIGTERM.
"""
from __future__ import annotations

import gzip
import io
import lzma
import posixpath
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule

ARCHIVE_001 = rule(
    "ARCHIVE-001", ERROR, "the archive cannot be read as a tar archive (plain, gzip, bzip2 or xz)",
    fix="write it with `trainmark package FOLDER -o NAME.tar.gz`",
    why="An archive is unpacked only when Python's tarfile reads it as a tar (plain, gzip, bzip2, xz); nothing else is "
    "attempted. It says the container is unreadable, not what it held.",
    bad="submission.zip renamed submission.tar.gz",
    good="`trainmark package closed/acme -o acme.tar.gz`", module=__name__)
ARCHIVE_002 = rule(
    "ARCHIVE-002", ERROR, "an archive member has an absolute path or leaves the archive's folder ('..')",
    fix="archive the folder with relative member names (`trainmark package`)",
    why="A member named /etc/x or ../x would be written outside the temporary folder (path traversal); such an archive "
    "is refused before anything is written. It does not judge the member's content.",
    bad="a member named ../../home/reviewer/.bashrc",
    good="members named closed/acme/results/...", module=__name__)
ARCHIVE_003 = rule(
    "ARCHIVE-003", ERROR, "an archive member is a symbolic or hard link",
    fix="archive the files themselves, not links",
    why="A link member could make a later member write through it outside the folder, or make the checker read a file "
    "that was not submitted; links are refused before extraction. It cannot tell where the link pointed.",
    bad="closed/acme/results/x -> /etc",
    good="closed/acme/results/x as a regular file", module=__name__)
ARCHIVE_004 = rule(
    "ARCHIVE-004", ERROR, "an archive member is a device, FIFO or other special file",
    fix="archive only regular files and folders",
    why="Extracting a device or FIFO can block or touch hardware; only regular files and folders are unpacked. The "
    "finding is about the member's type only.",
    bad="a character-device member",
    good="regular files and folders", module=__name__)
ARCHIVE_005 = rule(
    "ARCHIVE-005", ERROR, "an archive member is larger than the checker unpacks",
    fix="a result file stays far below the cap; remove unrelated data",
    why="The declared size of a member is what extraction writes; a member above the cap would fill the disk. It "
    "proves only the size, not that the data is unrelated.",
    bad="a 20 GiB member",
    good="members of kilobytes to megabytes", module=__name__)
ARCHIVE_006 = rule(
    "ARCHIVE-006", ERROR, "the archive holds more members or more bytes than the checker unpacks",
    fix="archive only the submission folder",
    why="Members and bytes in all are capped so a hostile archive cannot exhaust disk or inodes; checked on the "
    "declared sizes before extraction. It does not say which members were superfluous.",
    bad="an archive of 2 million empty files",
    good="an archive of one submission folder", module=__name__)
ARCHIVE_007 = rule(
    "ARCHIVE-007", ERROR, "an archive member name occurs twice",
    fix="archive each file once (`trainmark package`)",
    why="With a repeated name the later member silently replaces the earlier one, so the reviewer and the checker "
    "could read different files; refused before extraction. It cannot say which copy was meant.",
    bad="two members named closed/acme/results/sys/resnet-mini/result_1.txt",
    good="each member name once", module=__name__)
ARCHIVE_008 = rule(
    "ARCHIVE-008", ERROR, "an archive member, or the whole archive, expands more than 100:1 (a decompression bomb)",
    fix="archive the result folder as `trainmark package` does; padding files of zeros have no place in a submission",
    why="A compression ratio above 100:1 is a decompression bomb (gigabytes of zeros from kilobytes); validation "
    "decompresses into memory only and stops there. Honest logs and weights compress far less; the ratio cannot prove "
    "intent.",
    bad="a 10 KiB .tar.gz expanding to 10 GiB of zeros",
    good="`trainmark package` output (ratios around 3:1 to 10:1)", module=__name__)

GiB = 1 << 30


@dataclass(frozen=True)
class ArchiveLimits:
    """What ``trainmark check`` unpacks at most (weights of the full-size references stay far below)."""
    max_members: int = 100_000
    max_member_bytes: int = 4 * GiB
    max_total_bytes: int = 16 * GiB
    max_ratio: float = 100.0         # logs compress about 10:1, weights barely; zeros about 1000:1
    ratio_from_bytes: int = 1 << 20  # smaller members (and archives) are not judged: they cannot be bombs


# -- reading ------------------------------------------------------------------------------
def validate_members(tar: tarfile.TarFile, limits: ArchiveLimits, findings: Findings, label: str,
                     compressed: Callable[[], int] | None = None) -> list[tarfile.TarInfo]:
    """Every member, checked; findings for each refused one. Stops at the member, byte or ratio limit.

    ``compressed`` says how many bytes of the archive file have been read so far (None: not compressed).
    """
    members: list[tarfile.TarInfo] = []
    names: set[str] = set()
    total = 0
    ratio = _RatioWatch(limits, findings, label, compressed)
    for index, member in enumerate(tar, start=1):
        if not ratio.passed():
            return members
        if index > limits.max_members:
            findings.add(ARCHIVE_006, label, f"{label} holds more than {limits.max_members} members; not unpacked",
                         expected=f"at most {limits.max_members} members", seen=f">{limits.max_members}")
            return members
        _check_member(member, label, findings)
        if member.size > limits.max_member_bytes:
            findings.add(ARCHIVE_005, label, f"{label}: {member.name}: {member.size} bytes; the checker unpacks at "
                         f"most {limits.max_member_bytes} per member", expected=f"at most {limits.max_member_bytes}",
                         seen=member.size)
            return members  # its data is not read, not even skipped over
        total += member.size
        if total > limits.max_total_bytes:
            findings.add(ARCHIVE_006, label, f"{label} holds more than {limits.max_total_bytes} bytes; not unpacked",
                         expected=f"at most {limits.max_total_bytes} bytes", seen=f">{limits.max_total_bytes}")
            return members
        key = posixpath.normpath(member.name).rstrip("/") if member.name else ""
        if key in names:
            findings.add(ARCHIVE_007, label, f"{label}: {member.name}: the name occurs twice",
                         expected="each name once", seen=member.name)
        names.add(key)
        members.append(member)
        ratio.started(member)
    if ratio.passed():
        ratio.whole(total)
    return members


def _check_member(member: tarfile.TarInfo, label: str, findings: Findings) -> None:
    """The member's path and kind (ARCHIVE-002, -003, -004)."""
    name = member.name
    where = f"{label}: {name}"
    normal = posixpath.normpath(name) if name else ""
    if not name or "\0" in name or name.startswith("/") or (name[:1].isalpha() and name[1:2] == ":") or \
            normal == ".." or normal.startswith("../") or ".." in name.split("/") or "\\" in name:
        findings.add(ARCHIVE_002, label, f"{where}: member path is absolute or leaves the folder",
                     expected="a relative path without '..'", seen=name)
    if member.issym() or member.islnk():
        findings.add(ARCHIVE_003, label, f"{where}: a {'symbolic' if member.issym() else 'hard'} link to "
                     f"{member.linkname!r}", expected="regular files and folders", seen=f"link -> {member.linkname}")
    elif not (member.isreg() or member.isdir()) or member.issparse():
        kind = ("character device" if member.ischr() else "block device" if member.isblk() else
                "FIFO" if member.isfifo() else "sparse file" if member.issparse() else "special member")
        findings.add(ARCHIVE_004, label, f"{where}: a {kind}", expected="regular files and folders", seen=kind)


class _RatioWatch:
    """Compressed bytes read per member, measured from one member's header to the next (ARCHIVE-008).

    The decompressors read the archive file in pieces of ``READ_SLACK`` bytes at most (8 KiB; gzip 128 KiB
    from Python 3.12), so a member's compressed size is known to within that: it is counted in the member's
    favour, and only members of more than 100 times that (12.8 MiB) can be refused.
    """

    READ_SLACK = 128 << 10

    def __init__(self, limits: ArchiveLimits, findings: Findings, label: str, compressed: Callable[[], int] | None):
        self.limits, self.findings, self.label, self.compressed = limits, findings, label, compressed
        self.member: tarfile.TarInfo | None = None
        self.since = 0
        self.ok = True

    def started(self, member: tarfile.TarInfo) -> None:
        """``member``'s data comes next (its header has been read)."""
        if self.compressed is not None and member.isreg():
            self.member, self.since = member, self.compressed()

    def passed(self) -> bool:
        """False once the member read last expanded past the ratio (its finding added)."""
        member, self.member = self.member, None
        if self.ok and member is not None and member.size >= self.limits.ratio_from_bytes:
            read = self.compressed() - self.since + self.READ_SLACK
            self._judge(member.size, read, f"{self.label}: {member.name}: {member.size} bytes")
        return self.ok

    def whole(self, total: int) -> None:
        """The archive's expanded total against its file's compressed bytes."""
        if self.compressed is not None and total >= self.limits.ratio_from_bytes:
            self._judge(total, self.compressed() + self.READ_SLACK, f"{self.label}: {total} bytes in all")

    def _judge(self, expanded: int, read: int, what: str) -> None:
        if expanded > self.limits.max_ratio * read:
            self.ok = False
            self.findings.add(ARCHIVE_008, self.label, f"{what} expand from at most {read} compressed bytes "
                              f"({expanded / read:.0f}:1); the checker unpacks at most {self.limits.max_ratio:g}:1; "
                              "not unpacked", expected=f"at most {self.limits.max_ratio:g}:1",
                              seen=f"{expanded / read:.0f}:1")


class _HeaderTooLarge(Exception):
    pass


class _CappedReads(io.RawIOBase):
    """A file whose single ``read`` is at most ``cap`` bytes.

    tarfile reads a PAX or GNU long-name header whole, before any member is returned: a header
    declaring gigabytes would be allocated before validation could see it. Data is read in
    16 KiB pieces, so only such a header ever asks for more.
    """

    def __init__(self, raw, cap: int, file=None):
        self._raw, self._cap, self._file = raw, cap, file  # file: under a decompressor, closed with it

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or n > self._cap:
            raise _HeaderTooLarge(f"a header of {n} bytes")
        return self._raw.read(n)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        self._raw.close()
        if self._file is not None:
            self._file.close()
        super().close()


def _open_decompressed(archive: Path):
    """(the archive's tar stream, the file under it, how many bytes of that file were read so far or None
    when it is not compressed): gzip, bzip2 and xz recognised by their first bytes."""
    import bz2

    raw = open(archive, "rb")
    try:
        magic = raw.read(6)
        raw.seek(0)
        for start, kind in ((b"\x1f\x8b", gzip.GzipFile), (b"BZh", bz2.BZ2File), (b"\xfd7zXZ\x00", lzma.LZMAFile)):
            if magic.startswith(start):
                stream = kind(fileobj=raw, mode="rb") if kind is gzip.GzipFile else kind(raw, "rb")
                return stream, raw, raw.tell
    except BaseException:
        raw.close()
        raise
    return raw, raw, None


HEADER_CAP = 1 << 20  # a PAX header or GNU long name: paths and a few fields, never near this


def unpack(archive: Path, dest: Path, findings: Findings, limits: ArchiveLimits = ArchiveLimits()) -> bool:
    """Validate every member of ``archive``, then extract into the empty folder ``dest``; False if refused."""
    label = Path(archive).name
    before = len(findings)
    try:
        opened, file, compressed = _open_decompressed(archive)
        with _CappedReads(opened, HEADER_CAP, file) as stream, tarfile.open(fileobj=stream, mode="r:") as tar:
            members = validate_members(tar, limits, findings, label, compressed)
            if len(findings) > before:
                return False
            kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(dest, members=members, **kwargs)
    except _HeaderTooLarge as exc:
        findings.add(ARCHIVE_005, label, f"{label}: {exc}; the checker reads headers of at most {HEADER_CAP} bytes",
                     expected=f"at most {HEADER_CAP} bytes", seen=str(exc))
        return False
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as exc:
        findings.add(ARCHIVE_001, label, f"{label} cannot be unpacked: {type(exc).__name__}: {exc}",
                     expected="a tar archive (plain, gzip, bzip2 or xz)", seen=type(exc).__name__)
        return False
    return True
