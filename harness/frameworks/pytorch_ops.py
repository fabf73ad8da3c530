"""PyTorch's operator kernels for ``trainmark ops`` (harness/throughput/ops.py): matmul and 2-D convolution
cases forward and backward, the copy-and-add bandwidth pair, CUDA-event timing, TF32 on or off, and the FLOPs
of a case by the training FLOP counter (harness/frameworks/pytorch_flops.py), counted once for every
framework. A case is a ``Shape`` of ops.py (``op``, ``dims``).
"""
from __future__ import annotations

import contextlib
from typing import Callable

import torch
import torch.nn.functional as F

from trainmark.harness.frameworks import pytorch_device as _device
from trainmark.harness.frameworks import pytorch_flops as _flops

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class DeviceTimer:
    """The device's own events around the loop (any accelerator type: ``torch.Event``): its clock, no
    host launch gaps counted twice."""

    def __init__(self, device):
        self.device = torch.device(device)

    def sync(self) -> None:
        _device.synchronize(self.device)

    def time(self, fn: Callable[[], object], inner: int) -> float:
        start = torch.Event(self.device, enable_timing=True)
        end = torch.Event(self.device, enable_timing=True)
        self.sync()
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0 / inner


def has_tf32(device) -> bool:
    """TF32 is a mode of NVIDIA tensor cores (the CUDA build, not ROCm's)."""
    return torch.device(device).type == "cuda" and not getattr(torch.version, "hip", None)


@contextlib.contextmanager
def tf32(enabled: bool):
    """TF32 on or off for both matmuls and cuDNN, restored afterwards."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _counted(fn_fwd: Callable[[], torch.Tensor], inputs: list[torch.Tensor]) -> tuple[int, int]:
    """(forward, backward) FLOPs of ``fn_fwd`` on meta tensors, by the training FLOP counter."""
    with _flops.counter() as mode:
        out = fn_fwd()
        fwd = mode.get_total_flops()
        torch.autograd.grad(out, inputs, torch.empty_like(out))
        total = mode.get_total_flops()
    return int(fwd), int(total - fwd)


def _tensors(shape, dtype: torch.dtype, device, requires_grad: bool):
    d = shape.dims
    g = dict(dtype=dtype, device=device, requires_grad=requires_grad)
    if shape.op == "matmul":
        return torch.randn(d["m"], d["k"], **g), torch.randn(d["k"], d["n"], **g)
    x = torch.randn(d["n"], d["c"], d["h"], d["w"], dtype=dtype, device=device)
    w = torch.randn(d["k"], d["c"], d["r"], d["s"], dtype=dtype, device=device)
    if str(device) != "meta":  # NHWC: the layout tuned training uses (tensor cores, oneDNN)
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    return x.requires_grad_(requires_grad), w.requires_grad_(requires_grad)


def _apply(shape, a, b):
    if shape.op == "matmul":
        return a @ b
    d = shape.dims
    return F.conv2d(a, b, stride=d["stride"], padding=d["pad"])


def shape_flops(shape) -> tuple[int, int]:
    """Forward and backward (input + weight gradients) FLOPs of one call."""
    a, b = _tensors(shape, torch.float32, "meta", True)
    return _counted(lambda: _apply(shape, a, b), [a, b])


def _case(shape, dtype: torch.dtype, device, pass_: str) -> Callable[[], object]:
    """The callable timed for one (shape, dtype, pass)."""
    if pass_ == "fwd":
        a, b = _tensors(shape, dtype, device, False)
        if shape.op == "matmul":
            out = torch.empty(a.shape[0], b.shape[1], dtype=dtype, device=device)
            return lambda: torch.mm(a, b, out=out)
        return lambda: _apply(shape, a, b)
    a, b = _tensors(shape, dtype, device, True)
    y = _apply(shape, a, b)
    grad = torch.randn_like(y)
    return lambda: torch.autograd.grad(y, (a, b), grad, retain_graph=True)


def case(shape, dtype_name: str, device, pass_: str) -> Callable[[], object]:
    """The callable timed for one (shape, dtype name, pass)."""
    return _case(shape, DTYPES[dtype_name], device, pass_)


def copy_and_add(n: int, device) -> tuple[Callable[[], object], Callable[[], object], str]:
    """PyTorch's bandwidth kernels on ``n`` fp32 elements: into a preallocated output."""
    src = torch.rand(n, device=device)
    other = torch.rand(n, device=device)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src), lambda: torch.add(src, other, out=dst), "dst.copy_(src); torch.add(out=dst)"
