"""Operator microbenchmarks: does this device reach the FLOP rate and bandwidth its datasheet claims?

Matrix multiplications and 2-D convolutions with the geometry of real layers of the reference
models (DeepBench-style: each shape names the layer it comes from), forward and backward, per
dtype; a large copy and add for memory bandwidth. Each case: warm-up, device synchronisation,
``repeats`` timings of ``inner`` back-to-back calls (``inner`` chosen so one timing lasts about
``target_s``), reported as median and spread. FLOPs come from the same counter as the training
FLOPs (``trainmark.harness.frameworks.pytorch_flops``), so utilization in runs and here use one convention.

The measured ceiling of a dtype is its best median TFLOPS over all shapes (and, on CPU, over the
torch and NumPy BLAS kernels: the ceiling is what the hardware does with the best kernel at hand,
and a gap between them is worth seeing). The datasheet peak counts as *confirmed* when the
ceiling reaches ``CONFIRM_FRACTION`` of it.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from trainmark.errors import UserError
from trainmark.format import artifacts
from trainmark.harness.frameworks import pytorch_ops
from trainmark.harness.frameworks import pytorch_runtime as runtime
from trainmark.harness.frameworks.backend import BACKENDS
from trainmark.harness.frameworks.pytorch_ops import shape_flops
from trainmark.harness.measure import peaks as _peaks
from trainmark.harness.measure.other_load import OtherLoad

__all__ = ["Shape", "default_shapes", "measure", "run_ops", "format_report", "measured_ceilings", "ceilings_record",
           "read_report",
           "CONFIRM_FRACTION", "FORMAT"]

FORMAT = artifacts.OPS_FORMAT
# Vendors' own GEMM benchmarks reach 70-90 % of the dense datasheet figure on large shapes
# (the lent H200 measured 769-798 of 989 TFLOP/s bf16, 78-81 %); 80 % is where we call it confirmed.
CONFIRM_FRACTION = 0.80
DTYPES = pytorch_ops.DTYPES  # the dtypes measured, by name
DeviceTimer = pytorch_ops.DeviceTimer


@dataclass(frozen=True)
class Shape:
    """One benchmark case. matmul: y[m,n] = x[m,k]·w[k,n]. conv2d: NCHW input n×c×h×w, k filters r×s."""

    name: str
    op: str                      # "matmul" or "conv2d"
    dims: dict
    source: str

    def describe(self) -> str:
        d = self.dims
        if self.op == "matmul":
            return f"{d['m']}x{d['k']} @ {d['k']}x{d['n']}"
        return (f"n{d['n']} c{d['c']} {d['h']}x{d['w']} -> k{d['k']} "
                f"{d['r']}x{d['s']}/{d['stride']}")


_VASWANI = "Transformer-base (Vaswani et al. 2017: d_model 512, d_ff 2048, 8 heads, ~37k BPE vocabulary)"
_GNMT = "GNMT LSTM layer (Wu et al. 2016: 1024 units; gates = [x, h] (2048) times W (2048x4096))"
_KJV = "trainmark KJV language model, LSTM-256 (field notes): gates = [x, h] (512) times W (512x1024)"
_RN50 = "ResNet-50 v1.5 at 224x224 (He et al. 2016; torchvision resnet50)"
_VGG = "VGG-16 at 224x224 (Simonyan & Zisserman 2015, configuration D)"
_SQUARE = "synthetic square GEMM, not from a model: the shape GEMM peaks are usually quoted on"


def _mm(name, m, n, k, source):
    return Shape(name, "matmul", {"m": m, "n": n, "k": k}, source)


def _conv(name, n, c, hw, k, rs, stride, source):
    return Shape(name, "conv2d", {"n": n, "c": c, "h": hw, "w": hw, "k": k, "r": rs, "s": rs,
                                  "stride": stride, "pad": rs // 2}, source)


def default_shapes(device_type: str = "cpu", quick: bool = False) -> list[Shape]:
    """The benchmark set. Layer geometry is fixed; batch/token counts are sized to the device.

    CPU: batches small enough for the whole default run to stay under a minute on 2 cores.
    CUDA: batches large enough for a data-centre GPU to reach its sustained rate.
    """
    if quick:
        return [_mm("square", 256, 256, 256, _SQUARE),
                _mm("transformer.ffn1", 128, 2048, 512, _VASWANI + "; 128 tokens"),
                _conv("resnet50.layer3.conv3x3", 1, 256, 14, 256, 3, 1, _RN50 + "; batch 1")]
    gpu = device_type != "cpu"
    tokens = 16384 if gpu else 1024          # tokens per step: 32 x 512 on GPU
    lstm_b = 256 if gpu else 64
    img_b = 64 if gpu else 2
    sq = 8192 if gpu else 2048
    logit_tokens = tokens if gpu else tokens // 4   # 37k-wide: the CPU run's time would go to this one GEMM
    tk = f"; {tokens} tokens"
    return [
        _mm(f"square.{sq}", sq, sq, sq, _SQUARE),
        _mm("transformer.attn_qkv", tokens, 1536, 512, _VASWANI + ", fused Q/K/V projection" + tk),
        _mm("transformer.ffn1", tokens, 2048, 512, _VASWANI + ", feed-forward in" + tk),
        _mm("transformer.ffn2", tokens, 512, 2048, _VASWANI + ", feed-forward out" + tk),
        _mm("transformer.logits", logit_tokens, 37000, 512,
            _VASWANI + f", output projection; {logit_tokens} tokens"),
        _mm("gnmt.lstm_gates", lstm_b, 4096, 2048, _GNMT + f"; batch {lstm_b}"),
        _mm("kjv.lstm256_gates", lstm_b, 1024, 512, _KJV + f"; batch {lstm_b}"),
        _conv("resnet50.conv1", img_b, 3, 224, 64, 7, 2, _RN50 + f", stem 7x7/2; batch {img_b}"),
        _conv("resnet50.layer1.conv3x3", img_b, 64, 56, 64, 3, 1, _RN50 + f"; batch {img_b}"),
        _conv("resnet50.layer1.conv1x1_expand", img_b, 64, 56, 256, 1, 1, _RN50 + f"; batch {img_b}"),
        _conv("resnet50.layer2.conv3x3", img_b, 128, 28, 128, 3, 1, _RN50 + f"; batch {img_b}"),
        _conv("resnet50.layer3.conv3x3", img_b, 256, 14, 256, 3, 1, _RN50 + f"; batch {img_b}"),
        _conv("resnet50.layer4.conv3x3", img_b, 512, 7, 512, 3, 1, _RN50 + f"; batch {img_b}"),
        _conv("vgg16.conv1_2", img_b, 64, 224, 64, 3, 1, _VGG + f"; batch {img_b}"),
        _conv("vgg16.conv3_2", img_b, 256, 56, 256, 3, 1, _VGG + f"; batch {img_b}"),
        _conv("vgg16.conv5_2", img_b, 512, 14, 512, 3, 1, _VGG + f"; batch {img_b}"),
    ]


# ---------------------------------------------------------------- timing

@dataclass
class Timing:
    """Seconds per call: ``samples`` are the per-call means of each of the ``repeats`` timings."""

    samples: list[float]
    inner: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def as_dict(self) -> dict:
        med = self.median
        return {"inner": self.inner, "repeats": len(self.samples), "median_s": med,
                "min_s": min(self.samples), "max_s": max(self.samples),
                "spread_pct": round(100 * (max(self.samples) - min(self.samples)) / med, 2) if med else None}


class CpuTimer:
    """Wall-clock timing with ``time.perf_counter`` (CPU ops are synchronous)."""

    def sync(self) -> None:
        pass

    def time(self, fn: Callable[[], object], inner: int) -> float:
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - start) / inner


def timer_for(device) -> CpuTimer | DeviceTimer:
    return DeviceTimer(device) if runtime.is_accelerator(device) else CpuTimer()


def measure(fn: Callable[[], object], timer, *, warmup_s: float = 0.1, repeats: int = 5,
            target_s: float = 0.1, min_warmup_calls: int = 1) -> Timing:
    """Warm up, pick ``inner`` so one timing lasts about ``target_s``, then time ``repeats`` times.

    Warm-up runs for ``warmup_s`` and at least ``min_warmup_calls`` calls (the first call pays for
    kernel selection and allocation); the single call that sizes ``inner`` is a second warm call.
    """
    calls, start = 0, time.perf_counter()
    while calls < min_warmup_calls or time.perf_counter() - start < warmup_s:
        fn()
        calls += 1
        timer.sync()
    once = timer.time(fn, 1)
    inner = max(1, min(10_000, math.ceil(target_s / max(once, 1e-9))))
    return Timing([timer.time(fn, inner) for _ in range(repeats)], inner)


# ---------------------------------------------------------------- cases

def _numpy_case(shape: Shape):
    import numpy as np

    d = shape.dims
    rng = np.random.default_rng(0)
    a = rng.standard_normal((d["m"], d["k"]), dtype=np.float32)
    b = rng.standard_normal((d["k"], d["n"]), dtype=np.float32)
    out = np.empty((d["m"], d["n"]), dtype=np.float32)
    return lambda: np.matmul(a, b, out=out)


def _memory_cases(device, quick: bool,
                  copy_and_add=pytorch_ops.copy_and_add) -> list[tuple[str, int, Callable[[], object], str]]:
    """(name, bytes moved per call, callable, description) for the bandwidth cases: the same sizes
    and byte counts in every framework, the framework's own copy and add kernels (``copy_and_add``)."""
    gpu = runtime.as_device(device).type != "cpu"
    mib = 8 if quick else (1024 if gpu else 128)   # CPU: 4x the 32 MiB L3 of the machines we run on
    n = mib * 2**20 // 4
    copy, add, kernels = copy_and_add(n, device)
    nbytes = n * 4
    return [
        ("copy", 2 * nbytes, copy, f"copy, {mib} MiB fp32: read + write ({kernels})"),
        ("add", 3 * nbytes, add, f"add, {mib} MiB fp32: 2 reads + 1 write ({kernels})"),
    ]


