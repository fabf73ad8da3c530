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
from rich.table import Table

from trainmark.checker.verdict.findings import printable
from trainmark.checker.verdict.result import Report
from trainmark.outputs import csv_cell

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
    return rows


def to_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in summary_rows(report):
        writer.writerow({k: "" if v is None else csv_cell(printable(v) if isinstance(v, str) else v)
                         for k, v in row.items()})
    return out.getvalue()


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return escape(printable(str(value)))


class _Notes:
    """Numbered notes under the table: a long reason would otherwise wrap every row."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def print_report(report: Report, console: Console | None = None) -> None:
    if console is None:
        console = Console(soft_wrap=False, highlight=False)
        if not console.is_terminal:  # a pipe or file: wide enough to keep a finding on few lines
            console = Console(soft_wrap=False, highlight=False, width=max(console.width, 220))  # a row a line
    console.print(f"[bold]trainmark check[/bold] {escape(printable(report.path))} ({report.level})")
    for f in report.findings:  # one block per finding: paths stay whole at any width
        where = (f.file or ".") + (f":{f.line}" if f.line else "")
        console.print(f"[{_STYLE[f.severity]}]{f.severity.upper():7}[/] [bold]{f.rule}[/bold]  {escape(where)}")
        console.print(f"  {escape(f.message)}", highlight=False)
        if f.expected or f.seen:
            console.print(f"  expected: {escape(f.expected)}  seen: {escape(f.seen)}", highlight=False)
        console.print(f"  [dim]fix: {escape(f.fix)}[/dim]", highlight=False)
    rows = summary_rows(report)
    notes = _Notes()
    if rows:
        table = Table(title="Scores (recomputed from the MLLOG event times)")
        for name in ("benchmark", "division", "system", "trials", "score", "olympic total s", "mean train s",
                     "95% CI s", "CV", "mean train J", "mean metric", "errors"):
            table.add_column(name, overflow="fold")
        for r in rows:
            if r["format"] == "mlperf":
                score = (f"{_fmt(r['mlperf_score_minutes'], 3)} min (MLPerf)" if r["mlperf_score_minutes"]
                         is not None else "no score")
            else:
                score = (f"{_fmt(r['score_train_time_s'])} s" if r["score_train_time_s"] is not None
                         else "no score " + notes.mark(printable(r["score_reason"] or "see the findings")))
            ci = "-" if r["ci95_low_s"] is None else f"{r['ci95_low_s']:.2f}..{r['ci95_high_s']:.2f}"
            energy = _fmt(r["mean_train_energy_j"], 1) if r["mean_train_energy_j"] is not None else (
                "null" + (" " + notes.mark(f"energy: {printable(r['energy_reason'])}") if r["energy_reason"] else "")
                if r["format"] == "trainmark" else "-")
            table.add_row(f"{_fmt(r['submitter'] or '')}/{_fmt(r['benchmark'])}", _fmt(r["division"]),
                          _fmt(r["system"]), f"{_fmt(r['converged'])}/{_fmt(r['trials'])}", escape(score),
                          _fmt(r["olympic_total_time_s"]), _fmt(r["mean_train_time_s"]), ci,
                          _fmt(r["cv_train_time"], 3), escape(energy), _fmt(r["mean_final_metric"], 4),
                          str(r["errors"]))
        console.print(table)
        for number, text in enumerate(notes.texts, 1):
            console.print(f"  \\[{number}] {escape(text)}", highlight=False)
    for note in report.notes:
        console.print(f"[dim]note: {escape(printable(note))}[/dim]")
    counts = report.to_dict()["counts"]
    verdict = "[bold green]PASS[/]" if report.exit_code == 0 else "[bold red]FAIL[/]"
    console.print(f"{verdict}: {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s)")
