"""PyTorch's side of ``trainmark profile`` (harness/profile/): a few training steps under ``torch.profiler``
(shapes, FLOPs, the device's kernels) and one census step that records, per operator call, what the
profiler cannot: its output tensors and the FLOPs the harness's counter gives it.

Why a census step: ``torch.profiler`` records each call's input shapes and dtypes but not its outputs
(so bytes written are unknown) and ``with_flops`` counts forward matmuls and convolutions only (no
backward). The census runs one more step under a ``TorchDispatchMode`` that sees every aten call after
autograd with its real inputs and outputs: bytes read and written from the tensors themselves, FLOPs
from the formulas of ``torch.utils.flop_counter`` that harness/frameworks/pytorch_flops.py counts a step
with (attention included), so the operators' FLOPs add up to the harness's counter. It is joined to the
profiled calls by (operator name, input shapes).

An operator here is the outermost ``aten::`` call of a stack (``aten::conv2d``, not the
``aten::mkldnn_convolution`` it calls): its time includes the aten calls beneath it, so operators never
overlap and their times add up to the step's busy time.
"""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode

from trainmark.harness.frameworks import pytorch_flops

STEP_RANGE = "trainmark::step"
DATA_RANGE = "trainmark::data_wait"
BACKWARD_PREFIX = "autograd::engine::evaluate_function"
OPTIMIZER_PREFIX = "Optimizer."
COMMUNICATION_WORDS = ("nccl", "gloo", "all_reduce", "allreduce", "c10d", "broadcast_", "all_gather",
                       "reduce_scatter")
DTYPE_LABELS = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64",
                torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: "fp64"}


def _shape_key(name: str, shapes) -> tuple:
    """(name, the non-empty input shapes): how a profiled call and a census call are matched."""
    return name, tuple(tuple(s) for s in shapes if isinstance(s, (list, tuple)) and len(s) > 0
                       and all(isinstance(d, int) for d in s))