# ---------------------------------------------------------------- the run

def _device_name(device) -> str:
    device = runtime.as_device(device)
    if runtime.is_accelerator(device):
        return runtime.device_name(device)
    peak = _peaks.device_peak(device) if device.type == "cpu" else None
    return peak.name if peak else str(device)


def run_ops(device="cpu", dtypes: Iterable[str] = ("fp32",), *, ops: Iterable[str] = ("matmul", "conv2d", "memory"),
            passes: Iterable[str] = ("fwd", "bwd"), quick: bool = False, shapes: list[Shape] | None = None,
            numpy_backend: bool = True, repeats: int | None = None, target_s: float | None = None,
            warmup_s: float | None = None, peak: _peaks.DevicePeak | None | str = "auto",
            timer=None, progress: Callable[[dict], None] | None = None, framework: str = "pytorch") -> dict:
    """Run the benchmark set and return the report (schema ``FORMAT``; see docs in this module).
    ``framework="tensorflow"``: the matmul, conv2d and memory cases run in TensorFlow
    (harness/frameworks/tensorflow_ops.py)."""
    device = runtime.as_device(device)
    if runtime.is_accelerator(device) and not runtime.accelerator_available():
        raise RuntimeError(f"{device.type} requested but this process sees no accelerator")
    ops, passes, dtypes = list(ops), list(passes), list(dtypes)
    repeats = repeats or (3 if quick else 5)
    target_s = target_s or (0.01 if quick else (0.05 if device.type == "cpu" else 0.1))
    warmup_s = warmup_s if warmup_s is not None else (0.01 if quick else 0.05)
    timing = {"warmup_s": warmup_s, "repeats": repeats, "target_s": target_s}
    timer = timer or timer_for(device)
    if peak == "auto":
        peak = _peaks.device_peak(device)
    shapes = shapes if shapes is not None else default_shapes(device.type, quick)
    shapes = [s for s in shapes if s.op in ops]
    results, skipped, bandwidth = [], [], []
    emit = progress or (lambda row: None)
    kernels = _kernels(framework)
    flop_cache = {s.name: shape_flops(s) for s in shapes}
    load = OtherLoad() if device.type == "cpu" else None
    for dtype_name in dtypes:
        reason = _dtype_skipped(dtype_name, device)
        if reason is not None:
            skipped.append({"dtype": dtype_name, "reason": reason})
            continue
        with pytorch_ops.tf32(dtype_name == "tf32") if pytorch_ops.has_tf32(device) else contextlib.nullcontext():
            _compute_cases(shapes, dtype_name, passes, device, kernels, timer, timing,
                           peak.peak(dtype_name) if peak else None, flop_cache, results, skipped, emit)
    if numpy_backend and device.type == "cpu" and "fp32" in dtypes and "fwd" in passes:
        _numpy_cases(shapes, timing, peak.peak("fp32") if peak else None, flop_cache, results, emit)
    if "memory" in ops:
        bandwidth = _bandwidth_cases(device, quick, kernels, timer, timing, peak, emit)
    report = {
        "format": FORMAT,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": _device_info(device, framework),
        "peak": peak.as_dict() if peak else None,
        "settings": {"quick": quick, "repeats": repeats, "target_s": target_s, "warmup_s": warmup_s,
                     "dtypes": dtypes, "passes": passes, "ops": ops, "numpy_backend": numpy_backend,
                     "framework": framework,
                     "confirm_fraction": CONFIRM_FRACTION},
        "results": results,
        "bandwidth": bandwidth,
        "skipped": skipped,
        "other_cpu_load_pct": load.percent() if load else None,
    }
    report["summary"] = summarize(report)
    return report


