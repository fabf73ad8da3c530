"""What the harness asks PyTorch outside a training step: the device named on the command line, its name,
UUID and properties, synchronisation, TF32, versions, and whether a model has batch norm.

PyTorch is the harness's device runtime whichever framework trains (a TensorFlow run names its device as
PyTorch does, and the multi-rank process group is torch.distributed's: harness/frameworks/distributed.py).
Modules of trainmark.harness outside harness/frameworks/ ask here (lazily, where they import no framework
at module level today), so that this package is the only one that imports torch.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import torch

from trainmark.errors import UserError

Device = torch.device


def check_device(device: str) -> torch.device:
    """``--device``: cpu, cuda or cuda:INDEX, present on this machine; a UserError otherwise."""
    if device == "cpu":
        return torch.device("cpu")
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if not m:
        raise UserError(f"--device {device!r}: use cpu, cuda or cuda:INDEX")
    if not torch.cuda.is_available():
        raise UserError(f"--device {device}: CUDA is not available on this machine (use --device cpu)")
    index = int(m.group(1) or 0)
    if index >= torch.cuda.device_count():
        raise UserError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) here")
    return torch.device("cuda", index)


def as_device(device) -> torch.device:
    """A device from its name ('cpu', 'cuda:1') or itself."""
    return torch.device(device)


def cuda_device(index: int) -> torch.device:
    """CUDA device ``index`` (a rank's local GPU)."""
    return torch.device("cuda", index)


def synchronize(device=None) -> None:
    """Wait for the CUDA device's queued work (``device`` None: the current device); nothing on a CPU."""
    if device is None:
        torch.cuda.synchronize()
    elif torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def cuda_available() -> bool:
    return torch.cuda.is_available()


def cuda_name(device) -> str:
    return torch.cuda.get_device_name(device)


def cuda_capability(device) -> str:
    """The CUDA device's compute capability, '9.0'."""
    return ".".join(map(str, torch.cuda.get_device_capability(device)))


def cuda_uuids(torch_indices: list[int]) -> list[int | str]:
    """NVML identifiers of torch's CUDA devices: UUIDs where torch reports them, else the index."""
    out: list[int | str] = []
    for i in torch_indices:
        uuid = getattr(torch.cuda.get_device_properties(i), "uuid", None)
        out.append(f"GPU-{uuid}" if uuid is not None else i)
    return out


def cuda_description(device: str) -> dict[str, Any] | None:
    """The accelerator fields of a system description for ``device`` ('cuda:i'); None without CUDA."""
    if not (device.startswith("cuda") and torch.cuda.is_available()):
        return None
    props = torch.cuda.get_device_properties(torch.device(device))
    return {"accelerator_model_name": props.name, "accelerators_per_node": str(torch.cuda.device_count()),
            "accelerator_memory_capacity": f"{props.total_memory / 1024 ** 3:.0f} GB"}


def versions() -> tuple[str, str | None]:
    """(torch's version, the CUDA version it was built with, or None)."""
    return torch.__version__, torch.version.cuda


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


def tf32_enabled() -> bool:
    """Whether matmuls or cuDNN convolutions may run in TF32 (cuDNN's may by default)."""
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
