"""The report's charts, written as SVG text directly: lines, stacked bars, scores with intervals.

Why not matplotlib any more: a figure cost it about 30 ms and 20 KB, so a folder of 5,000 trials
(3,000 figures) took two minutes and 33 MB; these take well under a millisecond and a few KB. Writing
the SVG also puts every legend outside the plotting area (nothing drawn can hide under it) and gives
each chart a ``viewBox``, so the browser scales it to the column's width. Every data element's id
contains ``-data-`` (the browser test finds the drawn data by it), every id starts with the chart's
own prefix (unique in the page), every text is escaped, every number goes through ``fmt.num``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainmark.format.text import html_text as escape
from trainmark.report.fmt import num

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")
CHAR_W = 7.0        # a 12 px system-ui character's width, roughly: enough to place labels and legend entries
LEGEND_ROW = 20


@dataclass
class Series:
    name: str                      # legend text (escaped when written)
    gid: str                       # id suffix after the chart prefix; contains "data-"
    points: list[tuple[float, float]] = field(default_factory=list)
    dashed: bool = False


def _f(x: float) -> str:
    """A coordinate: one decimal, no trailing zeros (SVG text stays small)."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0]
    if hi <= lo:
        hi, lo = lo + (abs(lo) or 1.0) * 0.5, lo - (abs(lo) or 1.0) * 0.5
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    return [round(first + i * step, 12) for i in range(int(math.ceil((hi - first) / step + 1e-9)) + 1)]


class _Scale:
    def __init__(self, lo: float, hi: float, start: float, end: float, log2: bool = False):
        self.log2 = log2
        f = math.log2 if log2 else float
        self.lo, self.hi = f(lo), f(hi)
        if self.hi == self.lo:
            self.lo, self.hi = self.lo - 0.5, self.hi + 0.5
        self.start, self.end = start, end

    def __call__(self, v: float) -> float:
        v = math.log2(v) if self.log2 else v
        return self.start + (v - self.lo) / (self.hi - self.lo) * (self.end - self.start)


def _legend(prefix: str, entries: list[tuple[str, str, str]], left: float, width: float) -> tuple[str, float]:
    """Legend entries (name, color, kind: line|dash|box) in rows above the plotting area; (svg, its height)."""
    if not entries:
        return "", 0.0
    out, x, y = [], left, 14.0
    for name, color, kind in entries:
        w = 22 + CHAR_W * len(name) + 14
        if x + w > left + width and x > left:
            x, y = left, y + LEGEND_ROW
        if kind == "box":
            mark = f'<rect x="{_f(x)}" y="{_f(y - 9)}" width="14" height="10" fill="{color}"/>'
        else:
            dash = ' stroke-dasharray="5 3"' if kind == "dash" else ""
            mark = f'<line x1="{_f(x)}" y1="{_f(y - 4)}" x2="{_f(x + 16)}" y2="{_f(y - 4)}" stroke="{color}" ' \
                   f'stroke-width="2"{dash}/>'
        out.append(f'{mark}<text x="{_f(x + 20)}" y="{_f(y)}">{escape(name)}</text>')
        x += w
    return f'<g id="{prefix}legend" class="legend">{"".join(out)}</g>', y + 10


def _svg(prefix: str, width: float, height: float, label: str, body: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{prefix}svg" viewBox="0 0 {_f(width)} '
            f'{_f(height)}" role="img" aria-label="{escape(label)}">{body}</svg>')


