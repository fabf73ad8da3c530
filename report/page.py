"""``trainmark report``'s HTML page: one self-contained file, no script, no request.

Laid out for a reviewer who has seconds: the verdict, the contents and the overview (one score chart
per benchmark, one table of systems x benchmarks) fill the first screen; every benchmark and every
system is a folded ``<details>`` section below, reached from the contents, the table and the charts.
A system's description is shown once, in its own section; a benchmark's findings in its section.

Everything from the submitted folder is HTML-escaped; the figures are inline SVG; a
Content-Security-Policy of ``default-src 'none'`` makes the browser refuse any request the
page might still try, so "works offline" is enforced, not hoped for.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from trainmark import __version__
from trainmark.format.layout import PROFILE_JSON
from trainmark.format.text import html_text as escape
from trainmark.report import plots
from trainmark.report.collect import BenchmarkView, ReportData, lone_system_file, system_file_of
from trainmark.report.fmt import num
from trainmark.report.summary import (
    FINDING_COLUMNS,
    TRIAL_COLUMNS,
    finding_row,
    loose_findings,
    score_text,
    score_value,
    trial_row,
)

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
OVERVIEW_BARS = 40    # systems per overview chart: the best scores; the table lists every system
STYLE = """
body{font-family:system-ui,sans-serif;margin:1rem auto;max-width:75rem;padding:0 1rem;color:#222;line-height:1.35}
h1{font-size:1.5rem;margin:.2rem 0} h2{font-size:1.2rem;margin:.6rem 0 .3rem} h3{font-size:1rem;margin:.8rem 0 .3rem}
table{border-collapse:collapse;margin:.4rem 0 .8rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.15rem .4rem;text-align:left;vertical-align:top}
th{background:#f3f3f3} caption{text-align:left;font-size:.8rem;color:#555;caption-side:bottom}
.pass{color:#176b2c;font-weight:600} .fail{color:#a61b1b;font-weight:600} .none{color:#666}
.verdict{font-size:1.1rem;margin:.2rem 0 .5rem} p.note{font-size:.8rem;color:#555;margin:-.5rem 0 .5rem}
nav#contents{display:grid;grid-template-columns:11rem 1fr 15rem;gap:.5rem 1.5rem;font-size:.85rem;
 border:1px solid #ddd;padding:.3rem .8rem;background:#fafafa}
nav#contents h2{grid-column:1/-1;margin:.2rem 0;font-size:1rem} nav ol{margin:0;padding-left:1.1rem}
nav ol.many{columns:2} nav ol{max-height:15rem;overflow-y:auto} nav ol.long{padding-left:2.8rem}
.scroll{max-height:30rem;overflow:auto;display:inline-block;max-width:100%} nav h3{margin:.1rem 0;font-size:.85rem}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(22rem,1fr));gap:.3rem 1rem}
figure{margin:.3rem 0} figcaption{font-size:.8rem;color:#444}
svg.chart{width:100%;height:auto;display:block} figure.wide{max-width:100%}
svg.chart text{font:12px system-ui,sans-serif;fill:#222} svg.chart .yt{text-anchor:end}
svg.chart .xt,svg.chart .xl{text-anchor:middle} svg.chart .yl{text-anchor:middle}
svg.chart .frame{fill:none;stroke:#999} svg.chart .grid{fill:none;stroke:#000;stroke-opacity:.08}
svg.chart .band{fill:#999;fill-opacity:.3} svg.chart .target{stroke:#000;stroke-dasharray:6 4}
svg.chart .ci{stroke:#222;stroke-width:1.5;fill:none} svg.chart a text{fill:#0645ad}
details.section{border-top:1px solid #ddd;padding:.15rem 0} details.section>summary{cursor:pointer;padding:.25rem 0}
details.section>summary h2{display:inline;font-size:1.05rem;margin:0 .5rem 0 0}
.missing{background:#fff6dd;border-left:4px solid #d9a400;padding:.3rem .7rem;font-size:.9rem}
.missing ul{margin:.2rem 0;padding-left:1.2rem}
.failed{background:#fde8e8;border-left:4px solid #a61b1b;padding:.3rem .7rem}
tr.error td:nth-child(2){color:#a61b1b;font-weight:600} tr.warning td:nth-child(2){color:#8a5a00}
tr.failed td:nth-child(2){color:#a61b1b;font-weight:600}
"""


class Anchors:
    """Ids for the page's sections: readable, limited to [A-Za-z0-9_-], unique (a counter on a clash)."""

    def __init__(self):
        self.used: set[str] = {"contents", "overview", "sweeps", "other-findings", "notes"}

    def new(self, *words: str) -> str:
        base = "-".join(re.sub(r"[^A-Za-z0-9_-]+", "-", w).strip("-")[:60] or "x" for w in words)
        anchor, k = base, 1
        while anchor in self.used:
            k += 1
            anchor = f"{base}-{k}"
        self.used.add(anchor)
        return anchor


@dataclass
class SystemEntry:
    """One system: its description file (relative to the checked folder) and the benchmarks it ran."""
    anchor: str
    name: str
    file: str | None
    division: str
    benchmarks: list[tuple[BenchmarkView, str]] = field(default_factory=list)


def _table(columns: list[str], rows: list[list[str]], row_class=None, caption: str = "") -> str:
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in columns)
    body = "".join(
        f"<tr{' class=' + chr(34) + escape(row_class(i)) + chr(34) if row_class else ''}>"
        + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for i, row in enumerate(rows))
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(svg: str | None, kind: str, caption: str) -> str:
    if svg is None:
        return ""
    return (f'<figure class="plot" data-kind="{escape(kind)}" role="img" aria-label="{escape(caption)}">'
            f"{svg}<figcaption>{escape(caption)}</figcaption></figure>")


def _findings(findings: list[dict]) -> str:
    if not findings:
        return "<p>No findings.</p>"
    return _table(FINDING_COLUMNS, [finding_row(f) for f in findings], row_class=lambda i: findings[i]["severity"])


def _compact(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 300 else text[:297] + "..."


def _status(view: BenchmarkView) -> tuple[str, str]:
    """(css class, word): FAIL on an error, else PASS (warnings do not fail a benchmark)."""
    return ("fail", "FAIL") if view.result.get("errors") else ("pass", "PASS")


def _folder(data: ReportData, view: BenchmarkView) -> str:
    path = view.result["path"]
    if path:
        return f"<code>{escape(path)}</code> (under the checked folder)"
    return f"<code>{escape(data.report['path'])}</code> (the checked folder itself: a lone benchmark folder)"


def _systems(data: ReportData, anchors: Anchors, benchmark_ids: list[str]) -> list[SystemEntry]:
    """Every system: those the checker listed, then those only a benchmark names (no description)."""
    entries: dict[str, SystemEntry] = {}
    for s in data.report["systems"]:
        entries[s["file"]] = SystemEntry(anchors.new("system", s["system"]), s["system"], s["file"],
                                         s.get("division") or "")
    for view, bid in zip(data.benchmarks, benchmark_ids):
        r = view.result
        file = system_file_of(r)
        key = file or f"?{r['division']}/{r['system']}"
        if key not in entries:
            entries[key] = SystemEntry(anchors.new("system", r["system"] or "unknown"), r["system"] or "?", file,
                                       r["division"] or "")
        entries[key].benchmarks.append((view, bid))
    return list(entries.values())


def _system_section(data: ReportData, entry: SystemEntry) -> str:
    desc = data.systems.get(entry.file or "", {})
    parts = [f'<details class="section system" id="{entry.anchor}"><summary><h2>System {escape(entry.name)}</h2>'
             f"{escape(entry.division)}; {len(entry.benchmarks)} benchmark(s)</summary>"]
    if entry.benchmarks:
        parts.append("<p>Benchmarks: " + ", ".join(f'<a href="#{bid}">{escape(v.name)}</a>'
                                                   for v, bid in entry.benchmarks) + ".</p>")
    lone = [v for v, _ in entry.benchmarks if v.result["path"] == ""]
    if desc:
        parts.append(f"<p>Description: <code>{escape(entry.file or '')}</code>.</p>"
                     + _table(["field", "value"], [[str(k), v if isinstance(v, str) else _compact(v)]
                                                   for k, v in desc.items()]))
    elif lone and lone_system_file(data.report, lone[0].result) is None:
        parts.append("<p>No system description was given: a lone benchmark folder outside the layout "
                     "(<code>results/&lt;system&gt;/&lt;benchmark&gt;</code>) carries none.</p>")
    elif lone and entry.file not in data.systems:
        parts.append("<p>No system description was given: the checked folder is a lone benchmark folder, and "
                     f"its description (<code>{escape(entry.file or '')}</code> in the layout) lies outside it, "
                     "so it was not part of the check. Check the submitter folder to see it.</p>")
    elif entry.file:
        parts.append(f"<p>No readable system description at <code>{escape(entry.file)}</code> (the checker's "
                     "findings say why).</p>")
    else:
        parts.append("<p>No system description: this benchmark folder does not lie under "
                     "<code>&lt;submitter&gt;/results/</code>, where the layout puts one beside it.</p>")
    own = [f for f in data.report["findings"] if entry.file and f["file"] == entry.file]
    if own:
        parts.append("<h3>Checker findings</h3>" + _findings(own))
    parts.append("</details>")
    return "".join(parts)


def _benchmark(data: ReportData, view: BenchmarkView, anchor: str, system: SystemEntry, index: int) -> str:
    r = view.result
    css, word = _status(view)
    score = f"score {score_text(view)}" if score_value(view) is not None else "no score"
    counts = f"{r['errors']} error(s), {r['warnings']} warning(s)" if r["errors"] or r["warnings"] else "no findings"
    parts = [f'<details class="section benchmark" id="{anchor}"><summary><h2>{escape(r["benchmark"])} on '
             f'{escape(r["system"] or "?")}</h2><span class="{css}">{word}</span> {escape(score)}; '
             f"{escape(counts)}</summary>",
             f"<p>Folder: {_folder(data, view)}; system <a href=\"#{system.anchor}\">{escape(system.name)}</a>; "
             f"{escape(r['division'] or 'division unknown')} division, {escape(r['format'])} format, rules "
             f"{escape(str(r.get('rules_version') or '-'))}.</p>"]
    if view.model_words:
        parts.append(f"<p>Model: {escape(view.model_words)}.</p>")
    if view.withheld:
        failed = [t for t in view.trials if t.failed]
        parts.append('<div class="failed" role="note"><strong>No score:</strong> '
                     f"{escape(view.withheld)}. The checker's score, means and interval over these trials are not "
                     "shown" + (f"; failing trial(s): {escape(', '.join(str(t.summary['trial']) for t in failed))}"
                                if failed else "") + ". The findings below say what is wrong.</div>")
    if view.missing:
        parts.append('<div class="missing" role="note"><strong>Not shown or incomplete:</strong><ul>'
                     + "".join(f"<li>{escape(m)}</li>" for m in view.missing) + "</ul></div>")
    prefix = f"b{index}-"   # the charts' ids: short (a page may hold thousands), unique, no section's anchor
    if r["format"] == "mlperf":
        parts.append(_figure(plots.mlperf_runs(r, prefix + "runs-"), "mlperf-runs", "Each MLPerf run's time in "
                             "minutes (run_stop - run_start, evaluation included, as MLPerf scores it)."))
        parts.append(_table(["file", "minutes", "dropped", "reason"],
                            [[str(t.get("file", "")), num(t.get("minutes")), "yes" if t.get("dropped") else "no",
                              str(t.get("reason") or "")] for t in r["trials"]]))
    else:
        epoch_svg, banded = plots.metric_vs_epoch(view, prefix + "epoch-")
        parts.append(_figure(plots.metric_vs_time(view, prefix + "time-"), "metric-time",
                             "Each trial's metric after every evaluation against its training time so far "
                             "(evaluation windows excluded); dashed: the quality target."))
        parts.append(_figure(epoch_svg, "metric-epoch",
                             "The metric per epoch " + ("beside the rules' reference band (grey: lowest to highest "
                                                        "of the calibration trials)." if banded else
                                                        "(the rules carry no reference band for this batch size "
                                                        "and precision).")))
        parts.append(_figure(plots.time_bars(view, prefix + "bars-"), "time",
                             "Time per trial: training (blue) and evaluation (orange) windows shown apart."))
        parts.append(_figure(plots.energy_bars(view, prefix + "energy-"), "energy",
                             "Energy per trial: training (blue) and evaluation (orange)."))
        rows = [trial_row(t) for t in view.trials]
        parts.append("<h3>Trials</h3>" + _table(
            TRIAL_COLUMNS, rows, row_class=lambda i: "failed" if view.trials[i].failed else "",
            caption="Times and energy recomputed by the checker from the MLLOG events; samples/s recomputed; "
                    "the share of training spent waiting for data as the harness logged it; "
                    "TFLOPS and utilization as the harness logged them."))
    parts.append(_profile(view, prefix + "prof-"))
    parts.append("<h3>Checker findings</h3>" + _findings(view.findings))
    parts.append("</details>")
    return "".join(parts)


def _profile(view: BenchmarkView, prefix: str) -> str:
    """The folder's profile.json (``trainmark profile``): the roofline and the top operators; '' without one."""
    if view.profile is None:
        return ""
    from trainmark.report.profile_page import profile_section

    return (f"<h3>Profile (<code>{escape(PROFILE_JSON)}</code> from trainmark profile: it explains the time, "
            "it is no score and the checker does not judge it)</h3>" + profile_section(view.profile, prefix))


def _overview(data: ReportData, ids: list[str], systems: list[SystemEntry]) -> str:
    rep = data.report
    parts = ['<section id="overview"><h2>Overview</h2>']
    if not data.benchmarks:
        parts.append('<div class="missing" role="note">No benchmark result could be read in this folder.</div>')
        return "".join(parts) + "</section>"
    names = sorted({v.name for v in data.benchmarks})
    head = "".join(f'<th scope="col">{escape(n)}</th>' for n in names)
    rows = []
    for entry in systems:
        cells = {v.name: (v, bid) for v, bid in entry.benchmarks}
        tds = []
        for n in names:
            if n not in cells:
                tds.append('<td class="none">-</td>')
                continue
            v, bid = cells[n]
            css, word = _status(v)
            text = score_text(v) if score_value(v) is not None else f"{word}: no score"
            tds.append(f'<td><a class="{css}" href="#{bid}">{escape(text)}</a></td>')
        rows.append(f'<tr><th scope="row"><a href="#{entry.anchor}">{escape(entry.name)}</a></th>{"".join(tds)}</tr>')
    parts.append(f'<div class="scroll"><table class="matrix"><thead><tr><th scope="col">system</th>{head}</tr></thead>'
                 f'<tbody>{"".join(rows)}</tbody></table></div><p class="note">Score per system and benchmark: '
                 "the olympic mean of the training times without evaluation (s), or MLPerf's score (min); "
                 "each links to its section, and each system to its description.</p>")
    charts = []
    for n in names:
        scored = []
        for entry in systems:
            for v, bid in entry.benchmarks:
                value = score_value(v) if v.name == n else None
                if value is not None:
                    ci = (v.result.get("score") or {}).get("ci95_train_time_s") if value[1] == "s" else None
                    scored.append((entry.name, value[0], tuple(ci) if ci else None, bid, value[1]))
        if not scored:
            charts.append(f"<p>{escape(n)}: no system has a score.</p>")
            continue
        scored.sort(key=lambda s: s[1])
        shown = scored[:OVERVIEW_BARS]
        more = f" The {len(shown)} best of {len(scored)} systems; the table lists all." if len(scored) > len(shown) \
            else ""
        svg = plots.score_chart(f"o{len(charts) + 1}-", [s[:4] for s in shown], shown[0][4])
        whiskers = "whiskers its 95 % confidence interval" if any(s[2] for s in shown) else \
            "no confidence interval (an MLPerf score, or a single trial)"
        charts.append(_figure(svg, "overview-score", f"{n}: score per system, {whiskers}; lower is better.{more}"))
    parts.append('<div class="charts">' + "".join(charts) + "</div>")
    if rep["notes"]:
        parts.append('<h3 id="notes">Notes</h3><ul>' + "".join(f"<li>{escape(n)}</li>" for n in rep["notes"]) + "</ul>")
    return "".join(parts) + "</section>"


def _contents(data: ReportData, ids: list[str], systems: list[SystemEntry], extra: list[tuple[str, str]]) -> str:
    bench = "".join(f'<li><a href="#{bid}">{escape(v.name)} on {escape(v.result["system"] or "?")}</a> '
                    f'<span class="{_status(v)[0]}">{_status(v)[1]}</span></li>'
                    for v, bid in zip(data.benchmarks, ids))
    sys_items = "".join(f'<li><a href="#{s.anchor}">{escape(s.name)}</a></li>' for s in systems)
    first = '<li><a href="#overview">Overview</a></li>' + "".join(f'<li><a href="#{a}">{escape(t)}</a></li>'
                                                                  for a, t in extra)
    return (f'<nav id="contents" aria-label="Contents"><h2>Contents</h2><div><ol>{first}</ol></div>'
            f'<div><h3>Benchmarks ({len(ids)})</h3><ol class="{_list_class(len(ids))}">{bench}</ol></div>'
            f'<div><h3>Systems ({len(systems)})</h3><ol class="{_list_class(len(systems), 0)}">{sys_items}</ol></div>'
            "</nav>")


def _list_class(items: int, columns_up_to: int = 24) -> str:
    """Two columns for a dozen or two; a scrolling list, numbers of four digits room, for many."""
    return "long" if items > 99 else "many" if 6 < items <= columns_up_to else ""


def _sweeps(sweeps: list[dict]) -> str:
    from trainmark.report.sweeps import SERIES, sweep_svgs

    parts = ['<details class="section" id="sweeps"><summary><h2>Sweeps</h2>'
             f"{len(sweeps)} sweep file(s)</summary>"]
    for i, sweep in enumerate(sweeps, start=1):
        parts.append(f"<h3>{escape(sweep['benchmark'])} (<code>{escape(sweep['file'])}</code>)</h3>")
        if not sweep["points"]:
            parts.append('<div class="missing" role="note">No measured point in this sweep.</div>')
            continue
        for kind, svg in sweep_svgs(sweep, f"sweep{i}-"):
            parts.append(_figure(svg, kind, f"{kind[6:].replace('_', ' ')} against the batch size, one line per "
                                 "precision (measured points only)."))
        parts.append(_table(["precision", "batch size"] + [label for _, label in SERIES],
                            [[p["precision"], str(p["batch_size"])] + [num(p[k]) for k, _ in SERIES]
                             for p in sweep["points"]]))
    parts.append("</details>")
    return "".join(parts)


def render_html(data: ReportData, sweeps: list[dict] | None = None) -> str:
    rep = data.report
    anchors = Anchors()
    ids = [anchors.new("bench", v.result["system"] or "unknown", v.name) for v in data.benchmarks]
    systems = _systems(data, anchors, ids)
    by_benchmark = {bid: s for s in systems for _, bid in s.benchmarks}
    verdict = "PASS" if rep["passed"] else "FAIL"
    counts = ", ".join(f"{n} {s}" for s, n in rep["counts"].items())
    failing = [v for v in data.benchmarks if v.result.get("errors")]
    why = f" {len(failing)} of {len(data.benchmarks)} benchmark(s) have errors." if failing else ""
    loose = loose_findings(data)
    loose = [f for f in loose if not any(s.file and f["file"] == s.file for s in systems)]
    extra = ([("sweeps", "Sweeps")] if sweeps else []) + ([("other-findings", "Other findings")] if loose else [])
    body = [f"<header><h1>trainmark report</h1><p class=\"verdict\"><strong class=\"{verdict.lower()}\">{verdict}"
            f"</strong> <code>{escape(rep['path'])}</code> ({escape(rep['level'])}), checked with trainmark "
            f"{escape(__version__)}: {escape(counts)}.{escape(why)}</p></header>",
            _contents(data, ids, systems, extra), _overview(data, ids, systems)]
    body += [_benchmark(data, v, bid, by_benchmark[bid], i) for i, (v, bid) in enumerate(zip(data.benchmarks, ids), 1)]
    body += [_system_section(data, s) for s in systems]
    if sweeps:
        body.append(_sweeps(sweeps))
    if loose:
        body.append('<details class="section" id="other-findings"><summary><h2>Other findings</h2>'
                    f"{len(loose)} outside any benchmark folder</summary>" + _findings(loose) + "</details>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>trainmark report: {escape(rep['path'])}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")