@dataclass(frozen=True)
class _Kernels:
    """The framework whose kernels are timed: its compute cases, its copy-and-add pair, its label."""

    make_case: Callable[[Shape, str, object, str], Callable[[], object]]
    copy_and_add: Callable
    backend: str


def _kernels(framework: str) -> _Kernels:
    """The one place the framework's kernels are chosen."""
    if framework == "tensorflow":
        from trainmark.harness.frameworks import tensorflow_ops
        return _Kernels(tensorflow_ops.case, tensorflow_ops.copy_and_add, "tensorflow")
    return _Kernels(pytorch_ops.case, pytorch_ops.copy_and_add, "torch")


def _dtype_skipped(dtype_name: str, device) -> str | None:
    """Why ``dtype_name`` is not measured on ``device`` (None: it is)."""
    if dtype_name not in DTYPES:
        return "fp8 GEMMs need torch._scaled_mm with scale factors; not measured" if dtype_name == "fp8" \
            else "unknown dtype"
    if dtype_name == "tf32" and not pytorch_ops.has_tf32(device):
        return "TF32 exists only on NVIDIA tensor cores"
    return None


def _compute_cases(shapes: list[Shape], dtype_name: str, passes: list[str], device, kernels: _Kernels, timer,
                   timing: dict, peak_tflops, flop_cache: dict, results: list, skipped: list, emit) -> None:
    """Every (shape, pass) of one dtype, timed; a case the device refuses is skipped with its reason."""
    for shape in shapes:
        for pass_ in passes:
            try:
                fn = kernels.make_case(shape, dtype_name, device, pass_)
                measured = measure(fn, timer, **timing)
            except (RuntimeError, NotImplementedError) as exc:  # dtype unsupported for this op here
                skipped.append({"dtype": dtype_name, "name": shape.name, "pass": pass_,
                                "reason": f"{type(exc).__name__}: {exc}"[:200]})
                continue
            finally:
                fn = None
            row = _row(shape, dtype_name, pass_, kernels.backend, flop_cache[shape.name], measured, peak_tflops)
            results.append(row)
            emit(row)


