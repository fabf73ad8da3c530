"""A profile as people read it: the header (device, roofs, consistency), the step's phases and the top
operators; and the workload characterization over every benchmark (``trainmark profile --all``)."""
from __future__ import annotations


def _si(x: float | None, unit: str = "") -> str:
    """1.23 G, 45.6 M, ... (3 significant digits), '-' for none."""
    if x is None:
        return "-"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def shapes_text(shapes: list) -> str:
    text = " ".join("x".join(str(d) for d in s) for s in shapes[:3])
    return text + (" ..." if len(shapes) > 3 else "")


def header(p: dict) -> list[str]:
    d, c, r = p["device"], p["consistency"], p["roofs"]
    s = p["settings"]
    load = p.get("other_cpu_load_pct")
    lines = [f"profile {p['benchmark']} ({p['framework']} {p['framework_version']}, {p['precision_used']}, batch "
             f"{s['batch_size']}, {s['data']} data): {s['steps']} profiled steps after {s['warmup_steps']} warm-up",
             f"device: {d['name']} ({d['type']}, {d['threads']} threads; CPU {d['cpu']})"
             + (f"; other processes used {load:.0f} % of the CPUs: contended"
                if load is not None and load > 10 else ""),
             f"roofs: peak {', '.join(f'{k} {v:.4g} TFLOP/s' for k, v in r['peak_tflops'].items()) or 'unknown'} "
             f"({r['peak_source'][:90]}); memory {_si((r['bandwidth_gbs'] or 0) * 1e9, 'B/s')} "
             f"({r['bandwidth_source'][:70]})",
             f"step: {c['profiled_step_s'] * 1e3:.1f} ms profiled, {c['plain_step_s'] * 1e3:.1f} ms plain (profiler "
             f"overhead {_pct(c['profiler_overhead'])}); operators cover {_pct(c['coverage'])} of the busy step "
             f"(tolerance {c['coverage_tolerance'][0]:.2f}-{c['coverage_tolerance'][1]:.2f})",
             f"FLOPs: operators {_si(c['operator_flops'])} / harness counter {_si(c['counter_flops'])} = "
             + ("-" if c["flops_ratio"] is None else f"{c['flops_ratio']:.4f}")
             + f"; calls joined to shapes {c['calls_matched']:.0f} of {c['calls']:.0f} per step",
             "phases: " + ", ".join(f"{k.replace('_', ' ')} {v * 1e3:.1f} ms" for k, v in p["phases"].items()),
             "time by bound: " + ", ".join(f"{k} {_pct(v)}" for k, v in p["bound_shares"].items())]
    return lines


COLUMNS = f"{'operator':<34} {'shapes':<26} {'phase':<9} {'calls':>5} {'ms':>8} {'FLOPs':>8} {'bytes':>8} " \
          f"{'FLOP/B':>7} {'FLOP/s':>9} {'B/s':>9} {'roof':>9} {'%roof':>7} bound"


def operator_line(o: dict) -> str:
    moved = (o["bytes_read"] or 0) + (o["bytes_written"] or 0)
    intensity = "-" if o["intensity"] is None else f"{o['intensity']:.3g}"
    roof = _si(o["roof"], "F" if o["roof_kind"] == "FLOP/s" else "B") if o["roof"] else "-"
    return (f"{o['name'][:34]:<34} {shapes_text(o['shapes'])[:26]:<26} {o['phase'][:9]:<9} {o['calls']:>5.0f} "
            f"{o['time_s'] * 1e3:>8.3f} {_si(o['flops'] or None):>8} {_si(moved or None, 'B'):>8} {intensity:>7} "
            f"{_si(o['achieved_flops']):>9} {_si(o['achieved_bandwidth']):>9} {roof:>9} "
            f"{_pct(o['fraction_of_roof']):>7} {o['bound']}")


def format_profile(p: dict, top: int = 25) -> str:
    ops = p["operators"]
    lines = header(p) + ["", f"top {min(top, len(ops))} of {len(ops)} operators by time per step:", COLUMNS]
    accelerator = p["device"]["type"] != "cpu"
    for o in ops[:top]:
        lines.append(operator_line(o))
        if accelerator and o.get("kernels"):   # the device's kernels this operator launched, most frequent first
            lines.append(f"    kernels: {'; '.join(k[:80] for k in o['kernels'][:3])}")
    return "\n".join(lines)


CHAR_COLUMNS = ("benchmark", "framework", "parameters", "FLOPs/sample", "bytes/sample", "FLOP/B", "ms/step",
                "compute", "memory", "overhead", "input wait")


def characterization_row(p: dict) -> dict:
    """One benchmark's line of the workload characterization, from its profile."""
    batch = p["settings"]["batch_size"]
    step = p["step"]
    return {"benchmark": p["benchmark"], "framework": p["framework"], "parameters": p["parameters"],
            "flops_per_sample": step["flops"] / batch, "bytes_per_sample": step["bytes"] / batch,
            "intensity": step["intensity"], "step_s": step["time_s"], "bound_shares": p["bound_shares"],
            "data_wait_share": p["phases"]["data_wait"] / step["time_s"] if step["time_s"] else None,
            "batch_size": batch, "operators": len(p["operators"])}


def format_characterization(rows: list[dict], device: str, skipped: list[tuple[str, str]]) -> str:
    head = (f"{'benchmark':<18} {'framework':<10} {'params':>9} {'FLOPs/sample':>12} {'bytes/sample':>12} "
            f"{'FLOP/B':>7} {'ms/step':>9} {'compute':>8} {'memory':>8} {'overhead':>8} {'input':>6}")
    lines = [f"workload characterization on {device} (one profile per benchmark; time share by bound)", head]
    for r in rows:
        b = r["bound_shares"]
        lines.append(f"{r['benchmark']:<18} {r['framework']:<10} {_si(r['parameters']):>9} "
                     f"{_si(r['flops_per_sample']):>12} {_si(r['bytes_per_sample'], 'B'):>12} "
                     f"{'-' if r['intensity'] is None else format(r['intensity'], '.3g'):>7} "
                     f"{r['step_s'] * 1e3:>9.1f} {_pct(b['compute']):>8} {_pct(b['memory']):>8} "
                     f"{_pct(b['overhead']):>8} {_pct(r['data_wait_share']):>6}")
    lines += [f"{name}: not profiled ({why})" for name, why in skipped]
    return "\n".join(lines)
