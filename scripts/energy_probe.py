"""What the energy meters and the telemetry sampler see on this machine, under a known GPU load.

    python3 scripts/energy_probe.py --seconds 5 --out OUT_DIR [--md docs/gpu-energy.md]

Opens the meters `trainmark run` would (every GPU of the node, RAPL, IPMI DCMI), runs bf16 matmuls
on GPU 0 for ``--seconds`` with the sampler at 10 Hz, and writes per domain the joules and mean watts
over that window, NVML's own power reading beside the counter-derived power (a cross-check of the
counter), the telemetry summary (temperatures, clocks, throttle reasons) and the sampler's gaps.
Markdown goes to ``--md`` (evidence for docs/), the raw telemetry CSV and a JSON record to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path


def main() -> None:
    import torch

    from trainmark.harness.frameworks.pytorch_runtime import device_ids
    from trainmark.harness.measure import energy, telemetry

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--md", type=Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cuda = torch.cuda.is_available()
    if cuda:
        meter = energy.open_meter("cuda:0", device_ids=device_ids("cuda:0", list(range(torch.cuda.device_count()))))
    else:
        meter = energy.open_meter("cpu")
    meter.start()
    clock = time.perf_counter
    sampler = telemetry.Sampler(args.out / "telemetry.csv", telemetry.sources_for(meter, clock=clock), 0.1,
                                clock=clock)
    nvml_power = []
    nvml = next((m for m in getattr(meter, "meters", []) if isinstance(m, energy.NvmlMeter)), None)
    sampler.start()
    t0, r0 = clock(), meter.readings()
    if cuda:
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        while clock() - t0 < args.seconds:
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()
            if nvml is not None:
                nvml_power.append(nvml.nvml.nvmlDeviceGetPowerUsage(nvml.handles[0]) / 1000)
    else:
        time.sleep(args.seconds)
    t1, r1 = clock(), meter.readings()
    summary = sampler.summarize(t0, t1)
    record = sampler.stop()
    meter.stop()
    seconds = t1 - t0
    domains = {}
    for name, d in (meter.describe() if hasattr(meter, "describe") else {}).items():
        a0, a1 = r0.domains.get(name), r1.domains.get(name)
        joules = None if a0 is None or a1 is None else a1 - a0
        domains[name] = {**d, "joules": joules, "mean_w": None if joules is None else joules / seconds}
    result = {"utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "seconds": seconds,
              "device": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
              "scope": getattr(meter, "scope", None), "method": meter.method, "reason": meter.reason,
              "total_j": None if r0.total is None or r1.total is None else r1.total - r0.total,
              "domains": domains, "nvml_power_w_median": statistics.median(nvml_power) if nvml_power else None,
              "telemetry": {"summary": summary, "record": record}}
    (args.out / "energy_probe.json").write_text(json.dumps(result, indent=1) + "\n")
    md = [f"# Energy and telemetry on a real machine ({result['utc']})", "",
          f"Written by `scripts/energy_probe.py` (run by `scripts/gpu_check.sh`): {result['device']}, torch "
          f"{result['torch']}, {seconds:.1f} s of bf16 8192x8192 matmuls on GPU 0 with the sampler at 10 Hz.", "",
          f"Total: {_j(result['total_j'])} over scope `{result['scope']}` ({result['method']})"
          + (f"; reason: {result['reason']}" if result["reason"] else "") + ".", "",
          "| domain | kind | method | resolution | joules | mean W | reason |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    md += [f"| {n} | {d['kind']} | {d['method']} | {d['resolution']} | {_j(d['joules'])} | "
           f"{_j(d['mean_w'])} | {d['reason'] or ''} |" for n, d in domains.items()]
    if result["nvml_power_w_median"] is not None:
        md += ["", f"NVML's own power reading (median during the load, GPU 0): {result['nvml_power_w_median']:.1f} W, "
               f"beside {_j(domains.get('gpu0', {}).get('mean_w'))} W from the energy counter."]
    md += ["", f"Telemetry: {record['samples']} samples, {len(record['gaps'])} gap(s) over 2 s, columns "
           f"{', '.join(record['columns'])}; errors: {record['errors'] or 'none'}.", "",
           "```json", json.dumps({"mean": summary["mean"], "max": summary["max"], "throttle": summary["throttle"]},
                                 indent=1), "```"]
    text = "\n".join(md) + "\n"
    print(text)
    if args.md:
        args.md.write_text(text)


def _j(x) -> str:
    return "null" if x is None else f"{x:.1f}"


if __name__ == "__main__":
    main()