def _numpy_cases(shapes: list[Shape], timing: dict, peak_tflops, flop_cache: dict, results: list, emit) -> None:
    """The matmuls again with NumPy's BLAS (CPU, fp32, forward)."""
    # NumPy's BLAS runs its own thread pool: let torch's OpenMP workers stop spinning first,
    # and OpenBLAS's after, so neither steals cores from the other.
    time.sleep(0.3)
    for shape in (s for s in shapes if s.op == "matmul"):
        measured = measure(_numpy_case(shape), CpuTimer(), **timing)
        row = _row(shape, "fp32", "fwd", "numpy", flop_cache[shape.name], measured, peak_tflops)
        results.append(row)
        emit(row)
    time.sleep(0.3)


def _bandwidth_cases(device, quick: bool, kernels: _Kernels, timer, timing: dict, peak, emit) -> list[dict]:
    """The copy and add cases: GB/s against the datasheet's memory bandwidth."""
    bandwidth = []
    for name, nbytes, fn, desc in _memory_cases(device, quick, kernels.copy_and_add):
        measured = measure(fn, timer, **timing)
        gbs = nbytes / measured.median / 1e9
        ref = peak.mem_bw_gbs if peak else None
        row = {"op": name, "backend": kernels.backend, "description": desc, "bytes_moved": nbytes,
               **measured.as_dict(), "gbs": gbs, "gbs_best": nbytes / min(measured.samples) / 1e9,
               "datasheet_gbs": ref, "pct_of_peak": 100 * gbs / ref if ref else None}
        bandwidth.append(row)
        emit(row)
    return bandwidth


