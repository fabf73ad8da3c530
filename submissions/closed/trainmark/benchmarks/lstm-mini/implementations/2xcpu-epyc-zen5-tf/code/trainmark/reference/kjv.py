"""The King James Bible as a small word-level language-modelling corpus (lstm-mini's data).

Source: Debian's ``bible-kjv`` (public-domain text; the ``bible`` program reads
``/usr/lib/bible.data`` from ``bible-kjv-text``). ``bible -f gen1:1-rev22:21`` prints the
31,102 verses, one per line, as ``<Book><chapter>:<verse> <text>``. Preparation is
deterministic: lower-cased, split into words, numbers, possessive endings and single
punctuation marks, one verse per line; every 10th chapter in canonical order (the 10th,
20th, ... of the 1,189) is the validation split, the rest trains. Holding out whole chapters
keeps a verse's neighbours out of training; the chapters still span the whole book.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from trainmark.errors import UserError

VERSES = "gen1:1-rev22:21"           # the whole book, in the bible program's reference syntax
EXPECTED_VERSES = 31102              # verses in the KJV (Genesis 1:1 to Revelation 22:21)
HELD_OUT_EVERY = 10                  # chapter k (counted from 1) is validation when k % 10 == 0
TRAIN_FILE, VALID_FILE = "kjv.train.txt", "kjv.valid.txt"
HOW_TO_GET = ("install Debian's bible-kjv (apt-get install bible-kjv), or pass --source FILE holding the "
              "output of `bible -f gen1:1-rev22:21`")

_REF = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
_TOKEN = re.compile(r"[a-z]+|'[a-z]*|\d+|[^\sa-z\d']")


def tokenize(text: str) -> list[str]:
    """``"And God said, Let there be light"`` -> ``and god said , let there be light``."""
    return _TOKEN.findall(text.lower())


def read_verses(source: Path | None) -> list[str]:
    """The ``bible -f`` listing: from ``source`` if given, else from the installed program."""
    if source is not None:
        try:
            return Path(source).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"--source {source}: cannot read ({exc}); {HOW_TO_GET}") from None
    program = shutil.which("bible")
    if program is None:
        raise UserError(f"the `bible` program is not installed: {HOW_TO_GET}")
    done = subprocess.run([program, "-f", VERSES], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(f"`bible -f {VERSES}` failed ({done.returncode}): {done.stderr.strip()[:200]}")
    return done.stdout.splitlines()


def split_verses(listing: list[str]) -> tuple[list[str], list[str]]:
    """(train lines, validation lines), each a verse's tokens joined by single spaces."""
    train, valid = [], []
    chapter, last = 0, None
    verses = [ln for ln in listing if ln.strip()]
    if len(verses) != EXPECTED_VERSES:
        raise UserError(f"the KJV listing has {len(verses)} verses, expected {EXPECTED_VERSES}: {HOW_TO_GET}")
    for line in verses:
        m = _REF.match(line)
        if m is None:
            raise UserError(f"unexpected line in the KJV listing: {line[:60]!r}")
        book, ch, _, text = m.groups()
        if (book, ch) != last:
            chapter, last = chapter + 1, (book, ch)
        (valid if chapter % HELD_OUT_EVERY == 0 else train).append(" ".join(tokenize(text)))
    return train, valid


def prepare(out_dir: Path, source: Path | None = None) -> list[Path]:
    """Write ``kjv.train.txt`` and ``kjv.valid.txt`` into ``out_dir``; return their paths."""
    train, valid = split_verses(read_verses(source))
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, rows in ((TRAIN_FILE, train), (VALID_FILE, valid)):
        path = out_dir / name
        path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
        written.append(path)
    return written
