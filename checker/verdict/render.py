"""Show a ``Report`` to people (rich tables) and to spreadsheets (CSV, one row per benchmark).

Every name printed comes from a submitted folder: it is escaped (``findings.printable``:
no ESC/OSC sequence or newline reaches the terminal) and, in CSV, a cell that would start
a formula is neutralised. Long reasons go below the table as numbered notes, so that a
piped table keeps one line per benchmark, and no cell is ever cut.
"""
from __future__ import annotations

import csv
import io
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from trainmark.checker.verdict.findings import printable
from trainmark.checker.verdict.result import Report, withheld_reason
from trainmark.format.numbers import display, machine
from trainmark.outputs import PIPE_WIDTH, Column, block_lines, choose_columns, csv_cell, fitted_table, fitting_console

CSV_COLUMNS = [
    "format", "division", "submitter", "system", "benchmark", "path", "rules_version", "trials", "converged",
    "score_train_time_s", "score_reason", "olympic_total_time_s", "mean_train_time_s", "ci95_low_s", "ci95_high_s",
    "cv_train_time",
    "mean_total_time_s", "mean_train_energy_j", "mean_total_energy_j", "energy_reason", "mean_final_metric",
    "mlperf_score_minutes", "mlperf_olympic_minutes", "mlperf_scaling_factor", "mlperf_dropped_runs",
    "errors", "warnings",
]
_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def summary_rows(report: Report) -> list[dict[str, Any]]:
    rows = []
    for b in report.to_dict()["benchmarks"]:
        s = b["score"]
        ci = s.get("ci95_train_time_s") or [None, None]
        rows.append({
            "format": b["format"], "division": b["division"], "submitter": b["submitter"], "system": b["system"],
            "benchmark": b["benchmark"], "path": b["path"], "rules_version": b["rules_version"],
            "trials": s.get("trials", len(s.get("runs", []))),
            "converged": s.get("converged", len(s.get("runs", [])) - s.get("dropped", 0) if "runs" in s else None),
            "score_train_time_s": s.get("score_train_time_s"), "score_reason": s.get("score_reason", ""),
            "olympic_total_time_s": s.get("olympic_total_time_s"),
            "mean_train_time_s": s.get("mean_train_time_s"), "ci95_low_s": ci[0], "ci95_high_s": ci[1],
            "cv_train_time": s.get("cv_train_time"), "mean_total_time_s": s.get("mean_total_time_s"),
            "mean_train_energy_j": s.get("mean_train_energy_j"), "mean_total_energy_j": s.get("mean_total_energy_j"),
            "energy_reason": s.get("energy_reason", ""), "mean_final_metric": s.get("mean_final_metric"),
            "mlperf_score_minutes": s.get("score_minutes"), "mlperf_olympic_minutes": s.get("olympic_minutes"),
            "mlperf_scaling_factor": s.get("scaling_factor"), "mlperf_dropped_runs": s.get("dropped"),
            "errors": b["errors"], "warnings": b["warnings"],
        })
        if b["errors"]:
            _withhold(rows[-1])
    return rows


def _withhold(row: dict[str, Any]) -> None:
    """No score beside an error: a figure over a benchmark that fails is not shown in any table or CSV (the
    report withholds it too); the reason names the errors."""
    row.update(score_train_time_s=None, olympic_total_time_s=None, mlperf_score_minutes=None,
               mlperf_olympic_minutes=None,
               score_reason=withheld_reason(row["errors"]))


def _csv_value(value: Any) -> Any:
    """A CSV cell: text made printable and formula-safe, a float without binary noise (41.67, not 41.669999...)."""
    if isinstance(value, str):
        return csv_cell(printable(value))
    if isinstance(value, float):
        return machine(value)
    return "" if value is None else value


def to_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in summary_rows(report):
        writer.writerow({k: _csv_value(v) for k, v in row.items()})
    return out.getvalue()


class _Notes:
    """Numbered notes under the table: a long reason would otherwise wrap every row."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def _text(value: Any) -> str:
    return "-" if value is None else printable(str(value))


def _score_cell(r: dict[str, Any], notes: _Notes) -> str:
    if r["format"] == "mlperf":
        if r["mlperf_score_minutes"] is not None:
            return f"{display(r['mlperf_score_minutes'], decimals=3)} min (MLPerf)"
    elif r["score_train_time_s"] is not None:
        return f"{display(r['score_train_time_s'], decimals=2)} s"
    return "no score " + notes.mark(printable(r["score_reason"] or "see the findings"))


def _energy_cell(r: dict[str, Any], notes: _Notes) -> str:
    if r["mean_train_energy_j"] is not None:
        return display(r["mean_train_energy_j"], decimals=1)
    if r["format"] != "trainmark":
        return "-"
    return "null" + (" " + notes.mark(f"energy: {printable(r['energy_reason'])}") if r["energy_reason"] else "")


# (full header, abbreviated header, label in the block layout), in display order
HEADERS = [("benchmark", "benchmark", "benchmark"), ("division", "division", "division"),
           ("system", "system", "system"), ("trials", "trials", "converged/trials"), ("score", "score", "score"),
           ("olympic total s", "olympic s", "olympic total s"), ("mean train s", "mean s", "mean train s"),
           ("95% CI s", "95% CI s", "95% CI of mean train s"), ("CV", "CV", "CV of train time"),
           ("mean train J", "energy J", "mean train energy J"), ("mean metric", "metric", "mean final metric"),
           ("errors", "errors", "errors")]
# Which columns stay as the terminal narrows (indices of HEADERS): the first three always, else blocks.
PRIORITY = [0, 2, 4, 3, 11, 7, 6, 5, 1, 10, 8, 9]
RIGHT = {5, 6, 8, 10, 11}  # numbers without a unit in the cell
TITLE = "Scores (recomputed from the MLLOG event times)"


def score_columns(rows: list[dict[str, Any]], notes: _Notes, abbreviated: bool = False) -> list[Column]:
    """The score table's columns in display order, with full or abbreviated headers (HEADERS)."""
    ci = ["-" if r["ci95_low_s"] is None else
          f"{display(r['ci95_low_s'], decimals=2)}..{display(r['ci95_high_s'], decimals=2)}" for r in rows]
    cells = [
        [f"{_text(r['submitter'] or '')}/{_text(r['benchmark'])}" for r in rows],
        [_text(r["division"]) for r in rows], [_text(r["system"]) for r in rows],
        [f"{_text(r['converged'])}/{_text(r['trials'])}" for r in rows], [_score_cell(r, notes) for r in rows],
        [display(r["olympic_total_time_s"], decimals=2) for r in rows],
        [display(r["mean_train_time_s"], decimals=2) for r in rows], ci,
        [display(r["cv_train_time"], decimals=3) for r in rows], [_energy_cell(r, notes) for r in rows],
        [display(r["mean_final_metric"], decimals=4) for r in rows], [str(r["errors"]) for r in rows],
    ]
    return [Column(names[1] if abbreviated else names[0], column, label=names[2],
                   justify="right" if i in RIGHT else "left") for i, (names, column) in enumerate(zip(HEADERS, cells))]