def _device_info(device: runtime.Device, framework: str = "pytorch") -> dict:
    info = {"type": device.type, "name": _device_name(device), "torch": runtime.versions()[0],
            "threads": runtime.num_threads()}
    if framework == "tensorflow":  # the kernels timed are TensorFlow's: name its version beside torch's
        from trainmark.harness.frameworks import tensorflow_ops
        info["tensorflow"] = tensorflow_ops.version()
    if runtime.is_accelerator(device):
        info["runtime"] = runtime.versions()[1]
        info["capability"] = runtime.capability(device)
    if device.type == "cpu":
        info["openblas_coretype_env"] = os.environ.get("OPENBLAS_CORETYPE")
    return info


def _row(shape: Shape, dtype: str, pass_: str, backend: str, flop_pair, timing: Timing, peak_tflops) -> dict:
    flops = flop_pair[0] if pass_ == "fwd" else flop_pair[1]
    t = timing.as_dict()
    tflops = flops / t["median_s"] / 1e12
    return {"op": shape.op, "name": shape.name, "source": shape.source, "shape": dict(shape.dims),
            "shape_text": shape.describe(), "dtype": dtype, "pass": pass_, "backend": backend,
            "flops": flops, **t, "tflops": tflops, "tflops_best": flops / t["min_s"] / 1e12,
            "datasheet_tflops": peak_tflops,
            "pct_of_peak": 100 * tflops / peak_tflops if peak_tflops else None}


def summarize(report: dict) -> dict:
    """Per dtype: the measured ceiling, where it was reached, and whether the datasheet peak is confirmed."""
    out: dict = {}
    peak = report.get("peak") or {}
    for row in report["results"]:
        best = out.get(row["dtype"])
        if best is None or row["tflops"] > best["ceiling_tflops"]:
            out[row["dtype"]] = {"ceiling_tflops": row["tflops"], "ceiling_name": row["name"],
                                 "ceiling_pass": row["pass"], "ceiling_backend": row["backend"]}
    for dtype, s in out.items():
        ref = (peak.get("tflops") or {}).get(dtype)
        s["datasheet_tflops"] = ref
        s["peak_kind"] = peak.get("kind") if ref else None
        s["pct_of_peak"] = 100 * s["ceiling_tflops"] / ref if ref else None
        s["confirmed"] = (s["ceiling_tflops"] >= CONFIRM_FRACTION * ref) if ref else None
    if report.get("bandwidth"):
        best = max(report["bandwidth"], key=lambda r: r["gbs"])
        ref = peak.get("mem_bw_gbs")
        out["memory"] = {"ceiling_gbs": best["gbs"], "ceiling_op": best["op"], "datasheet_gbs": ref,
                         "pct_of_peak": 100 * best["gbs"] / ref if ref else None,
                         "confirmed": (best["gbs"] >= CONFIRM_FRACTION * ref) if ref else None}
    return out


def measured_ceilings(report: dict) -> dict:
    """``{dtype: TFLOP/s, ..., 'memory_gbs': GB/s}``: what the system description records."""
    summary = report.get("summary") or summarize(report)
    out = {k: v["ceiling_tflops"] for k, v in summary.items() if k != "memory"}
    if "memory" in summary:
        out["memory_gbs"] = summary["memory"]["ceiling_gbs"]
    return out


def read_report(path, flag: str = "--ceilings") -> tuple[dict, bytes]:
    """A ``trainmark ops --json`` report (and its bytes, for the checksum); a UserError otherwise."""
    from trainmark.files import read_json_report

    report, raw = read_json_report(path, flag)
    if not isinstance(report, dict) or report.get("format") != FORMAT:
        raise UserError(f"{flag} {path}: not a {FORMAT} report (write one with `trainmark ops --json FILE`)")
    return report, raw


