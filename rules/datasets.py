"""Dataset checks against what the rules pin (``trainmark data verify``).

Small datasets pin every file's SHA-256 (``dataset.files``). Datasets of a million files
(ImageNet) pin a *listing* instead (``dataset.listing``): per split folder, the number of class
folders and files, and the SHA-256 of the sorted lines ``<relative path>\t<size in bytes>\n`` of
every regular file under it. Hashing 140 GB of JPEGs before every run is impractical; the
listing catches a missing, extra, renamed, truncated or re-encoded file from one ``stat`` per
file (seconds), though not a same-size corruption.

Nothing here opens a file before ``stat`` says it is a regular one: a FIFO would block the
read forever, a device could be endless. Before any byte is hashed the cheap facts decide:
the size the rules pin (``archives``' ``bytes``); for a file the rules pin by checksum alone,
a bound (``PINNED_FILE_MAX_BYTES``: the largest such file today is 26 MB); and a file with
fewer than 1/``SPARSE_RATIO`` of its bytes on disk (``truncate -s 20G``) is mostly holes, not
downloaded data. Archives pinned by md5 alone (ImageNet's) are otherwise hashed in full
(minutes): their sizes belong in the rules. ``trainmark data prepare`` refuses a ``--source``
that is, or holds, anything but regular files and folders, and a data folder holding a special
file where the reference writes (``refuse_special_files``).
"""
from __future__ import annotations

import hashlib
import itertools
import os
import stat
from pathlib import Path

from trainmark.digest import file_digests, sha256_file
from trainmark.rules.ruleset import BenchmarkRules


def resolve_data_dir(rules: BenchmarkRules, data_dir: Path | None) -> Path:
    """``--data-dir``, else the rules' environment variable, else the rules' default folder."""
    env = rules.dataset.get("env_var")
    return Path(data_dir or (env and os.environ.get(env)) or rules.dataset["default_dir"])


LISTING_SCHEME = "sha256-of-sorted-path-tab-size-lines/1"
PINNED_FILE_MAX_BYTES = 1 << 30  # a file pinned by its sha256 alone; larger ones are refused, not hashed
SPARSE_RATIO = 16                # fewer than 1/16 of its bytes on disk: a file of holes (compressed file
#                                  systems store data files at 1-4:1)
SPARSE_FROM_BYTES = 1 << 20
SOURCE_MAX_ENTRIES = 100_000     # entries of --source looked at; a source larger than this is not a mini's


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "folder")):
        if test(mode):
            return name
    return "special file"


def unhashable(path: Path, max_bytes: int | None = None) -> str | None:
    """Why ``path`` is not hashed (never opened): missing, not a regular file, mostly holes, or larger than
    ``max_bytes``; None when it may be read."""
    try:
        st = os.stat(path)  # follows a link: a data folder may link to where the data lies
    except OSError as exc:
        return f"{path}: {'a link to nothing' if os.path.lexists(path) else 'missing'}" if \
            isinstance(exc, FileNotFoundError) else f"{path}: cannot be read ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: not a regular file (a {_kind(st.st_mode)}); never opened"
    on_disk = getattr(st, "st_blocks", None)
    if on_disk is not None and st.st_size >= SPARSE_FROM_BYTES and on_disk * 512 * SPARSE_RATIO < st.st_size:
        return (f"{path}: {st.st_size} bytes of which {on_disk * 512} are on disk (a sparse file, not "
                "downloaded data); not hashed")
    if max_bytes is not None and st.st_size > max_bytes:
        return (f"{path}: {st.st_size} bytes; the rules pin it by sha256 alone and no such file is larger than "
                f"{max_bytes} bytes; not hashed")
    return None


def refuse_special_files(folder: Path, what: str, recursive: bool = True) -> None:
    """``UserError`` naming the first entry of ``folder`` (or ``folder`` itself) that is neither a regular file
    nor a folder: ``trainmark data prepare`` would block forever opening a FIFO. Nothing is opened."""
    from trainmark.errors import UserError

    pending, seen = [Path(folder)], 0
    while pending and seen < SOURCE_MAX_ENTRIES:
        path = pending.pop()
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue  # missing: the reference says so in its own words
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise UserError(f"{what} {path}: not a regular file or folder (a {_kind(mode)}); never opened")
        seen += 1
        if stat.S_ISDIR(mode) and (recursive or path == Path(folder)):
            try:
                with os.scandir(path) as entries:
                    pending += [Path(e.path) for e in itertools.islice(entries, SOURCE_MAX_ENTRIES - seen)]
            except OSError:
                continue


