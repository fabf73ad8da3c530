"""``trainmark report --format md``: the same summary as the HTML page, as Markdown for a CI comment."""
from __future__ import annotations

from trainmark.format.text import markdown_text
from trainmark.report.collect import ReportData
from trainmark.report.summary import BENCHMARK_COLUMNS, benchmark_row

cell = markdown_text  # every submitted string, in a table cell or inline: one escaping for report, table, compare


def table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_markdown(data: ReportData) -> str:
    rep = data.report
    verdict = "PASS" if rep["passed"] else "FAIL"
    counts = ", ".join(f"{n} {s}" for s, n in rep["counts"].items())
    out = [f"## trainmark report: {verdict}\n", f"{cell(rep['path'])} ({cell(rep['level'])}): {counts}.\n"]
    if data.benchmarks:
        out.append(table(BENCHMARK_COLUMNS, [benchmark_row(v) for v in data.benchmarks]))
    else:
        out.append("No benchmark result could be read in this folder.\n")
    for v in data.benchmarks:
        if v.model_words:
            out.append(f"**{cell(v.name)}** ({cell(v.result['system'] or '-')}) model: {cell(v.model_words)}.\n")
        if v.missing:
            out.append(f"**{cell(v.name)}** ({cell(v.result['system'] or '-')}): "
                       + "; ".join(cell(m) for m in v.missing) + ".\n")
    findings = [f for f in rep["findings"] if f["severity"] in ("error", "warning")]
    if findings:
        out.append("### Errors and warnings\n")
        out.append(table(["rule", "severity", "file", "line", "message"],
                         [[f["rule"], f["severity"], f["file"] or ".", "-" if f["line"] is None else str(f["line"]),
                           f["message"]] for f in findings[:50]]))
        if len(findings) > 50:
            out.append(f"... and {len(findings) - 50} more (run `trainmark check` for all).\n")
    return "\n".join(out)