def _axes(x: _Scale, y: _Scale, xt: list[float], yt: list[float], top: float, bottom: float, left: float,
          right: float, xlabel: str, ylabel: str) -> str:
    grid = "".join(f"M{_f(left)} {_f(y(v))}H{_f(right)}" for v in yt) + \
        "".join(f"M{_f(x(v))} {_f(top)}V{_f(bottom)}" for v in xt)
    out = [f'<rect class="frame" x="{_f(left)}" y="{_f(top)}" width="{_f(right - left)}" height="{_f(bottom - top)}"/>'
           f'<path class="grid" d="{grid}"/>']
    out += [f'<text class="yt" x="{_f(left - 6)}" y="{_f(y(v) + 4)}">{escape(num(v))}</text>' for v in yt]
    out += [f'<text class="xt" x="{_f(x(v))}" y="{_f(bottom + 16)}">{escape(num(v))}</text>' for v in xt]
    out.append(f'<text class="xl" x="{_f((left + right) / 2)}" y="{_f(bottom + 36)}">{escape(xlabel)}</text>')
    if ylabel:
        out.append(f'<text class="yl" transform="translate(14 {_f((top + bottom) / 2)}) rotate(-90)">'
                   f'{escape(ylabel)}</text>')
    return "".join(out)


def line_chart(prefix: str, series: list[Series], xlabel: str, ylabel: str, label: str, *,
               target: float | None = None, band: list[tuple[float, float, float]] | None = None,
               log2_x: bool = False, width: float = 1000, plot_height: float = 240) -> str:
    """Lines with point markers; a dashed target line and a grey band (x, low, high) when given."""
    xs = [p[0] for s in series for p in s.points] + [b[0] for b in band or []]
    ys = [p[1] for s in series for p in s.points] + [v for b in band or [] for v in b[1:]]
    ys += [target] if target is not None else []
    left, right = 74.0, width - 16
    entries = [(s.name, COLORS[i % len(COLORS)], "dash" if s.dashed else "line") for i, s in enumerate(series)]
    entries += [("reference band (calibration trials)", "#bbb", "box")] if band else []
    entries += [(f"target {num(target)}", "#000", "dash")] if target is not None else []
    legend, legend_h = _legend(prefix, entries, left, right - left)
    top = legend_h + 8
    bottom = top + plot_height
    if log2_x:
        xt = [2.0 ** k for k in range(math.floor(math.log2(min(xs))), math.ceil(math.log2(max(xs))) + 1)]
        x = _Scale(xt[0], xt[-1], left, right, log2=True)
    else:
        xt = ticks(min(xs), max(xs))
        x = _Scale(xt[0], xt[-1], left, right)
    yt = ticks(min(ys), max(ys))
    y = _Scale(yt[0], yt[-1], bottom, top)
    out = [_axes(x, y, xt, yt, top, bottom, left, right, xlabel, ylabel)]
    if band:
        upper = " ".join(f"{_f(x(e))},{_f(y(hi))}" for e, _, hi in band)
        lower = " ".join(f"{_f(x(e))},{_f(y(lo))}" for e, lo, _ in reversed(band))
        out.append(f'<polygon id="{prefix}data-band" class="band" points="{upper} {lower}"/>')
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        pts = " ".join(f"{_f(x(a))},{_f(y(b))}" for a, b in s.points)
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        marks = "".join(f'<circle cx="{_f(x(a))}" cy="{_f(y(b))}" r="3"><title>{escape(s.name)}: '
                        f'{escape(num(a))}, {escape(num(b))}</title></circle>' for a, b in s.points)
        out.append(f'<g id="{prefix}{s.gid}" class="series" stroke="{color}" fill="{color}">'
                   f'<polyline fill="none" stroke-width="2" points="{pts}"{dash}/>{marks}</g>')
    if target is not None:
        out.append(f'<line id="{prefix}target" class="target" x1="{_f(left)}" x2="{_f(right)}" y1="{_f(y(target))}" '
                   f'y2="{_f(y(target))}"/>')
    return _svg(prefix, width, bottom + 46, label, legend + "".join(out))


