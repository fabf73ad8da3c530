"""``trainmark table FOLDER...``: results in the shape MLPerf publishes them.

One row per system (division, availability, submitter, system, nodes, processor, accelerator,
software), one column per benchmark holding its score, plus the mean training energy where any
system measured it. trainmark scores are seconds of training without evaluation (the olympic
mean); MLPerf scores are minutes (run_stop - run_start, olympic mean), as MLPerf's tables print
them: the unit is in the column name. Written as CSV, Markdown or JSON.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from trainmark.format.numbers import display, machine, round_floats

SCHEMA = "trainmark-table/1"
FORMULA = ("=", "+", "-", "@", "\t", "\r")
SYSTEM_COLUMNS = ["division", "availability", "submitter", "system", "nodes", "processor", "processors per node",
                  "accelerator", "accelerators per node", "software"]


def _field(desc: dict, key: str) -> Any:
    value = desc.get(key)
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _score(result: dict) -> tuple[str, float | None, str]:
    """(unit, score, why none)."""
    s = result.get("score") or {}
    if result["format"] == "mlperf":
        return "min", s.get("score_minutes"), s.get("score_reason") or ""
    return "s", s.get("score_train_time_s"), s.get("score_reason") or ""


def build_table(reports: list[tuple[dict, dict[str, dict]]]) -> dict[str, Any]:
    """``reports``: (checker report as dict, its system descriptions) per folder."""
    from trainmark.report.collect import find_system

    rows: dict[tuple, dict[str, Any]] = {}
    columns: dict[str, str] = {}                 # benchmark -> unit
    energy: set[str] = set()
    for report, systems in reports:
        for b in report["benchmarks"]:
            desc = find_system(systems, b)
            key = (report["path"], b["division"], b["submitter"], b["system"])
            row = rows.setdefault(key, {
                "division": b["division"], "availability": _field(desc, "status"), "submitter": b["submitter"],
                "system": b["system"], "nodes": _field(desc, "number_of_nodes"),
                "processor": _field(desc, "host_processor_model_name"),
                "processors per node": _field(desc, "host_processors_per_node"),
                "accelerator": _field(desc, "accelerator_model_name"),
                "accelerators per node": _field(desc, "accelerators_per_node"),
                "software": _field(desc, "framework"), "scores": {}, "energy_j": {}, "reasons": {}, "passed": {}})
            unit, score, why = _score(b)
            columns.setdefault(b["benchmark"], unit)
            row["scores"][b["benchmark"]] = score
            row["passed"][b["benchmark"]] = b["errors"] == 0
            if score is None:
                row["reasons"][b["benchmark"]] = why or "no score"
            e = (b.get("score") or {}).get("mean_train_energy_j")
            row["energy_j"][b["benchmark"]] = e
            if e is not None:
                energy.add(b["benchmark"])
    benchmarks = sorted(columns)
    return {"schema": SCHEMA, "benchmarks": [{"benchmark": n, "unit": columns[n], "energy": n in energy}
                                             for n in benchmarks],
            "rows": [dict(r) for r in sorted(rows.values(), key=lambda r: tuple(str(r[c]) for c in SYSTEM_COLUMNS))]}


def flat(table: dict, for_machines: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and rows as strings: '' for a benchmark a system did not run, '-' for no score.

    Scores for people (Markdown) keep 5 significant digits; ``for_machines`` (CSV) keeps 12, without
    binary noise (41.67, never 41.669999999999995: ``trainmark.format.numbers``).
    """
    def number(x: Any) -> str:
        return machine(x, unknown="-") if for_machines else display(x, significant=5)

    header = list(SYSTEM_COLUMNS)
    for b in table["benchmarks"]:
        header.append(f"{b['benchmark']} ({b['unit']})")
        if b["energy"]:
            header.append(f"{b['benchmark']} energy (J)")
    rows = []
    for r in table["rows"]:
        cells = ["" if r[c] is None else str(r[c]) for c in SYSTEM_COLUMNS]
        for b in table["benchmarks"]:
            name = b["benchmark"]
            cells.append("" if name not in r["scores"] else number(r["scores"][name]))
            if b["energy"]:
                cells.append("" if name not in r["energy_j"] else number(r["energy_j"][name]))
        rows.append(cells)
    return header, rows


def to_csv(table: dict) -> str:
    header, rows = flat(table, for_machines=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:  # a text cell a spreadsheet would run as a formula is quoted; '-' (no score) is empty
        w.writerow([("'" + c if i < len(SYSTEM_COLUMNS) and c[:1] in FORMULA else c) if c != "-" else ""
                    for i, c in enumerate(row)])
    return buf.getvalue()


def to_markdown(table: dict) -> str:
    from trainmark.report.markdown import table as md_table

    header, rows = flat(table)
    return md_table(header, rows)


def to_json(table: dict) -> str:
    return json.dumps(round_floats(table), indent=2, allow_nan=False) + "\n"  # 41.67, not 41.669999999999995
