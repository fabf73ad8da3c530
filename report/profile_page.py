"""A ``trainmark profile`` result shown: the roofline (operators as points sized by their time, the compute
and memory roofs, the whole step's point), the top operators' table and the step's phases; in a report's
benchmark section when the folder holds a ``profile.json``, and as a page of its own (``profile.html``).

A profile in a submitted folder is the submitter's file: it is read with a cap, every field is checked
for its type, texts are escaped, and nothing in it is recomputed or trusted as a score (it explains a
time, it does not make one).
"""
from __future__ import annotations

import json
import math

from trainmark.format.text import html_text as escape
from trainmark.report.fmt import num, pct
from trainmark.report.svg import Dot, roofline_chart

FORMAT = "trainmark-profile/1"
MAX_OPERATORS = 5000
BOUNDS = ("compute", "memory", "overhead")
NUMBERS = ("calls", "time_s", "host_s", "device_s", "flops", "bytes_read", "bytes_written", "intensity",
           "achieved_flops", "achieved_bandwidth", "roof", "fraction_of_roof")
TEXTS = ("name", "phase", "dtype", "bound", "roof_kind")


def _number(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _text(x, cap: int = 200) -> str:
    return x[:cap] if isinstance(x, str) else ""


def _operator(o) -> dict | None:
    if not isinstance(o, dict):
        return None
    row = {k: _number(o.get(k)) for k in NUMBERS} | {k: _text(o.get(k)) for k in TEXTS}
    shapes = o.get("shapes") if isinstance(o.get("shapes"), list) else []
    row["shapes"] = " ".join("x".join(str(int(d)) for d in s[:8] if _number(d) is not None)
                             for s in shapes[:4] if isinstance(s, list))
    kernels = o.get("kernels") if isinstance(o.get("kernels"), list) else []
    row["kernels"] = [_text(k, 120) for k in kernels[:3]]
    return row if row["time_s"] is not None else None


def _mapping(value, keys) -> dict:
    value = value if isinstance(value, dict) else {}
    return {k: _number(value.get(k)) for k in keys}


def parse_profile(value) -> dict | None:
    """The fields the page draws, each checked; None when ``value`` is not a profile."""
    if not isinstance(value, dict) or value.get("format") != FORMAT or not isinstance(value.get("operators"), list):
        return None
    roofs = value.get("roofs") if isinstance(value.get("roofs"), dict) else {}
    peaks = roofs.get("peak_tflops") if isinstance(roofs.get("peak_tflops"), dict) else {}
    device = value.get("device") if isinstance(value.get("device"), dict) else {}
    settings = value.get("settings") if isinstance(value.get("settings"), dict) else {}
    return {
        "benchmark": _text(value.get("benchmark")), "framework": _text(value.get("framework")),
        "precision": _text(value.get("precision_used")), "device": _text(device.get("name")),
        "device_type": _text(device.get("type")), "cpu": _text(device.get("cpu")),
        "batch_size": _number(settings.get("batch_size")), "steps": _number(settings.get("steps")),
        "peaks": {_text(k, 10): v for k, v in ((k, _number(v)) for k, v in list(peaks.items())[:8]) if v},
        "bandwidth_gbs": _number(roofs.get("bandwidth_gbs")),
        "peak_source": _text(roofs.get("peak_source"), 400),
        "bandwidth_source": _text(roofs.get("bandwidth_source"), 400),
        "phases": _mapping(value.get("phases"), ("forward", "backward", "optimizer", "communication", "data_wait",
                                                 "host_overhead")),
        "step": _mapping(value.get("step"), ("flops", "bytes", "intensity", "achieved_flops", "time_s")),
        "consistency": _mapping(value.get("consistency"), ("coverage", "flops_ratio", "profiler_overhead",
                                                           "plain_step_s", "profiled_step_s")),
        "bound_shares": _mapping(value.get("bound_shares"), BOUNDS),
        "other_cpu_load_pct": _number(value.get("other_cpu_load_pct")),
        "operators": [r for r in map(_operator, value["operators"][:MAX_OPERATORS]) if r is not None],
    }


def read_profile(data: bytes | None) -> dict | None:
    """A profile.json's bytes (already capped by the reader) parsed and checked; None when it is not one."""
    if data is None:
        return None
    try:
        return parse_profile(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def roofline(p: dict, prefix: str) -> str | None:
    """The roofline (GFLOP/s against FLOP/B) of the operators that have FLOPs and bytes."""
    ops = [o for o in p["operators"] if o["intensity"] and o["achieved_flops"]]
    if not ops or not p["peaks"]:
        return None
    total = sum(o["time_s"] for o in p["operators"]) or 1.0
    dots = [Dot(o["intensity"], o["achieved_flops"] / 1e9, 3 + 22 * math.sqrt(o["time_s"] / total),
                o["bound"] if o["bound"] in BOUNDS else "other",
                f"{o['name']} {o['shapes']} ({o['phase']}): {num(o['time_s'] * 1e3)} ms, "
                f"{num(o['intensity'])} FLOP/B, {num(o['achieved_flops'] / 1e9)} GFLOP/s, "
                f"{pct(o['fraction_of_roof'])} of its roof, {o['bound']}") for o in ops]
    roofs = sorted(((k, v * 1e3) for k, v in p["peaks"].items()), key=lambda kv: -kv[1])
    first = p["precision"].removeprefix("amp-") if p["precision"] else "fp32"
    roofs.sort(key=lambda kv: kv[0] != first)          # the run's dtype first: the roof drawn bold
    step = p["step"]
    point = (step["intensity"], step["achieved_flops"] / 1e9) if step["intensity"] and step["achieved_flops"] else None
    return roofline_chart(prefix, dots, [b for b in BOUNDS if any(d.group == b for d in dots)], roofs[:3],
                          p["bandwidth_gbs"], point, "arithmetic intensity (FLOP per byte moved)",
                          "achieved GFLOP/s", "roofline: every operator with FLOPs, sized by its time")


OPERATOR_COLUMNS = ["operator", "shapes", "phase", "calls/step", "ms/step", "GFLOP", "MB moved", "FLOP/B",
                    "GFLOP/s", "GB/s", "of roof", "bound"]


def _operator_row(o: dict) -> list[str]:
    moved = (o["bytes_read"] or 0) + (o["bytes_written"] or 0)
    return [o["name"], o["shapes"], o["phase"], num(o["calls"]), num((o["time_s"] or 0) * 1e3),
            num(o["flops"] / 1e9) if o["flops"] else "-", num(moved / 1e6) if moved else "-", num(o["intensity"]),
            num(o["achieved_flops"] / 1e9) if o["achieved_flops"] else "-",
            num(o["achieved_bandwidth"] / 1e9) if o["achieved_bandwidth"] else "-", pct(o["fraction_of_roof"]),
            o["bound"]]


def _table(columns: list[str], rows: list[list[str]], caption: str) -> str:
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _summary(p: dict) -> str:
    c, ph, b = p["consistency"], p["phases"], p["bound_shares"]
    load = p["other_cpu_load_pct"]
    busy = f"; other processes used {num(load)} % of the CPUs (contended)" if load is not None and load > 10 else ""
    return (f"<p>{escape(p['benchmark'])} under {escape(p['framework'])} ({escape(p['precision'])}, batch "
            f"{escape(num(p['batch_size']))}) on {escape(p['device'])}{escape(busy)}. Roofs: peak "
            f"{escape(', '.join(f'{k} {num(v)} TFLOP/s' for k, v in p['peaks'].items()) or 'unknown')} "
            f"({escape(p['peak_source'])}); memory {escape(num(p['bandwidth_gbs']))} GB/s "
            f"({escape(p['bandwidth_source'])})."
            f"</p><p>Step {escape(num((c['profiled_step_s'] or 0) * 1e3))} ms profiled, "
            f"{escape(num((c['plain_step_s'] or 0) * 1e3))} ms without the profiler (overhead "
            f"{escape(pct(c['profiler_overhead']))}); the operators cover {escape(pct(c['coverage']))} of it; their "
            f"FLOPs / the harness's counter: {escape(_ratio(c['flops_ratio']))}. Phases per step: "
            + escape(", ".join(f"{k.replace('_', ' ')} {num((v or 0) * 1e3)} ms" for k, v in ph.items()))
            + ". Operators' time by bound: " + escape(", ".join(f"{k} {pct(v)}" for k, v in b.items())) + ".</p>")


def profile_section(p: dict, prefix: str, top: int = 20) -> str:
    """The profile's summary, roofline and top operators (an HTML fragment)."""
    svg = roofline(p, prefix)
    shown = [o for o in p["operators"] if o["flops"]]
    figure = (f'<figure class="plot wide" data-kind="roofline" role="img" aria-label="roofline">{svg}<figcaption>'
              f"Roofline: each operator with FLOPs ({len(shown)} of {len(p['operators'])}) at its arithmetic "
              "intensity and achieved rate, its area its share of the time, coloured by its bound; solid: the "
              "compute roof of each dtype; dashed: the memory roof; black diamond: the whole step."
              "</figcaption></figure>") if svg else "<p>No roofline: no operator with FLOPs, or no peak known.</p>"
    rows = [_operator_row(o) for o in p["operators"][:top]]
    columns = OPERATOR_COLUMNS
    if p["device_type"] not in ("", "cpu") and any(o["kernels"] for o in p["operators"]):
        columns = [*OPERATOR_COLUMNS, "kernels (most launched)"]   # the device's own names for the work
        rows = [r + ["; ".join(o["kernels"])] for r, o in zip(rows, p["operators"])]
    caption = (f"The {len(rows)} operators that take the most time per step, of {len(p['operators'])} "
               "(docs/profile.md explains each column).")
    return _summary(p) + figure + _table(columns, rows, caption)


def render_page(value: dict) -> str:
    """``profile.html``: one profile as a page of its own (self-contained, no script, no request)."""
    from trainmark.report.page import CSP, STYLE

    p = parse_profile(value)
    if p is None:
        raise ValueError("not a trainmark profile")
    title = f"trainmark profile: {p['benchmark']} ({p['framework']})"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
            f'<section id="profile">{profile_section(p, "p-", top=40)}</section></body></html>\n')


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"