def bar_chart(prefix: str, labels: list[str], stacks: list[tuple[str, str, list[float]]], xlabel: str, label: str,
              *, width: float = 1000, row: float = 24, links: list[str] | None = None,
              intervals: list[tuple[float, float] | None] | None = None) -> str:
    """Horizontal bars, one row per label; ``stacks`` (name, gid, values) stack left to right; an
    interval (low, high) per row is drawn as a whisker over the bars; ``links`` make row labels anchors.
    A negative or non-finite value is drawn as 0 (its tooltip keeps the value)."""
    label_w = min(320.0, 16 + 1.1 * CHAR_W * max((len(t) for t in labels), default=1))   # capitals are wider
    left, right = label_w, width - 24
    entries = [(name, COLORS[i % len(COLORS)], "box") for i, (name, _, _) in enumerate(stacks)] if len(stacks) > 1 \
        else []
    legend, legend_h = _legend(prefix, entries, left, right - left)
    top = legend_h + (8 if legend else 10)
    bottom = top + row * len(labels)
    totals = [sum(v for _, _, vals in stacks if math.isfinite(v := vals[i]) and v > 0) for i in range(len(labels))]
    highs = totals + [iv[1] for iv in intervals or [] if iv is not None]
    xt = ticks(0.0, max(highs, default=1.0) or 1.0)
    x = _Scale(0.0, xt[-1], left, right)
    y = _Scale(0.0, 1.0, top, top + row)    # row i spans y(i) .. y(i + 1)
    grid = "".join(f"M{_f(x(v))} {_f(top)}V{_f(bottom)}" for v in xt)
    out = [f'<rect class="frame" x="{_f(left)}" y="{_f(top)}" width="{_f(right - left)}" '
           f'height="{_f(bottom - top)}"/><path class="grid" d="{grid}"/>']
    out += [f'<text class="xt" x="{_f(x(v))}" y="{_f(bottom + 16)}">{escape(num(v))}</text>' for v in xt]
    out.append(f'<text class="xl" x="{_f((left + right) / 2)}" y="{_f(bottom + 36)}">{escape(xlabel)}</text>')
    for i, text in enumerate(labels):
        mid = y(i + 0.5) + 4
        shown = escape(text if len(text) * CHAR_W <= label_w - 12 else text[:int((label_w - 12) / CHAR_W) - 1] + "…")
        tag = f'<text class="yt" x="{_f(left - 6)}" y="{_f(mid)}">{shown}<title>{escape(text)}</title></text>'
        out.append(f'<a href="#{escape(links[i])}">{tag}</a>' if links and links[i] else tag)
        start = 0.0
        for k, (name, gid, vals) in enumerate(stacks):
            v = vals[i] if math.isfinite(vals[i]) and vals[i] > 0 else 0.0
            out.append(f'<rect id="{prefix}data-{gid}-{i + 1}" x="{_f(x(start))}" y="{_f(y(i) + 4)}" '
                       f'width="{_f(max(x(start + v) - x(start), 1.0))}" height="{_f(row - 8)}" '
                       f'fill="{COLORS[k % len(COLORS)]}"><title>{escape(text)}: {escape(name)} '
                       f'{escape(num(vals[i]))}</title></rect>')
            start += v
        iv = intervals[i] if intervals else None
        if iv is not None:
            lo, hi, cy = x(iv[0]), x(iv[1]), y(i + 0.5)
            out.append(f'<path id="{prefix}data-ci-{i + 1}" class="ci" d="M{_f(lo)} {_f(cy)}H{_f(hi)}'
                       f'M{_f(lo)} {_f(cy - 6)}V{_f(cy + 6)}M{_f(hi)} {_f(cy - 6)}V{_f(cy + 6)}">'
                       f'<title>95 % CI {escape(num(iv[0]))} to {escape(num(iv[1]))}</title></path>')
    return _svg(prefix, width, bottom + 46, label, legend + "".join(out))


@dataclass
class Dot:
    """One point of a scatter: position, radius in px, its group (legend and colour) and its tooltip."""
    x: float
    y: float
    r: float
    group: str
    title: str


