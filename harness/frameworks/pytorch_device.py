"""The one device seam: every question the harness asks about an accelerator goes through here.

PyTorch names a device by a type string ('cuda' for CUDA and ROCm, 'xpu', 'mps', a vendor's plug-in
type such as Gaudi's 'hpu' or Ascend's 'npu' registered through PrivateUse1). Its device-generic API
answers for all of them: ``torch.accelerator`` says which one this process has, and
``torch.get_device_module(type)`` gives that type's module with the same calls
(``synchronize``, ``device_count``, ``get_device_name``, memory statistics). So nothing outside
this module (and the energy meters, which talk to one vendor's library each) names a device type:
the trial loop, the sweep and the system description work on any type the installed PyTorch knows.

What a device type needs beyond the generic calls is one entry of ``STEP_HOOKS`` (an XLA device's
step marking, Gaudi's lazy-mode ``mark_step``), called after every optimizer step.
"""
from __future__ import annotations

import contextlib
import importlib
import re
from typing import Any, Callable

import torch

from trainmark.errors import UserError
from trainmark.harness.measure import peaks

CPU = "cpu"

# Device type -> (module, function) called after each optimizer step, for types that queue work lazily
# and run it only when told (torch_xla's graph, Gaudi's lazy mode). Imported only when that type runs.
STEP_HOOKS: dict[str, tuple[str, str]] = {
    "xla": ("torch_xla.core.xla_model", "mark_step"),
    "hpu": ("habana_frameworks.torch.core", "mark_step"),
}


def accelerator() -> torch.device | None:
    """The accelerator this process sees (any type torch.accelerator knows), or None."""
    acc = getattr(torch, "accelerator", None)
    if acc is None or not acc.is_available():
        return None
    return acc.current_accelerator()


def resolve(spec: str) -> torch.device:
    """``--device``: 'auto' (the accelerator, else the CPU), 'cpu', or TYPE[:INDEX] of a present device.

    Anything else is refused in one line that names what this machine has.
    """
    spec = (spec or "auto").strip()
    if spec == "auto":
        return _first(accelerator()) or torch.device(CPU)
    if spec == CPU:
        return torch.device(CPU)
    m = re.fullmatch(r"([a-z_][a-z0-9_]*)(?::(\d+))?", spec)
    if not m:
        raise UserError(f"--device {spec!r}: use auto, cpu or TYPE[:INDEX] ({found()})")
    kind, index = m.group(1), int(m.group(2) or 0)
    count = device_count(kind)
    if count == 0:
        raise UserError(f"--device {spec}: no {kind} device here ({found()})")
    if index >= count:
        raise UserError(f"--device {spec}: only {count} {kind} device(s) here ({found()})")
    return torch.device(kind, index)


def _first(device: torch.device | None) -> torch.device | None:
    if device is None:
        return None
    return torch.device(device.type, device.index if device.index is not None else 0)


def found() -> str:
    """What this machine offers, for an error message: 'found cpu and 2 cuda device(s)'."""
    acc = accelerator()
    if acc is None:
        return "found only the cpu"
    return f"found cpu and {device_count(acc.type)} {acc.type} device(s)"


def module(device) -> Any | None:
    """torch's module for the device's type (torch.cuda, torch.xpu, a plug-in's), None for the CPU."""
    kind = torch.device(device).type
    if kind == CPU:
        return None
    try:
        return torch.get_device_module(kind)
    except (RuntimeError, AttributeError, ValueError):
        return None


def device_count(kind: str) -> int:
    """How many devices of ``kind`` this process can use (0 when PyTorch has none or does not know it)."""
    if kind == CPU:
        return 1
    acc = accelerator()
    if acc is None or acc.type != kind:
        return 0
    mod = module(kind)
    return int(mod.device_count()) if mod is not None and hasattr(mod, "device_count") else 0


def is_accelerator(device) -> bool:
    return torch.device(device).type != CPU


def synchronize(device=None) -> None:
    """Wait for the device's queued work (None: the accelerator's current device); nothing on a CPU."""
    if device is None:
        device = accelerator()
        if device is None:
            return
    mod = module(device)
    if mod is not None and hasattr(mod, "synchronize"):
        dev = torch.device(device)
        mod.synchronize(dev) if dev.index is not None else mod.synchronize()


def synchronizer(device) -> Callable[[], None]:
    """A no-argument ``synchronize`` for ``device`` (a timing loop's barrier)."""
    if not is_accelerator(device):
        return lambda: None
    return lambda: synchronize(device)


def step_hook(device) -> Callable[[], None]:
    """What to call after each optimizer step on this device type (nothing for most types)."""
    entry = STEP_HOOKS.get(torch.device(device).type)
    if entry is None:
        return lambda: None
    return getattr(importlib.import_module(entry[0]), entry[1])


def amp_dtype(device) -> torch.dtype:
    """The autocast dtype of ``--precision amp``: bf16 where the device computes it, else fp16; bf16 on CPUs."""
    mod = module(device)
    if mod is None:
        return torch.bfloat16
    supported = getattr(mod, "is_bf16_supported", None)
    return torch.bfloat16 if supported is None or supported() else torch.float16


