"""The system description: detected facts about this machine, merged with the user's file.

Field names follow MLPerf's system JSON where one exists. What the user states wins over
what is detected (a vendor knows its product name); the result must pass the shipped schema.
"""
from __future__ import annotations

import json
import os
import platform
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema

from trainmark import __version__
from trainmark.errors import UserError

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "system.schema.json"


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M)
        if m:
            return m.group(1).strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _memory(meminfo: Path = Path("/proc/meminfo")) -> str:
    try:
        kb = int(re.search(r"^MemTotal:\s*(\d+) kB", meminfo.read_text(), re.M).group(1))
        return f"{kb / 1024 ** 2:.1f} GB"
    except (OSError, AttributeError, ValueError):
        return "0 GB"


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def detect(device: str = "cpu") -> dict[str, Any]:
    """Facts about this machine and its software; no network, no hardware writes."""
    import torch

    desc: dict[str, Any] = {
        "number_of_nodes": 1,
        "host_processor_model_name": _cpu_model(),
        "host_processors_per_node": 1,
        "host_processor_core_count": os.cpu_count() or 1,
        "host_memory_capacity": _memory(),
        "accelerator_model_name": "none",
        "accelerators_per_node": 0,
        "framework": f"PyTorch {torch.__version__}",
        "software_versions": {p: _version(p) for p in
                              ("torch", "torchvision", "torchaudio", "numpy", "mlperf-logging", "nvidia-ml-py")},
        "cuda_version": torch.version.cuda,
        "operating_system": f"{platform.system()} {platform.release()}",
        "python_version": platform.python_version(),
        "trainmark_version": __version__,
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.device(device))
        desc.update(accelerator_model_name=props.name, accelerators_per_node=torch.cuda.device_count(),
                    accelerator_memory_capacity=f"{props.total_memory / 1024 ** 3:.0f} GB")
        try:
            import pynvml
            pynvml.nvmlInit()
            desc["accelerator_driver_version"] = str(pynvml.nvmlSystemGetDriverVersion())
        except Exception:  # noqa: BLE001 - the driver version is optional information
            pass
    return desc


def load_user_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"--system {path}: cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise UserError(f"--system {path}:{line or ''}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"--system {path}: must hold a JSON object")
    return data


def build(device: str, submitter: str, division: str, system_name: str | None,
          user_file: Path | None) -> dict[str, Any]:
    """Detected facts, then the user's file over them; validated against the schema."""
    desc = detect(device)
    desc.update(submitter=submitter, division=division)
    if user_file:
        desc.update(load_user_file(user_file))
    desc["system_name"] = system_name or desc.get("system_name") or default_system_name(desc)
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(desc), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.absolute_path)) or "<top level>"
        raise UserError(f"system description{f' ({user_file})' if user_file else ''}: field '{where}': {e.message}")
    return desc


def default_system_name(desc: dict[str, Any]) -> str:
    """e.g. ``2xcpu-AMD-EPYC-9R45`` or ``1xNVIDIA-H200``: readable and filesystem-safe."""
    if desc.get("accelerators_per_node"):
        name = f"{desc['accelerators_per_node']}x{desc['accelerator_model_name']}"
    else:
        name = f"{desc['host_processor_core_count']}xcpu-{desc['host_processor_model_name']}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:100]
