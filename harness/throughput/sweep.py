"""Throughput mode: one benchmark's training step over a grid of batch sizes and precisions.

Not a time-to-quality run: no convergence, no evaluation. Each point builds a fresh model,
warms up, then times ``steps`` training steps (forward, loss, backward, optimizer) between two
device synchronisations, reading the energy meter at the same instants. Synthetic data is one
device-resident batch of the right shape made by the reference (``synthetic_batch``): the
device's limit with no input pipeline. Real data goes through the reference's own loader and
``to_device`` inside the timed loop.

The step is the one ``trainmark run`` times: the framework seam's ``Trainer.step``
(trainmark.harness.frameworks.backend) of the framework asked for (``--framework``:
harness/frameworks/pytorch_backend.py
with the same autocast, GradScaler, channels-last and optimizer, or harness/frameworks/tensorflow_backend.py), fed
the batches its ``Trainer.prepare`` makes, so a sweep point predicts a run's throughput.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from trainmark.format import artifacts
from trainmark.harness.frameworks import pytorch_runtime as runtime
from trainmark.harness.measure import flops as _flops
from trainmark.harness.measure import peaks as _peaks
from trainmark.harness.throughput import oom as _oom

__all__ = ["SweepSettings", "run_sweep", "FORMAT", "POINT_FIELDS", "resolve_precision"]

FORMAT = artifacts.SWEEP_FORMAT
STEPS_PER_EPOCH_FOR_SCHEDULES = 100  # learning-rate schedules need one; throughput does not depend on it

POINT_FIELDS = artifacts.SWEEP_POINT_FIELDS  # every point has exactly these keys (CSV columns, in order)


@dataclass
class SweepSettings:
    batch_sizes: list[int]
    precisions: list[str] = field(default_factory=lambda: ["fp32", "amp"])
    data: str = "synthetic"             # synthetic | real
    warmup_steps: int = 3
    steps: int = 10
    min_seconds: float = 0.0            # keep stepping until this long (energy counters update at ~10 Hz)
    oom_search: bool = False
    max_batch: int = 1 << 16
    probe_steps: int = 2                # steps a batch size must survive to count as fitting
    measure_max: bool = True            # also time the largest batch that fits
    framework: str = "pytorch"          # the framework seam's backend that builds and steps the trainer


def resolve_precision(device: runtime.Device, precision: str):
    """(autocast context factory, GradScaler or None, label), exactly as training runs use it."""
    from trainmark.harness.frameworks.pytorch_backend import autocast_for

    if precision not in ("fp32", "amp"):
        raise ValueError(f"precision {precision!r}: use fp32 or amp")
    return autocast_for(device, precision)


class _Step:
    """One trainer at one batch size and precision: the framework seam's training step, the one
    ``trainmark run`` times, called with the next batch inside the allocator limit."""

    def __init__(self, ref, hp: dict, device: runtime.Device, batch_size: int, precision: str, data,
                 limit: Callable[[], Any] = contextlib.nullcontext, framework: str = "pytorch",
                 count_flops: bool = False):
        from trainmark.harness.frameworks import backend as _framework

        if framework == "pytorch":
            resolve_precision(device, precision)  # refuses a precision other than fp32 or amp
        self.trainer = _framework.backend(framework, device, precision).trainer(
            ref, ref.build_model, {**hp, "global_batch_size": batch_size}, None, seed=0, count_flops=count_flops,
            schedule_steps=STEPS_PER_EPOCH_FOR_SCHEDULES)
        self.label = self.trainer.precision_used
        self.limit = limit
        self.next_batch = batch_source(ref, device, batch_size, data, prepare=self.trainer.prepare)

    def __call__(self) -> None:
        batch = self.next_batch()
        with self.limit():
            self.trainer.step(batch)


def _sync(device: runtime.Device) -> None:
    runtime.synchronize(device)  # nothing on a CPU


def batch_source(ref, device: runtime.Device, batch_size: int, data, seed: int = 0, rank: int = 0,
                 world: int = 1, prepare: Callable[[Any], Any] | None = None) -> Callable[[], Any]:
    """Synthetic (``data`` None): one device-resident batch reused every step, no input pipeline.
    Real: this rank's share of the reference's loader, cycled over epochs. Sweep and scale use it.
    ``prepare``: a batch as the trainer steps it (default: the reference's ``to_device``)."""
    prepare = prepare or (lambda batch: ref.to_device(batch, device, train=True))
    if data is None:
        batch = prepare(ref.synthetic_batch(batch_size, device))
        return lambda: batch
    gen = runtime.generator(seed)
    state = {"epoch": 1, "it": None}

    def next_batch():
        for _ in range(2):
            if state["it"] is None:
                state["it"] = iter(ref.train_batches(data, state["epoch"], batch_size, gen, rank, world))
            try:
                return prepare(next(state["it"]))
            except StopIteration:
                state["epoch"] += 1
                state["it"] = None
        raise RuntimeError(f"the training set holds fewer than {batch_size} samples per rank")
    return next_batch


def _count_flops(ref, hp: dict, device, batch_size: int,
                 framework: str = "pytorch") -> tuple[int | None, str | None]:
    """Model FLOPs of one step at ``batch_size``: the framework seam's count (PyTorch: on the meta
    device, no memory, no time; another framework: its trainer's own count)."""
    from trainmark.harness.frameworks import backend as _framework

    return _framework.backend(framework, device, "fp32").step_flops(ref, hp, batch_size)


def _empty_point(common: dict, precision: str, batch_size: int, in_grid: bool) -> dict:
    point = dict.fromkeys(POINT_FIELDS)
    point.update(common, precision=precision, batch_size=batch_size, in_grid=in_grid)
    return point


def run_sweep(ref, hp: dict, device, settings: SweepSettings, *, benchmark: str | None = None,
              meter=None, allocator_limit: Callable[[], contextlib.AbstractContextManager] | None = None,
              data=None, ceilings: dict | None = None, peak: _peaks.DevicePeak | None | str = "auto",
              progress: Callable[[dict], None] | None = None) -> dict:
    """Measure every (precision, batch size) point; returns the sweep result (schema ``FORMAT``).

    ``ref``: a reference (``build_model``, ``synthetic_batch``, ``to_device``, ``split_batch``,
    ``criterion``, ``loss``, ``make_optimizer``; ``train_batches`` for real data). ``data``: the
    loaded dataset for real-data points, None for synthetic. ``meter``: an energy meter
    (``trainmark.harness.measure.energy``), None for none. ``allocator_limit``: a context-manager factory
    entered around every training step, e.g. ``lambda: FakeAllocatorLimit(n)`` (a real CUDA cap,
    ``oom.memory_limit``, is entered once around the whole sweep by the caller).
    ``ceilings``: measured TFLOPS per dtype from ``trainmark ops``.
    """
    device = runtime.as_device(device)
    if peak == "auto":
        peak = _peaks.device_peak(device)
    if meter is None:
        from trainmark.harness.measure.energy import NullMeter
        meter = NullMeter("no energy meter given")
    name = benchmark or getattr(ref, "name", type(ref).__name__)
    device_name = (runtime.device_name(device) if runtime.is_accelerator(device)
                   else peak.name if peak else str(device))
    common = {"benchmark": name, "device": str(device), "device_name": device_name,
              "data": "real" if data is not None else "synthetic", "warmup_steps": settings.warmup_steps,
              "energy_method": meter.method, "energy_reason": meter.reason}
    sweep = _Sweep(ref, hp, device, settings, meter, allocator_limit or contextlib.nullcontext, data, ceilings,
                   peak, common, progress)
    meter.start()
    try:
        for precision in settings.precisions:
            sweep.grid(precision)
    finally:
        meter.stop()
    return {
        "format": FORMAT,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "benchmark": name,
        "device": {"type": device.type, "name": common["device_name"], "torch": runtime.versions()[0],
                   "threads": runtime.num_threads(), "framework": settings.framework,
                   "framework_version": _framework_version(settings.framework)},
        "settings": asdict(settings),
        "peak": peak.as_dict() if peak else None,
        "ceilings": ceilings,
        "energy": {"method": meter.method, "reason": meter.reason},
        "oom_search": sweep.searches,
        "points": sweep.points,
        "best": best_points(sweep.points),
    }


class _Sweep:
    """One sweep's points: the grid of one precision, its out-of-memory search, each point measured."""

    def __init__(self, ref, hp: dict, device, settings: SweepSettings, meter, limit: Callable[[], Any], data,
                 ceilings: dict | None, peak, common: dict, progress: Callable[[dict], None] | None):
        self.ref, self.hp, self.device, self.settings, self.meter = ref, hp, device, settings, meter
        self.limit, self.data, self.ceilings, self.peak, self.common = limit, data, ceilings, peak, common
        self.progress = progress
        self.flop_cache: dict[int, tuple[int | None, str | None]] = {}
        self.points: list[dict] = []
        self.searches: dict[str, dict] = {}

    def emit(self, point: dict) -> None:
        self.points.append(point)
        if self.progress:
            self.progress(point)

    def grid(self, precision: str) -> None:
        """The grid's batch sizes in order (none above one that ran out of memory), then the search."""
        outcome: dict[int, bool] = {}
        oom_at = None
        for b in sorted(set(self.settings.batch_sizes)):
            if oom_at is not None and b > oom_at:
                point = _empty_point(self.common, precision, b, True)
                point.update(status="skipped", error=f"larger than batch size {oom_at}, which ran out of memory")
                self.emit(point)
                continue
            point = self.measure(precision, b, True)
            self.emit(point)
            if point["status"] in ("ok", "oom"):  # a crash says nothing about memory
                outcome[b] = point["status"] == "ok"
            if point["status"] == "oom":
                oom_at = b
        if self.settings.oom_search:
            self.search(precision, outcome)

    def search(self, precision: str, outcome: dict[int, bool]) -> None:
        """The largest batch size that fits, and (``measure_max``) its point."""
        s = self.settings
        search = _oom.largest_fitting(
            lambda b: _fits(self.ref, self.hp, self.device, b, precision, s.probe_steps, self.limit, s.framework),
            start=max([b for b, ok in outcome.items() if ok] or [1]), limit=s.max_batch, known=outcome)
        self.searches[precision] = search.as_dict()
        best = search.max_fit
        if s.measure_max and best and best not in outcome:
            self.emit(self.measure(precision, best, False))

    def measure(self, precision: str, batch_size: int, in_grid: bool) -> dict:
        """One point: an out-of-memory or a crash is its result, with the error."""
        point = _empty_point(self.common, precision, batch_size, in_grid)
        if batch_size not in self.flop_cache:
            self.flop_cache[batch_size] = _count_flops(self.ref, self.hp, self.device, batch_size,
                                                       self.settings.framework)
        point["flops_per_step"] = self.flop_cache[batch_size][0]
        memory = _oom.PeakMemory(self.device)
        try:
            n, seconds, e0, e1 = self._timed(point, memory, precision, batch_size)
        except Exception as exc:  # noqa: BLE001 - an OOM or a crash is a result of this point
            point["status"] = "oom" if _oom.is_oom(exc) else "error"
            point["error"] = f"{type(exc).__name__}: {exc}"[:300]
            _oom.release_memory(self.device)
            return point
        point["peak_memory_method"] = memory.method
        samples = n * batch_size
        point.update(status="ok", steps=n, seconds=seconds, samples=samples, samples_per_s=samples / seconds,
                     step_ms=1000 * seconds / n)
        _rates(point, self.peak, self.device, self.ceilings)
        if e0 is not None and e1 is not None:
            point["energy_j"] = e1 - e0
            point["j_per_sample"] = (e1 - e0) / samples
        _oom.release_memory(self.device)
        return point

    def _timed(self, point: dict, memory, precision: str, batch_size: int) -> tuple[int, float, float | None,
                                                                                    float | None]:
        """(steps, seconds, joules before, joules after) of the timed steps, after the warm-up; the
        step is dropped before returning or raising, so that its memory can be released."""
        s, step = self.settings, None
        try:
            memory.begin()
            step = _Step(self.ref, self.hp, self.device, batch_size, precision, self.data, self.limit, s.framework)
            point["precision_used"] = step.label
            for _ in range(s.warmup_steps):
                step()
            _sync(self.device)
            e0, t0 = self.meter.joules(), time.perf_counter()
            n = 0
            while n < s.steps or time.perf_counter() - t0 < s.min_seconds:
                step()
                n += 1
            _sync(self.device)
            t1, e1 = time.perf_counter(), self.meter.joules()
            point["peak_memory_bytes"] = memory.end()
            point["loss_finite"] = math.isfinite(step.trainer.loss_value())
            return n, t1 - t0, e0, e1
        finally:
            step = None


def _framework_version(name: str) -> str:
    from importlib.metadata import version

    return version("torch" if name == "pytorch" else name)


def _fits(ref, hp, device, batch_size, precision, probe_steps, limit, framework: str = "pytorch") -> bool:
    """Whether ``probe_steps`` training steps at ``batch_size`` run without running out of memory."""
    step = None
    try:
        step = _Step(ref, hp, device, batch_size, precision, None, limit, framework)
        for _ in range(probe_steps):
            step()
        _sync(device)
        return True
    except Exception as exc:  # noqa: BLE001
        if _oom.is_oom(exc):
            return False
        raise
    finally:
        step = None
        _oom.release_memory(device)


def _rates(point: dict, peak, device: runtime.Device, ceilings: dict | None) -> None:
    flops = point["flops_per_step"]
    point["tflops"] = _flops.achieved_tflops(flops, point["steps"], point["seconds"])
    if peak is not None and point["precision_used"]:
        dtype, tflops = peak.peak_for_precision(point["precision_used"], device.type)
        point.update(peak_dtype=dtype, peak_tflops=tflops, peak_kind=peak.kind if tflops else None,
                     utilization=_flops.utilization(point["tflops"], tflops))
    if ceilings and point["precision_used"]:
        dtype = point["peak_dtype"] or _peaks.peak_dtype(point["precision_used"], device.type)
        ceiling = ceilings.get(dtype)
        point["ceiling_tflops"] = ceiling
        point["utilization_of_ceiling"] = _flops.utilization(point["tflops"], ceiling)


def best_points(points: list[dict]) -> dict:
    """Per precision and overall: batch size of best throughput and of least energy per sample."""
    out = {}
    groups = {p["precision"] for p in points}
    for key in sorted(groups) + ["overall"]:
        ok = [p for p in points if p["status"] == "ok" and (key == "overall" or p["precision"] == key)]
        entry: dict[str, Any] = {"throughput": None, "energy": None}
        if ok:
            t = max(ok, key=lambda p: p["samples_per_s"])
            entry["throughput"] = {"batch_size": t["batch_size"], "precision": t["precision"],
                                   "samples_per_s": t["samples_per_s"]}
            with_energy = [p for p in ok if p["j_per_sample"] is not None and math.isfinite(p["j_per_sample"])]
            if with_energy:
                e = min(with_energy, key=lambda p: p["j_per_sample"])
                entry["energy"] = {"batch_size": e["batch_size"], "precision": e["precision"],
                                   "j_per_sample": e["j_per_sample"]}
            else:
                entry["energy_reason"] = ok[0]["energy_reason"] or "no energy measured"
        out[key] = entry
    return out
