"""Where a Keras twin runs: the CPU, one GPU, every GPU of the machine (MirroredStrategy), or a TPU (TPUStrategy).

TensorFlow sees devices on its own (its wheel may lack CUDA while PyTorch's has it), so ``--device`` is read
here for ``--framework tensorflow``: ``auto`` is a TPU when one is reachable, else TensorFlow's GPUs (all of
them, mirrored, when there are several), else the CPU; ``cpu``; ``cuda`` (every GPU TensorFlow sees) or
``cuda:INDEX`` (one); ``tpu``. The answer is a ``Placement`` the trainer builds its model under, plus the
torch-style device the rest of the harness names (meters, system description): 'cuda:i', 'xla:0' for a TPU.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

from trainmark.errors import UserError


@dataclass
class Placement:
    """How a twin is placed: ``strategy`` None runs on ``devices[0]``; else the strategy's replicas."""
    label: str                      # 'cpu', 'gpu:1', 'mirrored over 4 GPUs', 'tpu (8 cores)'
    harness_device: str             # what meters and the system description are told: 'cpu', 'cuda:1', 'xla:0'
    devices: list[str] = field(default_factory=list)   # TensorFlow device names
    strategy: Any = None

    @property
    def replicas(self) -> int:
        return self.strategy.num_replicas_in_sync if self.strategy is not None else 1

    def scope(self):
        """Where variables are created: the strategy's scope, or the one device."""
        if self.strategy is not None:
            return self.strategy.scope()
        return _tf().device(self.devices[0]) if self.devices else contextlib.nullcontext()


def _tf():
    from trainmark.reference.tf_import import tf
    return tf


_PLACED: dict[str, Placement] = {}  # one strategy per process and spec (a TPU system is initialised once)


def resolve(spec: str) -> str:
    """``--device`` for a TensorFlow run as the harness names it: 'cpu', 'cuda', 'cuda:1', 'xla:0' (a TPU)."""
    return place(spec).harness_device


def for_device(device, local_rank: int | None = None) -> Placement:
    """The placement of a device ``resolve`` named (several ranks: each rank its local GPU)."""
    text = str(device)
    if local_rank is not None and text != "cpu":
        text = f"cuda:{local_rank}"
    return place("tpu" if text.startswith("xla") else text)


def check_precision(precision: str, placement: Placement) -> None:
    """Refuse, before anything is written, a precision the placement cannot run."""
    if precision != "fp32":
        mixed_precision_policy(placement)


def place(spec: str, tf=None, tpu_resolver=None) -> Placement:
    """The placement ``--device spec`` asks for, or a one-line UserError naming what TensorFlow found."""
    spec = (spec or "auto").strip()
    if tf is None and spec in _PLACED:
        return _PLACED[spec]
    placement = _place(spec, tf or _tf(), tpu_resolver)
    if tf is None:
        _PLACED[spec] = placement
    return placement


def _place(spec: str, tf, tpu_resolver) -> Placement:
    if spec == "cpu":
        return Placement("cpu", "cpu", ["/CPU:0"])
    if spec in ("auto", "tpu"):
        tpu = _tpu(tf, tpu_resolver, required=spec == "tpu")
        if tpu is not None:
            return tpu
    gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
    if spec == "auto":
        return _gpus(gpus, None) if gpus else Placement("cpu", "cpu", ["/CPU:0"])
    m = re.fullmatch(r"(cuda|gpu)(?::(\d+))?", spec)
    if not m:
        raise UserError(f"--device {spec} with --framework tensorflow: use auto, cpu, cuda[:INDEX] or tpu "
                        f"({_found(gpus)})")
    if not gpus:
        raise UserError(f"--device {spec}: TensorFlow sees no GPU ({_found(gpus)}; a TensorFlow wheel without "
                        "CUDA: pip install 'tensorflow[and-cuda]')")
    return _gpus(gpus, None if m.group(2) is None else int(m.group(2)))


def _gpus(gpus: list[str], index: int | None) -> Placement:
    if index is None and len(gpus) > 1:
        tf = _tf()
        return Placement(f"mirrored over {len(gpus)} GPUs", "cuda", gpus, tf.distribute.MirroredStrategy(gpus))
    index = index or 0
    if index >= len(gpus):
        raise UserError(f"--device cuda:{index}: TensorFlow sees {len(gpus)} GPU(s)")
    return Placement(f"gpu:{index}", f"cuda:{index}", [gpus[index]])


def _tpu(tf, resolver, required: bool) -> Placement | None:
    """A TPUStrategy when a TPU is reachable (TPUClusterResolver finds one); None, or an error if required."""
    try:
        resolver = resolver or tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as exc:
        if required:
            raise UserError(f"--device tpu: no TPU reachable ({exc})") from None
        return None
    return Placement(f"tpu ({strategy.num_replicas_in_sync} cores)", "xla:0", [], strategy)


def _found(gpus: list[str]) -> str:
    return f"TensorFlow found {len(gpus)} GPU(s)" if gpus else "TensorFlow found only the CPU"


def mixed_precision_policy(placement: Placement) -> str:
    """Keras mixed precision for ``--precision amp``: bfloat16 on GPUs and TPUs (no loss scaling needed, as with
    PyTorch's bf16 autocast; GPUs before Ampere lack bf16 and are not supported for amp); refused on the CPU."""
    if placement.harness_device == "cpu":
        raise UserError("--framework tensorflow --precision amp: Keras mixed precision runs on GPUs and TPUs "
                        "here; on the CPU use --precision fp32 (or --framework pytorch, whose amp is bf16)")
    return "mixed_bfloat16"