def _decades(lo: float, hi: float) -> list[float]:
    """Powers of ten covering [lo, hi] (a log axis' ticks)."""
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0 ** k for k in range(first, max(last, first + 1) + 1)]


def roofline_chart(prefix: str, dots: list[Dot], groups: list[str], roofs: list[tuple[str, float]],
                   bandwidth: float | None, step: tuple[float, float] | None, xlabel: str, ylabel: str, label: str,
                   *, width: float = 1000, plot_height: float = 340) -> str:
    """A roofline on log-log axes: the compute roofs (horizontal, one per dtype), the memory roof (the
    diagonal y = bandwidth x x, up to the ridge), dots coloured by group, and the step as a black diamond."""
    xs = [d.x for d in dots] + ([step[0]] if step else [])
    ys = [d.y for d in dots] + ([step[1]] if step else []) + [p for _, p in roofs]
    if bandwidth:
        ridges = [p / bandwidth for _, p in roofs]
        xs += ridges
    xt, yt = _decades(min(xs) / 2, max(xs) * 2), _decades(min(ys) / 2, max(ys) * 2)
    left, right = 74.0, width - 16
    entries = [(g, COLORS[i % len(COLORS)], "box") for i, g in enumerate(groups)]
    entries += [(f"compute roof: {name}", "#444", "line") for name, _ in roofs[:1]]
    entries += [("memory roof", "#444", "dash")] if bandwidth else []
    entries += [("the whole step", "#000", "box")] if step else []
    legend, legend_h = _legend(prefix, entries, left, right - left)
    top = legend_h + 8
    bottom = top + plot_height
    x = _Scale(xt[0], xt[-1], left, right, log2=True)
    y = _Scale(yt[0], yt[-1], bottom, top, log2=True)
    out = [_axes(x, y, xt, yt, top, bottom, left, right, xlabel, ylabel)]
    for k, (name, peak) in enumerate(roofs):
        start = x(peak / bandwidth) if bandwidth else left
        out.append(f'<path id="{prefix}roof-{k}" d="M{_f(max(left, start))} {_f(y(peak))}H{_f(right)}" stroke="#444" '
                   f'stroke-width="{2 if k == 0 else 1}" fill="none"><title>{escape(name)} peak '
                   f'{escape(num(peak))}</title></path>')
    if bandwidth and roofs:
        ridge = roofs[0][1] / bandwidth
        x0 = xt[0]
        out.append(f'<path id="{prefix}roof-memory" d="M{_f(x(x0))} {_f(y(max(bandwidth * x0, yt[0])))}'
                   f'L{_f(x(ridge))} {_f(y(roofs[0][1]))}" stroke="#444" stroke-dasharray="6 4" fill="none">'
                   f'<title>memory roof {escape(num(bandwidth))} B/s</title></path>')
    for i, d in enumerate(sorted(dots, key=lambda d: -d.r)):   # the small ones on top
        color = COLORS[groups.index(d.group) % len(COLORS)] if d.group in groups else "#999"
        out.append(f'<circle id="{prefix}data-op-{i + 1}" cx="{_f(x(d.x))}" cy="{_f(y(d.y))}" r="{_f(d.r)}" '
                   f'fill="{color}" fill-opacity=".55" stroke="{color}"><title>{escape(d.title)}</title></circle>')
    if step:
        cx, cy = x(step[0]), y(step[1])
        out.append(f'<path id="{prefix}data-step" d="M{_f(cx)} {_f(cy - 8)}L{_f(cx + 8)} {_f(cy)}L{_f(cx)} '
                   f'{_f(cy + 8)}L{_f(cx - 8)} {_f(cy)}Z" fill="#000"><title>the whole step: '
                   f'{escape(num(step[0]))} FLOP/B, {escape(num(step[1]))} FLOP/s</title></path>')
    return _svg(prefix, width, bottom + 46, label, legend + "".join(out))