def _tensors(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _nbytes(t: torch.Tensor) -> int:
    """Bytes a tensor occupies: a broadcast (stride-0) view counts its storage, not its shape."""
    logical = t.numel() * t.element_size()
    try:
        return min(logical, t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):  # a tensor without storage
        return logical


def _arg_shapes(args, kwargs) -> list:
    return [list(a.shape) if isinstance(a, torch.Tensor) else [] for a in [*args, *kwargs.values()]]


class _Census(TorchDispatchMode):
    """Every aten call of one step: (name, input shapes) -> calls, FLOPs, bytes read and written, dtype."""

    def __init__(self):
        super().__init__()
        self.calls: dict[tuple, dict] = {}
        self.registry = {**flop_counter.flop_registry,
                         **{k: flop_counter.shape_wrapper(v) for k, v in pytorch_flops._custom_mapping().items()}}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        key = _shape_key(f"aten::{func._schema.name.split('::')[-1]}", _arg_shapes(args, kwargs))
        inputs = _tensors((args, kwargs))
        formula = self.registry.get(func._overloadpacket)
        flops = int(formula(*args, **kwargs, out_val=out)) if formula is not None else 0
        view = func.is_view
        read = 0 if view else sum(_nbytes(t) for t in inputs)
        written = 0 if view else sum(_nbytes(t) for t in _tensors(out))
        floats = [t.dtype for t in inputs + _tensors(out) if t.is_floating_point()]
        entry = self.calls.setdefault(key, {"calls": 0, "flops": 0, "read": 0, "written": 0,
                                            "dtype": DTYPE_LABELS.get(floats[0], str(floats[0])) if floats else None})
        entry["calls"] += 1
        entry["flops"] += flops
        entry["read"] += read
        entry["written"] += written
        return out


def census(step: Callable[[], None]) -> dict[tuple, dict]:
    """One step under the census: per (name, input shapes), the per-call FLOPs, bytes read and written."""
    mode = _Census()
    with mode:
        step()
    return {k: {"flops": v["flops"] / v["calls"], "read": v["read"] / v["calls"], "calls": v["calls"],
                "written": v["written"] / v["calls"], "dtype": v["dtype"]} for k, v in mode.calls.items()}


def _activities(device: torch.device) -> list:
    """The CPU, and the accelerator's activity when the step runs on one the profiler supports."""
    wanted = [ProfilerActivity.CPU]
    if device.type != "cpu":
        wanted += [a for a in torch.profiler.supported_activities() if a != ProfilerActivity.CPU]
    return wanted


def profiled(step: Callable[[], None], next_batch: Callable[[], Any], steps: int, device: torch.device,
             sync: Callable[[], None]) -> tuple[list, float, float]:
    """``steps`` steps under torch.profiler, each fetching its batch in a data-wait range;
    (the profiler's events, wall seconds of the profiled steps, seconds spent fetching batches)."""
    waited = 0.0
    with profile(activities=_activities(device), record_shapes=True, with_flops=True) as prof:
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            with record_function(STEP_RANGE):
                w0 = time.perf_counter()
                with record_function(DATA_RANGE):
                    batch = next_batch()
                waited += time.perf_counter() - w0
                step(batch)
            sync()
        wall = time.perf_counter() - t0
    return list(prof.events()), wall, waited


def _phase(event) -> str:
    """forward, backward, optimizer, communication or data: from the event's own name and its ancestors."""
    if any(w in event.name.lower() for w in COMMUNICATION_WORDS):
        return "communication"
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(BACKWARD_PREFIX):
            return "backward"
        if parent.name.startswith(OPTIMIZER_PREFIX):
            return "optimizer"
        if parent.name == DATA_RANGE:
            return "data"
        parent = parent.cpu_parent
    return "forward"


OPERATOR_PREFIXES = ("aten::", "c10d::")   # the framework's operators, and the collectives of several ranks


def _is_operator(event) -> bool:
    """An outermost operator call: an aten (or c10d) event whose ancestors hold none."""
    if not event.name.startswith(OPERATOR_PREFIXES):
        return False
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(OPERATOR_PREFIXES):
            return False
        parent = parent.cpu_parent
    return True


def _matched(event, table: dict[tuple, dict]) -> tuple[list[dict], bool]:
    """The census entries of an operator call: its own, else those of the calls beneath it (a composite
    such as ``aten::conv2d`` reaches the census as ``aten::convolution``)."""
    found = table.get(_shape_key(event.name, event.input_shapes))
    if found is not None:
        return [found], True
    entries: list[dict] = []
    for child in event.cpu_children:
        sub, ok = _matched(child, table)
        if ok:
            entries += sub
    return entries, bool(entries)


def _kernels(event) -> list[str]:
    names = [k.name for k in getattr(event, "kernels", [])]
    for child in event.cpu_children:
        names += _kernels(child)
    return names


def _dtype(event) -> str | None:
    for d in getattr(event, "input_dtypes", None) or []:
        if d in DTYPE_LABELS:
            return DTYPE_LABELS[d]
    return None


def operators(events: list, table: dict[tuple, dict], steps: int) -> tuple[list[dict], dict]:
    """The operators of the profiled steps aggregated by (name, input shapes), per step; and the census
    join's counts (calls matched and calls in all)."""
    rows: dict[tuple, dict] = {}
    matched = total = 0
    for e in events:
        if not _is_operator(e):
            continue
        key = (*_shape_key(e.name, e.input_shapes), _phase(e))
        entries, ok = _matched(e, table)
        total += 1
        matched += ok
        row = rows.setdefault(key, {"name": e.name, "shapes": [list(s) for s in key[1]], "phase": key[2],
                                    "calls": 0, "host_s": 0.0, "device_s": 0.0, "flops": 0.0, "bytes_read": 0.0,
                                    "bytes_written": 0.0, "dtype": None, "matched": 0, "kernels": defaultdict(int),
                                    "profiler_flops": 0})
        row["calls"] += 1
        row["host_s"] += e.cpu_time_total / 1e6
        row["device_s"] += e.device_time_total / 1e6
        row["profiler_flops"] += int(e.flops or 0)
        row["matched"] += ok
        for entry in entries:
            row["flops"] += entry["flops"]
            row["bytes_read"] += entry["read"]
            row["bytes_written"] += entry["written"]
            row["dtype"] = row["dtype"] or entry["dtype"]
        row["dtype"] = row["dtype"] or _dtype(e)
        for k in _kernels(e):
            row["kernels"][k] += 1
    out = []
    for row in rows.values():
        for field in ("calls", "host_s", "device_s", "flops", "bytes_read", "bytes_written", "profiler_flops"):
            row[field] = row[field] / steps
        row["kernels"] = sorted(row["kernels"], key=row["kernels"].get, reverse=True)[:5]
        out.append(row)
    return out, {"calls_matched": matched / steps, "calls": total / steps}


def _synchronizer(device: torch.device) -> Callable[[], None]:
    """Waits for the device's queued work (nothing on the CPU), through torch.accelerator."""
    if device.type == "cpu":
        return lambda: None
    return lambda: torch.accelerator.synchronize(device)


def _device_name(device: torch.device) -> str | None:
    """The accelerator's name as its runtime reports it (None on the CPU: the caller names the CPU)."""
    if device.type == "cpu":
        return None
    return torch.get_device_module(device).get_device_name(device)


def trace(trainer, next_batch: Callable[[], Any], *, steps: int, warmup: int, device: torch.device) -> dict:
    """Warm-up, ``steps`` plain steps timed (the profiler off), one census step, ``steps`` profiled steps:
    what harness/profile/ turns into the table. Nothing here is a timed step of a trial."""
    sync = _synchronizer(device)
    for _ in range(warmup):
        trainer.step(next_batch())
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.step(next_batch())
    sync()
    plain = (time.perf_counter() - t0) / steps
    batch = next_batch()
    table = census(lambda: trainer.step(batch))
    events, wall, waited = profiled(trainer.step, next_batch, steps, device, sync)
    rows, join = operators(events, table, steps)
    return {"device_type": device.type, "device_name": _device_name(device), "threads": torch.get_num_threads(),
            "plain_step_s": plain, "profiled_step_s": wall / steps, "data_wait_s": waited / steps,
            "operators": rows, "join": join}
