"""Output flags with one meaning in every command: ``--json``/``--csv`` take a FILE, ``-`` is stdout.

Why a module: before, ``check --json`` was a switch, ``ops --json`` a path, and
``--csv -`` wrote a file named "-". Files are written atomically (a crash leaves the
old file or the new one), names are checked for writability *before* long work starts
(``ops`` and ``sweep`` used to fail only after measuring), and cells a spreadsheet would
run as formulas are neutralised.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from trainmark.errors import UserError

STDOUT = "-"
# A cell starting with one of these is a formula in Excel, LibreOffice and Google Sheets (OWASP: CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def is_stdout(dest: Any) -> bool:
    return dest is not None and str(dest) == STDOUT


def ensure_writable(dest: Any, flag: str) -> None:
    """Fail now, with one line, if ``dest`` (a FILE of ``flag``) cannot be written later."""
    if dest is None or is_stdout(dest):
        return
    path = Path(dest)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        if path.is_dir():
            raise UserError(f"{flag} {path}: is a folder, not a file")
        if not parent.is_dir():
            raise UserError(f"{flag} {path}: the folder {parent} does not exist")
        if path.exists() and not path.is_file():  # never replace a device, FIFO or socket
            raise UserError(f"{flag} {path}: not a regular file")
        if path.exists() and not os.access(path, os.W_OK):
            raise UserError(f"{flag} {path}: not writable")
        with tempfile.TemporaryFile(dir=parent):  # access() says yes to root even on /proc: try it
            pass
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from None


def write_output(dest: Any, text: str, flag: str) -> None:
    """Write ``text`` to standard output (``-``) or atomically to the file ``dest``."""
    if is_stdout(dest):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from trainmark.files import write_text_atomic

    try:
        write_text_atomic(Path(dest), text)
    except OSError as exc:
        raise UserError(f"{flag} {dest}: cannot write: {exc.strerror or exc}") from None



def emit(text: str, out: Any) -> None:
    """``text`` to standard output when ``out`` is None or ``-``, else atomically to the file ``out``."""
    if out is None or is_stdout(out):
        sys.stdout.write(text)
        return
    from trainmark.files import write_atomic

    try:
        write_atomic(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None

def csv_cell(value: Any) -> Any:
    """``value`` safe for a spreadsheet: text that would start a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def robust_stdio() -> None:
    """Never crash on output: characters the terminal's encoding lacks are escaped, not fatal.

    A folder name with byte 0xFF (a surrogate escape in Python) crashed output under a
    strict UTF-8 stdout; the checker escapes names itself, this covers everything else.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a detached or closed stream: leave it
                pass


def table_console(stderr: bool = False):
    """A rich Console for tables that never cut a cell: piped output gets a wide virtual width.

    Rich sizes a piped console to 80 columns and cuts cells with an ellipsis, so
    ``trainmark list | grep inception-mini`` found nothing; tables built for it also use
    ``overflow="fold"`` so a narrow terminal wraps a value instead of cutting it.
    """
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=max(console.width, 240), soft_wrap=True)
    return console


def os_error_line(exc: OSError) -> str:
    """One line for an operating-system error: what failed, on which file, and the errno name."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    what = exc.strerror or str(exc)
    where = " ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    return f"{what}" + (f" ({name})" if name else "") + (f": {where}" if where else "")
