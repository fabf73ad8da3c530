"""King James Bible -> World English Bible: a verse-aligned translation corpus (transformer-mini's data).

Source: Debian's sword modules ``engKJV2006eb`` (sword-text-kjv) and ``engWEB2015eb``
(sword-text-web), both public domain, read with ``diatheke -f OSIS``: the task is rewriting
Early Modern English (1611/1769) as modern English (2015), a real translation between two
independent renderings of the same source texts. OSIS rather than plain text because the WEB
module writes some adjacent words as ``<w>God</w><w>created</w>``, which plain output glues.

Preparation is deterministic: markup dropped (Psalm superscriptions too, which the WEB repeats
before every verse of a psalm and the KJV lacks), whitespace collapsed, verses paired by
reference (the WEB's deuterocanonical books have no KJV partner), pairs with more than
``MAX_WORDS`` words on either side dropped so that a trial fits in minutes on 2 CPU cores.
Every 20th chapter in canonical order holds out its verses for validation; the rest trains.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from trainmark.errors import UserError

MODULES = {"src": "engKJV2006eb", "tgt": "engWEB2015eb"}
VERSES = "Gen 1:1 - Rev 22:21"
EXPECTED_KJV_VERSES = 31102
MAX_WORDS = 16              # words (spaces + 1) on each side of a kept pair: 6,424 training pairs
HELD_OUT_EVERY = 20         # chapter k (counted from 1, KJV canon order) is validation when k % 20 == 0
FILES = {"train": ("train.kjv", "train.web"), "valid": ("valid.kjv", "valid.web")}
HOW_TO_GET = ("install Debian's diatheke, sword-text-kjv and sword-text-web (apt-get install diatheke "
              "sword-text-kjv sword-text-web), or pass --source DIR holding kjv.osis and web.osis, the output "
              f"of `diatheke -b MODULE -f OSIS -k \"{VERSES}\"` for {MODULES['src']} and {MODULES['tgt']}")

_HEADER = re.compile(r"((?:[1-4] |I{1,3} )?[A-Z][A-Za-z]*(?: of [A-Z][a-z]+| [A-Z][a-z]+)*) (\d+):(\d+): ")
_TITLE = re.compile(r"<title\b[^>]*>.*?</title>", re.S)
_TAG = re.compile(r"<[^>]*>")


def clean(text: str) -> str:
    """Markup out, adjacent ``<w>`` words apart, pilcrows out, whitespace collapsed."""
    text = _TITLE.sub(" ", text.replace("</w><w", "</w> <w"))
    text = _TAG.sub("", text).replace("\u00b6", " ")
    return " ".join(text.split())


def parse_osis(listing: str, module: str) -> dict[tuple[str, int, int], str]:
    """``{(book, chapter, verse): text}`` from ``diatheke -f OSIS`` output, in canonical order.

    A verse starts at its ``Book C:V:`` header; lines without one continue the verse before;
    text before a header on its line (a superscription) is dropped; the closing ``(MODULE)``
    line ends the listing.
    """
    verses: dict[tuple[str, int, int], list[str]] = {}
    current: list[str] | None = None
    for line in listing.splitlines():
        if line.strip() == f"({module})":
            break
        m = _HEADER.search(line)
        if m is None:
            if current is not None:
                current.append(line)
            continue
        key = (m.group(1), int(m.group(2)), int(m.group(3)))
        current = verses.setdefault(key, [])
        current.append(line[m.end():])
    return {k: clean(" ".join(v)) for k, v in verses.items()}


def read_module(side: str, source: Path | None) -> str:
    """One module's OSIS listing: ``source/<side>.osis`` if given, else from diatheke."""
    name = {"src": "kjv", "tgt": "web"}[side] + ".osis"
    if source is not None:
        try:
            return (Path(source) / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"--source {source}: cannot read {name} ({exc}); {HOW_TO_GET}") from None
    program = shutil.which("diatheke")
    if program is None:
        raise UserError(f"the `diatheke` program is not installed: {HOW_TO_GET}")
    done = subprocess.run([program, "-b", MODULES[side], "-f", "OSIS", "-k", VERSES],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise UserError(f"`diatheke -b {MODULES[side]}` failed ({done.returncode}): {done.stderr.strip()[:200]} "
                        f"-- {HOW_TO_GET}")
    return done.stdout


def split_pairs(src: dict, tgt: dict) -> dict[str, list[tuple[str, str]]]:
    """``{"train": [(kjv, web), ...], "valid": [...]}`` in canonical order."""
    out: dict[str, list[tuple[str, str]]] = {"train": [], "valid": []}
    chapter, last = 0, None
    for (book, ch, verse), s in src.items():
        if (book, ch) != last:
            chapter, last = chapter + 1, (book, ch)
        t = tgt.get((book, ch, verse), "")
        if not s or not t or max(len(s.split()), len(t.split())) > MAX_WORDS:
            continue
        out["valid" if chapter % HELD_OUT_EVERY == 0 else "train"].append((s, t))
    return out


def prepare(out_dir: Path, source: Path | None = None) -> list[Path]:
    """Write ``train.kjv``/``train.web`` and ``valid.kjv``/``valid.web`` (one verse per line)."""
    src = parse_osis(read_module("src", source), MODULES["src"])
    tgt = parse_osis(read_module("tgt", source), MODULES["tgt"])
    if len(src) != EXPECTED_KJV_VERSES:
        raise UserError(f"the KJV listing has {len(src)} verses, expected {EXPECTED_KJV_VERSES}: {HOW_TO_GET}")
    pairs = split_pairs(src, tgt)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for split, (src_name, tgt_name) in FILES.items():
        for name, side in ((src_name, 0), (tgt_name, 1)):
            path = out_dir / name
            path.write_text("".join(p[side] + "\n" for p in pairs[split]), encoding="utf-8")
            written.append(path)
    return written
