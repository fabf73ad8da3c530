"""From a framework's operator records to the profile's table: time, rates, roof, fraction of roof, bound;
the step's phases; the consistency figures. No framework is imported here.

An operator record (harness/frameworks/*_profile.py) holds, per training step: ``name``, ``shapes``,
``phase``, ``calls``, ``host_s``, ``device_s``, ``flops``, ``bytes_read``, ``bytes_written``, ``dtype``,
``kernels``. Its time is the device's (``device_s``) on an accelerator, the host's on the CPU.

Roof (the roofline model): min(peak FLOP/s of its dtype, intensity x memory bandwidth). An operator with
bytes but no FLOPs is held to the bandwidth alone. Bound:
- ``overhead``: a call too short for its work to matter (under ``OVERHEAD_CALL_S`` on the CPU), or, on an
  accelerator, a call whose host time exceeds its device time (the launch, not the kernel, sets the pace);
- ``compute``: intensity at or above the ridge (peak / bandwidth): the compute roof is the lower one;
- ``memory``: below the ridge, or no FLOPs at all.
"""
from __future__ import annotations

from dataclasses import dataclass

OVERHEAD_CALL_S = 20e-6           # CPU: a call shorter than this is dispatch and bookkeeping, not work
PHASES = ("forward", "backward", "optimizer", "data", "communication")
COVERAGE_TOLERANCE = (0.80, 1.05)  # operators' time / the steps' busy time: the consistency test's bounds


@dataclass(frozen=True)
class Roofs:
    """The two roofs: peak FLOP/s per dtype and the memory bandwidth, and where each comes from."""

    peak_flops: dict[str, float]       # dtype -> FLOP/s
    bandwidth: float | None            # bytes/s
    peak_source: str
    bandwidth_source: str

    def peak(self, dtype: str | None) -> float | None:
        return self.peak_flops.get(dtype or "fp32") or self.peak_flops.get("fp32")

    def ridge(self, dtype: str | None) -> float | None:
        peak = self.peak(dtype)
        return peak / self.bandwidth if peak and self.bandwidth else None

    def as_dict(self) -> dict:
        return {"peak_tflops": {k: v / 1e12 for k, v in self.peak_flops.items()},
                "bandwidth_gbs": self.bandwidth / 1e9 if self.bandwidth else None,
                "peak_source": self.peak_source, "bandwidth_source": self.bandwidth_source}


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def operator_time(row: dict, accelerator: bool) -> float:
    """Seconds per step: the device's on an accelerator (its kernels), the host's on the CPU."""
    return row["device_s"] if accelerator and row["device_s"] > 0 else row["host_s"]


def finish(row: dict, roofs: Roofs, accelerator: bool) -> dict:
    """One operator's derived columns, added in place and returned."""
    t = operator_time(row, accelerator)
    moved = row["bytes_read"] + row["bytes_written"] if row.get("bytes_read") is not None else None
    flops = row.get("flops") or 0
    row["time_s"] = t
    row["intensity"] = _ratio(flops, moved) if flops else None
    row["achieved_flops"] = _ratio(flops, t) if flops else None
    row["achieved_bandwidth"] = _ratio(moved, t) if moved else None
    peak = roofs.peak(row.get("dtype"))
    if flops and row["intensity"] is not None and peak and roofs.bandwidth:
        row["roof"] = min(peak, row["intensity"] * roofs.bandwidth)
        row["roof_kind"] = "FLOP/s"
        row["fraction_of_roof"] = _ratio(row["achieved_flops"], row["roof"])
    elif moved and roofs.bandwidth:
        row["roof"], row["roof_kind"] = roofs.bandwidth, "B/s"
        row["fraction_of_roof"] = _ratio(row["achieved_bandwidth"], roofs.bandwidth)
    else:
        row["roof"] = row["roof_kind"] = row["fraction_of_roof"] = None
    row["bound"] = bound(row, roofs, accelerator)
    return row


def bound(row: dict, roofs: Roofs, accelerator: bool) -> str:
    """compute, memory or overhead (the module's docstring says how)."""
    per_call = row["time_s"] / row["calls"] if row["calls"] else 0.0
    launch_bound = accelerator and row["host_s"] > row["device_s"]
    if launch_bound or (not accelerator and per_call < OVERHEAD_CALL_S) or (
            not row.get("flops") and not row.get("bytes_read") and not row.get("bytes_written")):
        return "overhead"
    ridge = roofs.ridge(row.get("dtype"))
    if row.get("intensity") is not None and ridge is not None and row["intensity"] >= ridge:
        return "compute"
    return "memory"


def phases(rows: list[dict], step_s: float, data_wait_s: float) -> dict[str, float]:
    """Seconds per step: forward, backward, optimizer, communication (the operators'), data wait (the
    batch's fetch), host overhead (the rest of the step's wall time: Python, the framework's dispatch,
    idle device)."""
    out = {p: 0.0 for p in ("forward", "backward", "optimizer", "communication")}
    for row in rows:
        if row["phase"] in out:
            out[row["phase"]] += row["time_s"]
    out["data_wait"] = data_wait_s
    out["host_overhead"] = max(0.0, step_s - sum(out.values()))
    return out


def bound_shares(rows: list[dict]) -> dict[str, float]:
    """Share of the operators' time per bound."""
    total = sum(r["time_s"] for r in rows) or 1.0
    return {b: sum(r["time_s"] for r in rows if r["bound"] == b) / total for b in ("compute", "memory", "overhead")}


def consistency(rows: list[dict], trace: dict, counter_flops: int | None) -> dict:
    """The figures the consistency tests hold: the operators' time against the steps' busy time (the
    profiled wall time less the data wait), their FLOPs against the harness's counter, the profiler's
    own cost (profiled step time over plain step time, minus one)."""
    busy = trace["profiled_step_s"] - trace["data_wait_s"]
    op_flops = sum(r.get("flops") or 0 for r in rows)
    return {"operator_time_s": sum(r["time_s"] for r in rows), "busy_step_s": busy,
            "coverage": _ratio(sum(r["time_s"] for r in rows), busy),
            "coverage_tolerance": list(COVERAGE_TOLERANCE),
            "operator_flops": op_flops, "counter_flops": counter_flops,
            "flops_ratio": _ratio(op_flops, counter_flops) if counter_flops else None,
            "plain_step_s": trace["plain_step_s"], "profiled_step_s": trace["profiled_step_s"],
            "profiler_overhead": _ratio(trace["profiled_step_s"], trace["plain_step_s"]) - 1
            if trace["plain_step_s"] else None,
            "calls_matched": trace["join"]["calls_matched"], "calls": trace["join"]["calls"]}


def step_point(rows: list[dict], step_s: float) -> dict:
    """The whole step as one point of the roofline: its FLOPs and bytes over its wall time."""
    flops = sum(r.get("flops") or 0 for r in rows)
    moved = sum((r.get("bytes_read") or 0) + (r.get("bytes_written") or 0) for r in rows)
    return {"flops": flops, "bytes": moved, "intensity": _ratio(flops, moved),
            "achieved_flops": _ratio(flops, step_s), "time_s": step_s}
