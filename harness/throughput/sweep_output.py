"""Writes a sweep result: CSV (one row per point), JSON (everything), PNG plots, a text summary."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from trainmark.files import write_atomic
from trainmark.format.artifacts import SWEEP_CSV, SWEEP_ENERGY_PNG, SWEEP_JSON, SWEEP_THROUGHPUT_PNG
from trainmark.format.artifacts import SWEEP_POINT_FIELDS as POINT_FIELDS

__all__ = ["write_outputs", "write_csv", "write_json", "plot", "format_summary"]


def write_csv(result: dict, path: Path) -> Path:
    def write(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=POINT_FIELDS, lineterminator="\n")
            w.writeheader()
            for p in result["points"]:
                w.writerow({k: ("" if p.get(k) is None else p[k]) for k in POINT_FIELDS})
    write_atomic(path, write)
    return path


def write_json(result: dict, path: Path) -> Path:
    def clean(x):  # JSON has no NaN/inf
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(clean(result), indent=2) + "\n", encoding="utf-8"))
    return path


def plot(result: dict, out_dir: Path) -> dict:
    """throughput.png and, when any energy was measured, energy.png; one line per precision."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    made: dict = {}
    ok = [p for p in result["points"] if p["status"] == "ok"]
    precisions = sorted({p["precision"] for p in ok})
    for key, ylabel, fname in (("samples_per_s", "samples / s", SWEEP_THROUGHPUT_PNG),
                               ("j_per_sample", "J / sample", SWEEP_ENERGY_PNG)):
        series = {pr: sorted((p["batch_size"], p[key]) for p in ok if p["precision"] == pr and p[key] is not None)
                  for pr in precisions}
        series = {pr: s for pr, s in series.items() if s}
        if not series:
            made[fname] = None
            made[fname + "_reason"] = ("no point measured energy: " + (result["energy"].get("reason") or "")
                                       if key == "j_per_sample" else "no point ran")
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for pr, s in series.items():
            label = next((p["precision_used"] for p in ok if p["precision"] == pr), pr)
            ax.plot([b for b, _ in s], [v for _, v in s], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{result['benchmark']} on {result['device']['name']}")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out_dir / fname
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made[fname] = str(path)
    return made


def write_outputs(result: dict, out_dir: Path, plots: bool = True) -> dict:
    """sweep.csv, sweep.json and the plots in ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": str(write_csv(result, out_dir / SWEEP_CSV))}
    if plots:
        result["plots"] = plot(result, out_dir)
    paths["json"] = str(write_json(result, out_dir / SWEEP_JSON))
    return {**paths, **{k: v for k, v in result.get("plots", {}).items() if not k.endswith("_reason")}}


def _f(x, spec):
    return "-" if x is None else format(x, spec)


def format_summary(result: dict) -> str:
    lines = [f"{'precision':<9} {'batch':>6} {'status':<7} {'samples/s':>10} {'TFLOP/s':>9} {'util%':>6} "
             f"{'J/sample':>9} {'peak MiB':>9}"]
    for p in result["points"]:
        util = None if p["utilization"] is None else 100 * p["utilization"]
        mem = None if p["peak_memory_bytes"] is None else p["peak_memory_bytes"] / 2**20
        lines.append(f"{p['precision_used'] or p['precision']:<9} {p['batch_size']:>6} {p['status']:<7} "
                     f"{_f(p['samples_per_s'], '.4g'):>10} {_f(p['tflops'], '.4g'):>9} {_f(util, '.1f'):>6} "
                     f"{_f(p['j_per_sample'], '.4g'):>9} {_f(mem, '.0f'):>9}")
    for prec, s in result["oom_search"].items():
        cap = " (the search limit: may fit more)" if s["capped_at_limit"] else ""
        lines.append(f"largest batch that fits ({prec}): {s['max_batch_size']}{cap}, {len(s['probes'])} probes")
    for key, b in result["best"].items():
        t, e = b["throughput"], b["energy"]
        lines.append(f"best {key}: throughput at batch {t['batch_size'] if t else '-'}"
                     + (f" ({t['samples_per_s']:.4g} samples/s)" if t else "")
                     + (f"; least energy at batch {e['batch_size']} ({e['j_per_sample']:.4g} J/sample)" if e
                        else f"; energy: {b.get('energy_reason', 'none')}"))
    return "\n".join(lines)
