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


# Tables that fit the terminal (issue 32): a name or number is never split across lines. At a width where
# a table would have to split one, low-priority columns are left out (and named), or each row becomes a block.
PIPE_WIDTH = 10_000  # piped without COLUMNS: every column, no line wrapped, one table row a line


def fitting_console(stderr: bool = False):
    """(Console, the width tables must fit): COLUMNS when set (terminal or pipe), else the terminal's width.

    Piped without COLUMNS the width is None: tables keep every column at its natural width and no line is
    wrapped, so ``grep`` and scripts see whole rows (``COLUMNS=100 trainmark ... | less`` asks for a fit).
    """
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False, soft_wrap=False)
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return console, console.width
    if console.is_terminal:
        return console, console.width
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=PIPE_WIDTH), None


class Column:
    """One table column as plain text: ``prose`` may wrap between words, never inside one; other cells never wrap."""

    def __init__(self, header: str, cells: list[str], *, label: str = "", prose: bool = False,
                 justify: str = "left") -> None:
        self.header, self.cells, self.label, self.prose, self.justify = header, cells, label or header, prose, justify

    def natural(self) -> int:
        from rich.cells import cell_len

        return max([cell_len(self.header)] + [cell_len(c) for c in self.cells])

    def least(self) -> int:
        """The narrowest width that splits no word (prose) or nothing at all."""
        from rich.cells import cell_len

        if not self.prose:
            return self.natural()
        return max([cell_len(w) for text in [self.header, *self.cells] for w in text.split()] or [1])


def column_widths(columns: list[Column], width: int | None) -> list[int] | None:
    """Content widths that fit a boxed rich table into ``width``; None when even the least widths do not."""
    natural = [c.natural() for c in columns]
    if width is None:
        return natural
    widths = [c.least() for c in columns]
    room = width - (3 * len(columns) + 1) - sum(widths)  # a border and two spaces of padding per column
    if room < 0:
        return None
    want = [n - w for n, w in zip(natural, widths)]
    total = sum(want)
    for i, more in enumerate(want):  # the spare room goes to the prose columns, in proportion to their need
        grant = min(more, room * more // total) if total else 0
        widths[i] += grant
    spare = width - (3 * len(columns) + 1) - sum(widths)
    for i in range(len(columns)):  # what rounding left, in column order
        extra = min(spare, natural[i] - widths[i])
        widths[i] += extra
        spare -= extra
    return widths


def choose_columns(columns: list[Column], width: int | None, priority: list[int], required: int) -> list[int] | None:
    """Indices (display order) of the columns shown at ``width``; None when the ``required`` first do not fit.

    Columns are taken in ``priority`` order until one does not fit: the rest are left out (the caller names
    them). All columns when ``width`` is None (piped output).
    """
    if width is None:
        return list(range(len(columns)))
    shown: list[int] = []
    for rank, index in enumerate(priority):
        trial = sorted(shown + [index])
        if column_widths([columns[i] for i in trial], width) is None:
            if rank < required:
                return None
            break
        shown = trial
    return shown


def fitted_table(columns: list[Column], width: int | None, title: str = ""):
    """A rich Table of ``columns`` with widths fixed by ``column_widths`` (they must fit: see choose_columns)."""
    from rich.table import Table
    from rich.text import Text

    widths = column_widths(columns, width)
    if widths is None:
        raise ValueError(f"the columns do not fit {width} characters")
    table = Table(title=title or None)
    for column, w in zip(columns, widths):
        table.add_column(column.header, width=w, no_wrap=not column.prose, overflow="fold", justify=column.justify)
    for row in zip(*(c.cells for c in columns)):
        table.add_row(*(Text(cell) for cell in row))
    return table


def block_lines(head: str, fields: list[tuple[str, str]], width: int, indent: str = "  ") -> list[str]:
    """One record as lines of at most ``width``: ``head``, then 'label: value' fields packed, none split.

    A field longer than a line wraps between words (a task's description), never inside one.
    """
    import textwrap

    from rich.cells import cell_len

    lines, line = [head], ""
    room = width - len(indent)
    for label, value in fields:
        field = f"{label}: {value}"
        if cell_len(field) > room:
            if line:
                lines.append(indent + line)
                line = ""
            lines += [indent + part for part in textwrap.wrap(field, room, break_long_words=False,
                                                              break_on_hyphens=False, subsequent_indent="  ")]
        elif not line:
            line = field
        elif cell_len(line) + 3 + cell_len(field) <= room:
            line += "   " + field
        else:
            lines.append(indent + line)
            line = field
    if line:
        lines.append(indent + line)
    return lines