def fitted_columns(rows: list[dict[str, Any]], notes: _Notes, width: int | None) -> tuple[list[Column], list | None]:
    """(columns, indices shown): full headers unless abbreviated ones show more columns at ``width``."""
    best: tuple[list[Column], list | None] = (score_columns(rows, notes), None)
    for abbreviated in (False, True):
        columns = score_columns(rows, notes, abbreviated)
        shown = choose_columns(columns, width, PRIORITY, required=3)
        if shown is not None and (best[1] is None or len(shown) > len(best[1])):
            best = (columns, shown)
    return best


def print_scores(rows: list[dict[str, Any]], console: Console, width: int | None) -> None:
    """The score table fitted to ``width`` (None: piped, every column): no name or number is split.

    Headers are abbreviated, then low-priority columns left out (and named below the table);
    when even benchmark, system and score do not fit, each benchmark becomes a block of
    'label: value' lines.
    """
    notes = _Notes()
    columns, shown = fitted_columns(rows, notes, width)
    if shown is not None:
        console.print(fitted_table([columns[i] for i in shown], width, TITLE))
        left_out = [c.header for i, c in enumerate(columns) if i not in shown]
        if left_out:
            console.print(Text(f"left out at {width} columns: {', '.join(left_out)} (all columns: a wider "
                               "terminal, COLUMNS=250, --csv or --json)", style="dim"))
        cells = " ".join(cell for i in shown for cell in columns[i].cells)
        notes.texts = [t if f"[{n}]" in cells else "" for n, t in enumerate(notes.texts, 1)]  # a shown cell's only
    else:
        console.print(Text(TITLE, style="italic"))
        for k in range(len(rows)):
            fields = [(columns[i].label, columns[i].cells[k]) for i in PRIORITY[1:]]
            for line in block_lines(columns[0].cells[k], fields, width or PIPE_WIDTH):
                console.print(Text(line, style="bold" if not line.startswith(" ") else ""))
    for number, text in enumerate(notes.texts, 1):
        if text:
            console.print(Text(f"  [{number}] {text}"))


def print_report(report: Report, console: Console | None = None) -> None:
    """The findings, the score table and the verdict line; ``console``'s width is the one fitted (tests).

    Without ``console``: the terminal's width, COLUMNS when set, and when piped every column on one
    line per row (``trainmark.outputs.fitting_console``).
    """
    width: int | None = None
    if console is None:
        console, width = fitting_console()
    else:
        width = console.width
    console.print(f"[bold]trainmark check[/bold] {escape(printable(report.path))} ({report.level})")
    for f in report.findings:  # one block per finding: paths stay whole at any width
        where = (f.file or ".") + (f":{f.line}" if f.line else "")
        console.print(f"[{_STYLE[f.severity]}]{f.severity.upper():7}[/] [bold]{f.rule}[/bold]  {escape(where)}")
        console.print(f"  {escape(f.message)}", highlight=False)
        if f.expected or f.seen:
            console.print(f"  expected: {escape(f.expected)}  seen: {escape(f.seen)}", highlight=False)
        console.print(f"  [dim]fix: {escape(f.fix)}[/dim]", highlight=False)
    rows = summary_rows(report)
    if rows:
        print_scores(rows, console, width)
    for note in report.notes:  # the checker's remarks (ruleset, division taken from the logs): counted below
        console.print(Text(f"note: {printable(note)}", style="dim"))
    line = verdict_line(report)
    console.print(Text(line[:4], style="bold green" if report.exit_code == 0 else "bold red") + Text(line[4:]))


def verdict_line(report: Report) -> str:
    """'PASS: ...' or 'FAIL: ...' with the counts: 'info' counts INFO findings, 'note(s)' the 'note:' lines.

    Issue 32: the line counted INFO findings as notes and said "0 note(s)" under printed notes.
    """
    counts = report.to_dict()["counts"]
    return (f"{'PASS' if report.exit_code == 0 else 'FAIL'}: {counts['error']} error(s), "
            f"{counts['warning']} warning(s), {counts['info']} info, {len(report.notes)} note(s)")
