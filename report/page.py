"""``trainmark report``'s HTML page: one self-contained file, no script, no request.

Everything from the submitted folder is HTML-escaped; the figures are inline SVG; a
Content-Security-Policy of ``default-src 'none'`` makes the browser refuse any request the
page might still try, so "works offline" is enforced, not hoped for.
"""
from __future__ import annotations

import itertools
import re

from trainmark import __version__
from trainmark.format.text import html_text as escape
from trainmark.report import plots
from trainmark.report.collect import BenchmarkView, ReportData, system_of
from trainmark.report.fmt import num
from trainmark.report.summary import (
    BENCHMARK_COLUMNS,
    FINDING_COLUMNS,
    TRIAL_COLUMNS,
    benchmark_row,
    finding_row,
    loose_findings,
    trial_row,
)

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#222;line-height:1.4}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:left;vertical-align:top}
th{background:#f3f3f3} .pass{color:#176b2c} .fail{color:#a61b1b}
figure{display:inline-block;margin:.5rem 1rem .5rem 0;vertical-align:top}
figure svg{max-width:100%;height:auto} figcaption{font-size:.85rem;color:#444;max-width:30rem}
.missing{background:#fff6dd;border-left:4px solid #d9a400;padding:.3rem .7rem;font-size:.9rem}
.error td:nth-child(2){color:#a61b1b;font-weight:600} .warning td:nth-child(2){color:#8a5a00}
"""


def _table(columns: list[str], rows: list[list[str]], row_class=None, caption: str = "") -> str:
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in columns)
    body = "".join(
        f"<tr{' class=' + chr(34) + escape(row_class(i)) + chr(34) if row_class else ''}>"
        + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for i, row in enumerate(rows))
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^")]+)')


def _unique_ids(svg: str, prefix: str) -> str:
    """matplotlib numbers ids per figure (figure_1, line2d_1, ...): prefix them so that many inline SVGs
    in one page keep every id unique and every internal reference (clip paths, markers) pointing home."""
    svg = _ID.sub(lambda m: f'id="{prefix}{m[1]}"', svg)
    return _REF.sub(lambda m: f"{m[1]}{prefix}{m[2]}", svg)


def _figure(svg: str | None, kind: str, caption: str, numbers) -> str:
    if svg is None:
        return ""
    prefix = f"f{next(numbers)}-"
    return (f'<figure class="plot" data-kind="{escape(kind)}" role="img" aria-label="{escape(caption)}">'
            f"{_unique_ids(svg, prefix)}<figcaption>{escape(caption)}</figcaption></figure>")


def _findings(findings: list[dict]) -> str:
    if not findings:
        return "<p>No findings.</p>"
    return _table(FINDING_COLUMNS, [finding_row(f) for f in findings], row_class=lambda i: findings[i]["severity"])


def _system(desc: dict) -> str:
    if not desc:
        return "<p>No readable system description.</p>"
    rows = [[str(k), v if isinstance(v, str) else _compact(v)] for k, v in desc.items()]
    return _table(["field", "value"], rows)


def _compact(value) -> str:
    import json

    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 300 else text[:297] + "..."


def _benchmark(data: ReportData, view: BenchmarkView, index: int, numbers) -> str:
    r = view.result
    title = f"{r['benchmark']} on {r['system'] or '?'} ({r['division'] or 'division unknown'}, {r['format']})"
    parts = [f'<section id="b{index}"><h2>{escape(title)}</h2>', f"<p>Folder: <code>{escape(r['path'] or '.')}</code>; "
             f"rules {escape(str(r.get('rules_version') or '-'))}.</p>"]
    if view.missing:
        parts.append('<div class="missing" role="note"><strong>Not shown or incomplete:</strong><ul>'
                     + "".join(f"<li>{escape(m)}</li>" for m in view.missing) + "</ul></div>")
    if r["format"] == "mlperf":
        parts.append(_figure(plots.mlperf_runs(r), "mlperf-runs", "Each MLPerf run's time in minutes "
                             "(run_stop - run_start, evaluation included, as MLPerf scores it).", numbers))
        parts.append(_table(["file", "minutes", "dropped", "reason"],
                            [[str(t.get("file", "")), str(t.get("minutes") if t.get("minutes") is not None else "-"),
                              "yes" if t.get("dropped") else "no", str(t.get("reason") or "")] for t in r["trials"]]))
    else:
        epoch_svg, banded = plots.metric_vs_epoch(view)
        parts.append(_figure(plots.metric_vs_time(view), "metric-time",
                             "Each trial's metric after every evaluation against its training time so far "
                             "(evaluation windows excluded); dashed: the quality target.", numbers))
        parts.append(_figure(epoch_svg, "metric-epoch",
                             "The metric per epoch " + ("beside the rules' reference band (grey: lowest to highest "
                                                        "of the calibration trials)." if banded else
                                                        "(the rules carry no reference band for this batch size "
                                                        "and precision)."), numbers))
        parts.append(_figure(plots.time_bars(view), "time", "Time per trial: training (blue) and evaluation "
                             "(orange) windows shown apart.", numbers))
        energy = plots.energy_bars(view)
        parts.append(_figure(energy, "energy", "Energy per trial: training (blue) and evaluation (orange).", numbers))
        if energy is None:
            reason = (r.get("score") or {}).get("energy_reason") or "no trial measured energy"
            parts.append(f"<p>Energy: not measured ({escape(reason)}).</p>")
        parts.append("<h3>Trials</h3>" + _table(TRIAL_COLUMNS, [trial_row(t) for t in view.trials],
                                                caption="Times and energy recomputed by the checker from the "
                                                "MLLOG events; samples/s recomputed; TFLOPS and utilization "
                                                "as the harness logged them."))
    parts.append("<h3>System</h3>" + _system(system_of(data, r)))
    parts.append("<h3>Checker findings</h3>" + _findings(view.findings))
    parts.append("</section>")
    return "".join(parts)


def _sweeps(sweeps: list[dict], numbers) -> str:
    from trainmark.report.sweeps import SERIES, sweep_svgs

    parts = ["<section><h2>Sweeps</h2>"]
    for sweep in sweeps:
        parts.append(f"<h3>{escape(sweep['benchmark'])} (<code>{escape(sweep['file'])}</code>)</h3>")
        if not sweep["points"]:
            parts.append('<div class="missing" role="note">No measured point in this sweep.</div>')
            continue
        for kind, svg in sweep_svgs(sweep):
            parts.append(_figure(svg, kind, f"{kind[6:].replace('_', ' ')} against the batch size, one line per "
                                 "precision (measured points only).", numbers))
        parts.append(_table(["precision", "batch size"] + [label for _, label in SERIES],
                            [[p["precision"], str(p["batch_size"])] + [num(p[k]) for k, _ in SERIES]
                             for p in sweep["points"]]))
    parts.append("</section>")
    return "".join(parts)


def render_html(data: ReportData, sweeps: list[dict] | None = None) -> str:
    numbers = itertools.count(1)   # figure numbers: each figure's SVG ids get its own prefix
    rep = data.report
    verdict = "PASS" if rep["passed"] else "FAIL"
    counts = ", ".join(f"{n} {s}" for s, n in rep["counts"].items())
    body = [f"<h1>trainmark report</h1><p>Checked <code>{escape(rep['path'])}</code> ({escape(rep['level'])}) with "
            f"trainmark {escape(__version__)}: <strong class=\"{verdict.lower()}\">{verdict}</strong> "
            f"({escape(counts)}).</p>"]
    if data.benchmarks:
        body.append("<h2>Summary</h2>" + _table(BENCHMARK_COLUMNS, [benchmark_row(v) for v in data.benchmarks],
                                                caption="Score: the olympic mean of the training times without "
                                                "evaluation (trainmark) or MLPerf's score in minutes."))
    else:
        body.append('<div class="missing" role="note">No benchmark result could be read in this folder.</div>')
    if rep["notes"]:
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in rep["notes"]) + "</ul>")
    body += [_benchmark(data, v, i, numbers) for i, v in enumerate(data.benchmarks, start=1)]
    if sweeps:
        body.append(_sweeps(sweeps, numbers))
    loose = loose_findings(data)
    if loose:
        body.append("<h2>Other findings</h2>" + _findings(loose))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>trainmark report: {escape(rep['path'])}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")
