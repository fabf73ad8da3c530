"""One profile: a benchmark's trainer built as ``trainmark run`` builds it, a few steps after warm-up under
the framework's profiler, the roofs, and the table (schema ``FORMAT``). Nothing here is a timed step of a
trial: the trainer is a fresh one, its weights are thrown away.
"""
from __future__ import annotations

import datetime as _dt
import os
from dataclasses import asdict, dataclass
from importlib.metadata import version

from trainmark.harness.frameworks import backend as _framework
from trainmark.harness.measure import peaks as _peaks
from trainmark.harness.measure.other_load import OtherLoad
from trainmark.harness.measure.system import cpu_model
from trainmark.harness.profile import analysis
from trainmark.harness.throughput import ops as _ops
from trainmark.harness.throughput.sweep import STEPS_PER_EPOCH_FOR_SCHEDULES, batch_source

FORMAT = "trainmark-profile/1"
BYTES_METHOD = {
    "pytorch": "per call, from the tensors themselves (a census step under a dispatch mode): bytes read = every "
               "tensor input's size, bytes written = every tensor output's size (shape x dtype size; a broadcast "
               "input counts its storage; a view moves nothing); caches are not modelled",
    "tensorflow": "per op of the traced step's graph: bytes read = every input's shape x dtype size, bytes "
                  "written = every output's (resource handles and variables read by ReadVariableOp count their "
                  "value); caches are not modelled",
}
FLOPS_METHOD = {
    "pytorch": "the harness's FLOP counter's formulas (torch.utils.flop_counter, attention included) applied to "
               "each call: 2 per multiply-add of matmuls, convolutions and attention, forward and backward; "
               "elementwise work counts 0. torch.profiler's with_flops (forward matmuls and convolutions only) "
               "is kept as profiler_flops",
    "tensorflow": "the harness's TensorFlow counter (tensorflow_backend._op_flops) applied to each executed op of "
                  "the graph: convolutions and matmuls (einsums included), forward and gradients",
}


@dataclass
class ProfileSettings:
    framework: str = "pytorch"
    precision: str = "fp32"
    batch_size: int | None = None       # None: the rules' global batch size
    steps: int = 5
    warmup_steps: int = 3
    data: str = "synthetic"             # synthetic | real


def _tracer(framework: str):
    if framework == "tensorflow":
        from trainmark.harness.frameworks import tensorflow_profile as tracer
    else:
        from trainmark.harness.frameworks import pytorch_profile as tracer
    return tracer


def roofs(device, framework: str, ceilings: dict | None) -> analysis.Roofs:
    """The roofs: ``trainmark ops`` ceilings when given; else the sourced datasheet (or derived CPU) peak and
    the framework's copy bandwidth measured here (``trainmark ops``' memory case)."""
    if ceilings:
        flops = {k: v * 1e12 for k, v in ceilings.items() if k != "memory_gbs" and isinstance(v, (int, float))}
        bw = ceilings.get("memory_gbs")
        return analysis.Roofs(flops, bw * 1e9 if bw else None, "trainmark ops ceilings (--ceilings)",
                              "trainmark ops ceilings (--ceilings)")
    peak = _peaks.device_peak(device)
    measured = _ops.run_ops(device, ops=("memory",), numpy_backend=False, repeats=3)  # the memory, not a framework
    bw = (measured["summary"].get("memory") or {}).get("ceiling_gbs")
    return analysis.Roofs({k: v * 1e12 for k, v in (peak.tflops if peak else {}).items()}, bw * 1e9 if bw else None,
                          f"{peak.kind} peak: {peak.source}" if peak else "no peak known for this device",
                          "copy bandwidth measured here (trainmark ops memory case, "
                          f"{measured['bandwidth'][0]['description'] if measured['bandwidth'] else 'none'})")


def profile_benchmark(rules, ref, device, settings: ProfileSettings, *, data=None,
                      ceilings: dict | None = None, the_roofs: analysis.Roofs | None = None) -> dict:
    """Profile ``rules``' benchmark (its reference ``ref``) on ``device``; ``data``: the loaded data set for
    ``--data real`` (None: one synthetic batch, no input pipeline); ``the_roofs``: roofs measured already."""
    hp = rules.defaults()
    batch = settings.batch_size or int(hp["global_batch_size"])
    hp = {**hp, "global_batch_size": batch}
    trainer = _framework.backend(settings.framework, device, settings.precision).trainer(
        ref, ref.build_model, hp, None, seed=0, count_flops=True, schedule_steps=STEPS_PER_EPOCH_FOR_SCHEDULES)
    next_batch = batch_source(ref, device, batch, data, prepare=trainer.prepare)
    the_roofs = the_roofs or roofs(device, settings.framework, ceilings)
    load = OtherLoad()
    trace = _tracer(settings.framework).trace(trainer, next_batch, steps=settings.steps,
                                              warmup=settings.warmup_steps, device=device)
    accelerator = trace["device_type"] != "cpu"
    rows = sorted((analysis.finish(r, the_roofs, accelerator) for r in trace["operators"]),
                  key=lambda r: r["time_s"], reverse=True)
    step_s = trace["profiled_step_s"]
    return {
        "format": FORMAT,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "benchmark": rules.name, "rules_version": rules.version,
        "framework": settings.framework,
        "framework_version": version("torch" if settings.framework == "pytorch" else settings.framework),
        "device": {"type": trace["device_type"], "name": trace.get("device_name") or cpu_model(),
                   "cpu": cpu_model(), "threads": trace.get("threads") or os.cpu_count()},
        "settings": {**asdict(settings), "batch_size": batch},
        "precision_used": trainer.precision_used,
        "parameters": trainer.structure.get("parameter_count"),
        "roofs": the_roofs.as_dict(),
        "bytes_method": BYTES_METHOD[settings.framework], "flops_method": FLOPS_METHOD[settings.framework],
        "phases": analysis.phases(rows, step_s, trace["data_wait_s"]),
        "step": analysis.step_point(rows, step_s),
        "bound_shares": analysis.bound_shares(rows),
        "consistency": analysis.consistency(rows, trace, trainer.flops_per_step),
        "other_cpu_load_pct": load.percent(),
        "operators": [_public(r) for r in rows],
    }


OPERATOR_FIELDS = ("name", "shapes", "phase", "dtype", "calls", "time_s", "host_s", "device_s", "flops",
                   "bytes_read", "bytes_written", "intensity", "achieved_flops", "achieved_bandwidth", "roof",
                   "roof_kind", "fraction_of_roof", "bound", "kernels", "nodes", "profiler_flops")


def _public(row: dict) -> dict:
    """An operator's columns in a fixed order (JSON numbers only)."""
    return {k: row.get(k) for k in OPERATOR_FIELDS}