def native_bf16(device) -> str | None:
    """Why this device computes bf16 in its own units (a CPU's instruction set, a GPU's tensor cores), or None
    where bf16 would be converted or emulated: the mini suite's PRECISION=auto trains in amp only then."""
    dev = torch.device(device)
    if dev.type == CPU:
        isa = peaks.cpu_native("bf16")
        return f"this CPU computes bf16 ({isa})" if isa else None
    supported = getattr(module(dev), "is_bf16_supported", None)
    if supported is None:
        return None
    try:
        native = supported(including_emulation=False)  # CUDA: pre-Ampere GPUs emulate bf16
    except TypeError:
        native = supported()
    return f"{name(dev)} computes bf16" if native else None


def autocast(device, dtype: torch.dtype):
    """The autocast context of this device type."""
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def grad_scaler(device, dtype: torch.dtype):
    """A GradScaler for fp16 on this device type (None for bf16 and fp32, which need none)."""
    if dtype != torch.float16:
        return None
    return torch.amp.GradScaler(torch.device(device).type)


def name(device) -> str:
    """The device's marketing name ('NVIDIA H200'), or 'cpu'."""
    mod = module(device)
    if mod is None or not hasattr(mod, "get_device_name"):
        return torch.device(device).type
    return str(mod.get_device_name(torch.device(device)))


def properties(device) -> Any | None:
    mod = module(device)
    getter = getattr(mod, "get_device_properties", None) if mod is not None else None
    return getter(torch.device(device)) if getter is not None else None


def describe(device) -> dict[str, Any] | None:
    """The accelerator fields of a system description, from the device type's own API; None on a CPU."""
    if not is_accelerator(device):
        return None
    kind = torch.device(device).type
    props = properties(device)
    memory = getattr(props, "total_memory", None)
    return {"accelerator_model_name": name(device), "accelerators_per_node": str(device_count(kind)),
            "accelerator_memory_capacity": f"{memory / 1024 ** 3:.0f} GB" if memory else "",
            "accelerator_host_interconnect": "", "accelerator_interconnect": "",
            "accelerator_type": kind, "accelerator_runtime": runtime_version(kind)}


def runtime_version(kind: str) -> str | None:
    """The device runtime the installed PyTorch was built with: 'CUDA 13.0', 'ROCm 6.4', 'XPU', None."""
    hip = getattr(torch.version, "hip", None)
    if kind == "cuda" and hip:
        return f"ROCm {hip}"
    version = getattr(torch.version, kind, None)
    if isinstance(version, str):
        return f"{kind.upper()} {version}"
    return None


def banner(device) -> str:
    """How the run's banner names the device: 'cuda:0 (NVIDIA H200, 140 GB, CUDA 13.0)' or 'cpu (2 threads)'."""
    if not is_accelerator(device):
        return f"cpu ({torch.get_num_threads()} threads)"
    d = describe(device) or {}
    extras = [x for x in (d.get("accelerator_model_name"), d.get("accelerator_memory_capacity"),
                          d.get("accelerator_runtime")) if x]
    return f"{torch.device(device)} ({', '.join(extras)})"


def ids(device, local_indices: list[int]) -> list[int | str]:
    """The vendor-library identifiers of these local devices: UUIDs where PyTorch reports them, else indices.

    NVML (and amdsmi) match UUIDs, which stay right when CUDA_VISIBLE_DEVICES reorders the devices.
    """
    out: list[int | str] = []
    kind = torch.device(device).type
    for i in local_indices:
        uuid = getattr(properties(torch.device(kind, i)), "uuid", None)
        out.append(f"GPU-{uuid}" if uuid is not None and kind == "cuda" else i)
    return out


def local(device, local_rank: int) -> torch.device:
    """The device of a rank on its node: the accelerator of its local rank; the CPU stays the CPU."""
    if not is_accelerator(device):
        return torch.device(CPU)
    return torch.device(torch.device(device).type, local_rank)


def pin_memory() -> bool:
    """Whether a DataLoader should pin host memory (an accelerator is there to copy to)."""
    return accelerator() is not None


def peak_memory_begin(device) -> bool:
    """Reset the device allocator's peak; False where the type has no allocator statistics."""
    mod = module(device)
    if mod is None or not hasattr(mod, "reset_peak_memory_stats"):
        return False
    synchronize(device)
    mod.reset_peak_memory_stats(torch.device(device))
    return True


def peak_memory_end(device) -> int | None:
    """Bytes the device allocator held at most in tensors since ``peak_memory_begin``."""
    mod = module(device)
    if mod is None or not hasattr(mod, "max_memory_allocated"):
        return None
    synchronize(device)
    return int(mod.max_memory_allocated(torch.device(device)))


def release(device) -> None:
    """Wait for the device and hand its cached blocks back (nothing on a CPU)."""
    mod = module(device)
    if mod is None:
        return
    synchronize(device)
    if hasattr(mod, "empty_cache"):
        mod.empty_cache()


@contextlib.contextmanager
def memory_limit(limit_bytes: int, device):
    """Cap the device's caching allocator at ``limit_bytes`` where its type supports it; restored after."""
    mod = module(device)
    setter = getattr(mod, "set_per_process_memory_fraction", None) if mod is not None else None
    props = properties(device)
    if setter is None or props is None:
        raise UserError(f"--memory-limit-gb: the {torch.device(device).type} allocator takes no limit")
    dev = torch.device(device)
    setter(min(1.0, limit_bytes / props.total_memory), dev)
    try:
        yield
    finally:
        setter(1.0, dev)
