"""Sweep results (``trainmark sweep``'s ``sweep.json``) in the report: throughput, TFLOPS and energy per
sample against the batch size, one line per precision. The format (its id and the point's fields) is
trainmark.format.artifacts', the one the harness writes.

A sweep is not part of a result folder, so the user names its file (``trainmark report --sweep
FILE``). It is read as data only: bounded, JSON, ``format`` checked, every number checked before it
is drawn.
"""
from __future__ import annotations

import math
from pathlib import Path

from trainmark.errors import UserError
from trainmark.files import read_json_report
from trainmark.format.artifacts import SWEEP_FORMAT

MAX_BYTES = 16 * 1024 * 1024
SERIES = (("samples_per_s", "samples / s"), ("tflops", "achieved TFLOP/s"), ("j_per_sample", "J / sample"))


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def load_sweep(path: Path) -> dict:
    """The sweep's measured points, or a one-line UserError naming the file."""
    path = Path(path)
    data, _ = read_json_report(path, "--sweep", MAX_BYTES)
    if not isinstance(data, dict) or data.get("format") != SWEEP_FORMAT or not isinstance(data.get("points"), list):
        raise UserError(f"--sweep {path}: not a sweep result (expected format {SWEEP_FORMAT!r} with 'points'; "
                        "write it with `trainmark sweep`)")
    points = []
    for p in data["points"]:
        if isinstance(p, dict) and p.get("status") == "ok" and type(p.get("batch_size")) is int:
            points.append({"precision": str(p.get("precision_used") or p.get("precision") or "?")[:40],
                           "batch_size": p["batch_size"], **{k: _num(p.get(k)) for k, _ in SERIES}})
    return {"file": str(path), "benchmark": str(data.get("benchmark") or "?")[:100], "points": points}


def sweep_svgs(sweep: dict, prefix: str) -> list[tuple[str, str]]:
    """(kind, svg) per measured quantity that has at least one point; ``prefix`` starts every id."""
    from trainmark.report.svg import Series, line_chart

    out = []
    precisions = sorted({p["precision"] for p in sweep["points"]})
    for key, label in SERIES:
        lines = {pr: sorted((p["batch_size"], p[key]) for p in sweep["points"]
                            if p["precision"] == pr and p[key] is not None) for pr in precisions}
        series = [Series(pr, f"data-sweep-{key}-{i}", [(float(b), v) for b, v in s])
                  for i, (pr, s) in enumerate(((pr, s) for pr, s in lines.items() if s), start=1)]
        if series:
            out.append((f"sweep-{key}", line_chart(f"{prefix}{key}-", series, "batch size", label,
                                                   f"{label} against the batch size", log2_x=True)))
    return out
