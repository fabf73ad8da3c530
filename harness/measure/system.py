"""The system description: detected facts about this machine, merged with the user's file.

Field names follow MLPerf's system JSON where one exists. What the user states wins over
what is detected (a vendor knows its product name); the result must pass the shipped schema.
It also passes mlperf-logging's ``system_desc_checker``: every field that checker requires
is present (empty where nothing detects it), counts are strings as MLPerf writes them, and
``status`` is one of MLPerf's availability words.
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
from trainmark.format import layout, schema

SCHEMA_PATH = schema.path(schema.SYSTEM)  # the result format's (trainmark/format/schema/)

# mlperf_logging/system_desc_checker/system_desc_checker.py (4.1.68): the fields it requires.
# Those nothing here detects are written empty, as MLPerf's own submissions do; state them in --system FILE.
MLPERF_REQUIRED_FIELDS = (
    "submitter", "division", "status", "system_name", "number_of_nodes", "host_processors_per_node",
    "host_processor_model_name", "host_processor_core_count", "host_processor_vcpu_count",
    "host_processor_frequency", "host_processor_caches", "host_processor_interconnect", "host_memory_capacity",
    "host_storage_type", "host_storage_capacity", "host_networking", "host_networking_topology",
    "host_memory_configuration", "accelerators_per_node", "accelerator_model_name",
    "accelerator_host_interconnect", "accelerator_frequency", "accelerator_on-chip_memories",
    "accelerator_memory_configuration", "accelerator_memory_capacity", "accelerator_interconnect",
    "accelerator_interconnect_topology", "cooling", "hw_notes", "framework", "other_software_stack",
    "operating_system", "sw_notes",
)
# Counts MLPerf writes as strings (its checker joins some of them with ",".join and crashes on an int).
MLPERF_COUNT_FIELDS = ("number_of_nodes", "host_processors_per_node", "host_processor_core_count",
                       "host_processor_vcpu_count", "accelerators_per_node")
# The same checker's availability words (training rulesets 4.0 and later).
MLPERF_STATUSES = ("Available on-premise", "Available cloud", "Research, Development, or Internal (RDI)", "Preview")
DEFAULT_STATUS = "Research, Development, or Internal (RDI)"  # claims nothing about availability


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (/proc/cpuinfo), which every figure we print is stated beside."""
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


def _cpu_mhz(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        m = re.search(r"^cpu MHz\s*:\s*([0-9.]+)", cpuinfo.read_text(), re.M)
        return f"{float(m.group(1)):.0f} MHz" if m else ""
    except (OSError, ValueError):
        return ""


def _cpu_caches(cache_dir: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> str:
    """e.g. ``L1d 32K, L1i 32K, L2 512K, L3 32768K`` (per core, L3 shared), from sysfs."""
    out = []
    try:
        for index in sorted(cache_dir.glob("index*")):
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
            suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
            out.append(f"L{level}{suffix} {size}")
    except OSError:
        return ""
    return ", ".join(out)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def detect(device: str = "cpu") -> dict[str, Any]:
    """Facts about this machine and its software; no network, no hardware writes."""
    from trainmark.harness.frameworks import pytorch_runtime

    libraries = pytorch_runtime.library_versions()
    torch_version, cuda_version = libraries["torch"], libraries["cuda"]
    versions = {p: _version(p) for p in
                ("torch", "torchvision", "torchaudio", "numpy", "mlperf-logging", "nvidia-ml-py")}
    desc: dict[str, Any] = {field: "" for field in MLPERF_REQUIRED_FIELDS}
    desc.update({
        "status": DEFAULT_STATUS,
        "number_of_nodes": "1",
        "host_processor_model_name": cpu_model(),
        "host_processors_per_node": "1",
        "host_processor_core_count": str(os.cpu_count() or 1),
        "host_processor_vcpu_count": str(os.cpu_count() or 1),
        "host_processor_frequency": _cpu_mhz(),
        "host_processor_caches": _cpu_caches(),
        "host_memory_capacity": _memory(),
        "accelerator_model_name": "none",
        "accelerators_per_node": "0",
        "framework": f"PyTorch {torch_version}",
        "other_software_stack": ", ".join([f"Python {platform.python_version()}", f"CUDA {cuda_version}",
                                           *(f"{p} {v}" for p, v in versions.items() if v and p != "torch"),
                                           f"trainmark {__version__}"]),
        "software_versions": versions,
        "cuda_version": cuda_version,
        "operating_system": f"{platform.system()} {platform.release()}",
        "python_version": platform.python_version(),
        "trainmark_version": __version__,
    })
    accelerator = pytorch_runtime.device_description(device)  # from the device type's own API
    if accelerator is not None:
        desc.update({k: v for k, v in accelerator.items() if v})
        driver = pytorch_runtime.driver_version()
        if driver:
            desc["accelerator_driver_version"] = driver
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
          user_file: Path | None, framework: str = "pytorch") -> dict[str, Any]:
    """Detected facts, then the user's file over them; validated against the schema. ``framework``: the
    one that trains (harness/frameworks/backend.py); under TensorFlow, PyTorch still runs the reference's data path."""
    desc = detect(device)
    desc.update(submitter=submitter, division=division)
    if framework == "tensorflow":
        tf_version, keras_version = _version("tensorflow"), _version("keras")
        desc["framework"] = f"TensorFlow {tf_version} (Keras {keras_version})"
        desc["other_software_stack"] = (f"tensorflow-datasets {_version('tensorflow-datasets')}, "
                                        f"PyTorch {desc['software_versions']['torch']} (the reference's data path), "
                                        + desc["other_software_stack"])
        desc["software_versions"] = {**desc["software_versions"], "tensorflow": tf_version, "keras": keras_version,
                                     "tensorflow-datasets": _version("tensorflow-datasets")}
    if user_file:
        desc.update(load_user_file(user_file))
    for name in MLPERF_COUNT_FIELDS:  # a user's integer becomes MLPerf's string
        if type(desc.get(name)) is int:
            desc[name] = str(desc[name])
    desc["system_name"] = system_name or desc.get("system_name") or default_system_name(desc)
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(desc), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.absolute_path)) or "<top level>"
        raise UserError(f"system description{f' ({user_file})' if user_file else ''}: field '{where}': {e.message}")
    return desc


def default_system_name(desc: dict[str, Any]) -> str:
    """e.g. ``2xcpu-AMD-EPYC-9R45`` or ``1xNVIDIA-H200``: readable and filesystem-safe."""
    if str(desc.get("accelerators_per_node") or 0) != "0":  # MLPerf's string or an older file's integer
        name = f"{desc['accelerators_per_node']}x{desc['accelerator_model_name']}"
    else:
        name = f"{desc['host_processor_core_count']}xcpu-{desc['host_processor_model_name']}"
    return layout.to_name(name, layout.RUN_NAME_MAX)