def ceilings_record(report: dict, report_name: str, report_sha256: str) -> dict:
    """The system description's ``measured_ceilings``: the numbers, the report they come from and the
    framework whose kernels reached them (a report without the setting predates TensorFlow: PyTorch's)."""
    ceilings = measured_ceilings(report)
    memory = ceilings.pop("memory_gbs", None)
    device = report.get("device") or {}
    framework = (report.get("settings") or {}).get("framework", "pytorch")
    return {"source": "trainmark ops", "report": report_name, "report_sha256": report_sha256,
            "created_utc": report.get("created_utc"), "device_type": device.get("type"),
            "device_name": device.get("name"), "torch": device.get("torch"),
            "framework": framework if isinstance(framework, str) and framework in BACKENDS else None,
            "tensorflow": tf_version if isinstance(tf_version := device.get("tensorflow"), str) else None,
            "tflops": ceilings, "memory_gbs": memory}


# ---------------------------------------------------------------- text output

def _fmt(x, spec=".3g", none="-"):
    return none if x is None else format(x, spec)


def format_row(row: dict) -> str:
    if "tflops" in row:
        return (f"{row['name']:<32} {row['dtype']:<5} {row['pass']:<4} {row['backend']:<6} "
                f"{row['tflops']:>10.4g} {_fmt(row['pct_of_peak'], '.1f'):>7} "
                f"{row['median_s'] * 1e3:>10.3f} {_fmt(row['spread_pct'], '.1f'):>7}")
    return (f"{'memory.' + row['op']:<32} {'':<5} {'':<4} {row.get('backend', ''):<6} {row['gbs']:>8.4g} GB/s "
            f"{_fmt(row['pct_of_peak'], '.1f'):>7} {row['median_s'] * 1e3:>10.3f} {_fmt(row['spread_pct'], '.1f'):>7}")


HEADER = (f"{'case':<32} {'dtype':<5} {'pass':<4} {'kernel':<6} {'TFLOP/s':>10} {'%peak':>7} "
          f"{'median ms':>10} {'spread%':>7}")


def format_report(report: dict) -> str:
    """The summary a person reads: peak, ceilings, confirmation."""
    dev = report["device"]
    tf_version = f", tensorflow {dev['tensorflow']}" if dev.get("tensorflow") else ""
    lines = [f"device: {dev['name']} ({dev['type']}, torch {dev['torch']}{tf_version}, {dev['threads']} threads)"]
    peak = report.get("peak")
    if peak:
        lines.append(f"peak: {peak['kind']} — {peak['source']}")
    else:
        lines.append("peak: unknown device, no datasheet entry")
    for dtype, s in report["summary"].items():
        if dtype == "memory":
            lines.append(f"memory: {s['ceiling_gbs']:.4g} GB/s ({s['ceiling_op']}); datasheet "
                         f"{_fmt(s['datasheet_gbs'], '.4g')} GB/s; {_verdict(s)}")
            continue
        lines.append(f"{dtype}: ceiling {s['ceiling_tflops']:.4g} TFLOP/s ({s['ceiling_name']} {s['ceiling_pass']}, "
                     f"{s['ceiling_backend']}); {s['peak_kind'] or 'datasheet'} peak "
                     f"{_fmt(s['datasheet_tflops'], '.4g')} TFLOP/s; {_verdict(s)}")
    busy = report.get("other_cpu_load_pct")
    if busy is not None and busy > 10:
        lines.append(f"warning: other processes used {busy:.0f} % of the CPUs during the measurement: "
                     "the figures above are lower than this machine can do")
    for sk in report.get("skipped", []):
        lines.append(f"skipped: {sk.get('dtype')} {sk.get('name', '')} {sk.get('pass', '')}: {sk['reason']}")
    return "\n".join(lines)


def _verdict(s: dict) -> str:
    if s["confirmed"] is None:
        return "no peak to confirm"
    pct = s["pct_of_peak"]
    word = "confirmed" if s["confirmed"] else "NOT confirmed"
    return f"{pct:.1f} % of peak: {word} (threshold {100 * CONFIRM_FRACTION:.0f} %)"
