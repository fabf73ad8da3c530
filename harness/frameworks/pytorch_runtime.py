"""What the harness asks PyTorch outside a training step: the device named on the command line, its name,
UUID and properties, synchronisation, TF32, versions, and whether a model has batch norm.

PyTorch is the harness's device runtime whichever framework trains (a TensorFlow run names its device as
PyTorch does, and the multi-rank process group is torch.distributed's: harness/frameworks/distributed.py).
Modules of trainmark.harness outside harness/frameworks/ ask here (lazily, where they import no framework
at module level today), so that this package is the only one that imports torch.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from trainmark.harness.frameworks import pytorch_device as _device

Device = torch.device


def check_device(device: str) -> torch.device:
    """``--device``: auto, cpu or TYPE[:INDEX] present here (the seam: pytorch_device.resolve)."""
    return _device.resolve(device)


def as_device(device) -> torch.device:
    """A device from its name ('cpu', 'cuda:1') or itself."""
    return torch.device(device)


# The device seam's answers, under the names the harness has always asked by.
is_accelerator = _device.is_accelerator
local_device = _device.local
device_name = _device.name
device_description = _device.describe
device_ids = _device.ids
device_banner = _device.banner


def synchronize(device=None) -> None:
    """Wait for the device's queued work (nothing on a CPU): the seam's call, looked up when called."""
    _device.synchronize(device)


def accelerator_available() -> bool:
    return _device.accelerator() is not None


def capability(device) -> str | None:
    """The device's compute capability ('9.0') where its type reports one (CUDA, ROCm), else None."""
    props = _device.properties(device)
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    return f"{major}.{minor}" if major is not None else None


def versions() -> tuple[str, str | None]:
    """(torch's version, the accelerator runtime it was built with: 'CUDA 13.0', 'ROCm 6.4', or None)."""
    acc = _device.accelerator()
    return torch.__version__, _device.runtime_version(acc.type) if acc is not None else None


def driver_version() -> str | None:
    """The accelerator driver's version where its vendor library reports one (NVML for NVIDIA), else None."""
    acc = _device.accelerator()
    if acc is None or acc.type != "cuda" or getattr(torch.version, "hip", None):
        return None
    try:
        import pynvml
        pynvml.nvmlInit()
        return str(pynvml.nvmlSystemGetDriverVersion())
    except Exception:  # noqa: BLE001 - the driver version is optional information
        return None


def library_versions() -> dict[str, Any]:
    """torch, the CUDA it was built with and cuDNN's version (None where there is none), for the record."""
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": cudnn}


def num_threads() -> int:
    """The threads torch's CPU kernels use."""
    return torch.get_num_threads()


def generator(seed: int) -> torch.Generator:
    """The random generator a reference's ``train_batches`` draws its order and augmentation from."""
    return torch.Generator().manual_seed(seed)


def seed_reference(seed: int) -> torch.Generator:
    """Seed torch's global generator (a reference model's initialisation, which a Keras twin copies) and
    return a generator for the reference's ``train_batches`` (its batch order and augmentation)."""
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def tf32_enabled(device_type: str = "cuda") -> bool:
    """Whether matmuls or cuDNN convolutions may run in TF32 (cuDNN's may by default) on this device type."""
    if device_type != "cuda" or getattr(torch.version, "hip", None):
        return False
    return bool(torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)


def built_type(build_model: Callable[[], Any]) -> str | None:
    """None when ``build_model`` builds a torch.nn.Module (built on the meta device: no memory, no
    initialisation time), else what it built, for a one-line error (``--model``)."""
    with torch.device("meta"):
        model = build_model()
    return None if isinstance(model, torch.nn.Module) else f"a {type(model).__name__} ({model!r:.60})"


def has_batch_norm(build_model: Callable[[], Any]) -> bool:
    """Whether the PyTorch model that ``build_model`` builds has a batch-norm layer (built on the meta
    device: no memory, no initialisation time)."""
    with torch.device("meta"):
        model = build_model()
    return any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