def listing(split_dir: Path) -> tuple[int, int, str]:
    """(class folders, files, listing SHA-256) of one split folder, as ``dataset.listing`` pins them."""
    lines: list[str] = []
    classes = 0
    pending = [(Path(split_dir), "")]
    while pending:
        folder, prefix = pending.pop()
        with os.scandir(folder) as entries:  # one stat per file, cached by the DirEntry
            for e in entries:
                if e.is_dir():
                    classes += prefix == ""
                    pending.append((Path(e.path), f"{prefix}{e.name}/"))
                elif e.is_file():
                    lines.append(f"{prefix}{e.name}\t{e.stat().st_size}\n")
    lines.sort()
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogateescape"))
    return classes, len(lines), h.hexdigest()


def verify_listing(spec: dict, folder: Path) -> list[str]:
    """Problems of each split folder against the rules' ``dataset.listing`` (a null sha256: counts only)."""
    problems = []
    for split, pin in spec["splits"].items():
        split_dir = Path(folder) / split
        if not split_dir.is_dir():
            problems.append(f"{split_dir}: missing")
            continue
        classes, files, digest = listing(split_dir)
        if (classes, files) != (pin["classes"], pin["files"]):
            problems.append(f"{split_dir}: {classes} class folders and {files} files, "
                            f"rules say {pin['classes']} and {pin['files']}")
        elif pin["sha256"] is not None and digest != pin["sha256"]:
            problems.append(f"{split_dir}: listing sha256 {digest[:16]}..., rules say {pin['sha256'][:16]}...")
    return problems


def not_found_message(rules: BenchmarkRules, folder: Path) -> str:
    """What a newcomer who skipped the install step needs to read (not "does not match")."""
    env = rules.dataset.get("env_var")
    source = " ".join(str(rules.dataset.get("source", "see the rules")).split())
    return (f"{rules.name}: dataset {rules.dataset['name']} not found in {folder}: get it from {source}, "
            f"then pass --data-dir" + (f" (or set {env})" if env else ""))


def verify_dataset(rules: BenchmarkRules, folder: Path) -> list[str]:
    """What is missing or differs from the rules' checksums (empty: the data matches).

    A folder that does not exist raises ``UserError`` saying where to get the data.
    """
    from trainmark.errors import UserError

    files = rules.dataset["files"]
    if (files or "listing" in rules.dataset) and not os.path.lexists(folder):
        raise UserError(not_found_message(rules, Path(folder)))
    problems = verify_listing(rules.dataset["listing"], folder) if "listing" in rules.dataset else []
    for name, expected in files.items():
        path = Path(folder) / name
        if why := unhashable(path, PINNED_FILE_MAX_BYTES):
            problems.append(why)
        elif (actual := sha256_file(path)) != expected:
            problems.append(f"{path}: sha256 {actual[:16]}..., rules say {expected[:16]}...")
    return problems


def archive_problems(archives: dict[str, dict], folder: Path) -> list[str]:
    """What is missing or differs from ``archives`` (name -> {md5, sha256, bytes}, any of them) in ``folder``."""
    problems = []
    for name, sums in archives.items():
        path = Path(folder) / name
        if path.is_file() and "bytes" in sums and (size := path.stat().st_size) != sums["bytes"]:
            problems.append(f"{path}: {size} bytes, rules say {sums['bytes']}")  # before anything is read
            continue
        if why := unhashable(path):
            problems.append(why)
            continue
        actual = file_digests(path, tuple(kind for kind in ("md5", "sha256") if kind in sums))
        problems += [f"{path}: {kind} {value}, rules say {sums[kind]}" for kind, value in actual.items()
                     if value != sums[kind]]
    return problems


def verify_archives(rules: BenchmarkRules, folder: Path) -> list[str]:
    """What is missing or differs from the rules' ``dataset.archives``: the archives as their publishers hand
    them out (ImageNet's tars, statmt's WMT14 tgz files), which tensorflow-datasets' builders read instead of
    the extracted folders or plain text that the other pins describe (``--framework tensorflow``). Every byte
    is hashed (minutes for ImageNet's 147 GB)."""
    return archive_problems(rules.dataset.get("archives") or {}, folder)


def verify_for(rules: BenchmarkRules, folder: Path, framework: str = "pytorch") -> tuple[list[str], int]:
    """(problems, files checked) of what a run under ``framework`` reads: TensorFlow reads the archives where
    the rules pin them (tfds's imagenet2012 and wmt14_translate build from them), every other run the files and
    listing."""
    if framework == "tensorflow" and rules.dataset.get("archives"):
        return verify_archives(rules, folder), len(rules.dataset["archives"])
    listed = sum(pin["files"] for pin in rules.dataset.get("listing", {}).get("splits", {}).values())
    return verify_dataset(rules, folder), len(rules.dataset["files"]) + listed


if __name__ == "__main__":  # print the ``dataset.listing`` block of a folder, to pin it in a rule file
    import sys

    for split in sys.argv[2:] or ["train", "val"]:
        n_classes, n_files, sha = listing(Path(sys.argv[1]) / split)
        print(f"    {split}: {{classes: {n_classes}, files: {n_files}, sha256: {sha}}}")
