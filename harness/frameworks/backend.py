"""The framework seam: everything the trial loop needs from a deep-learning framework, behind one interface.

The trial loop (harness/trial.py), the sweep, ``trainmark scale`` and the benchmarks never call
the framework directly: a ``Backend`` builds a ``Trainer`` for one trial, which owns the model,
optimizer, precision and the one training step that ``trainmark run``, ``trainmark sweep`` and
the benchmarks' "ours" side all time. PyTorch is the first implementation
(harness/frameworks/pytorch_backend.py); another framework (TensorFlow) implements the same two protocols in
its own module and is named in ``BACKENDS``. This module imports no framework.

The reference (trainmark.reference) still owns the model, data and recipe; the backend only runs them.
"""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

from trainmark.errors import UserError
from trainmark.harness.frameworks.quiet_import import import_quietly

if TYPE_CHECKING:
    from trainmark.harness.frameworks.distributed import Dist


class Trainer(Protocol):
    """One trial's model, optimizer and training step."""

    precision_used: str          # the label logged: fp32, amp-bf16 or amp-fp16
    local_batch: int             # samples per step on this rank
    samples_per_step: int        # samples per step over every rank
    steps_per_epoch: int
    structure: dict              # trainmark.format.structure description, with its fingerprint
    flops_per_step: int | None   # model FLOPs of one step at the global batch (None: uncountable)

    def epoch_batches(self, epoch: int) -> Iterator[Any]: ...
    def prepare(self, batch: Any) -> Any: ...            # a reference batch as ``step`` takes it
    def step(self, batch: Any, sync: bool = True) -> None: ...
    def loss_value(self) -> float: ...
    def diverged(self) -> bool: ...
    def evaluate(self) -> float: ...
    def save_weights(self, path: Path) -> None: ...


class Backend(Protocol):
    name: str
    device: Any                  # the device it trains on (a torch.device: harness/frameworks/pytorch_runtime.py)
    dist: Dist                   # this process's rank in the run (one rank: Dist())

    def load_data(self, ref, rules, data_dir: Path) -> Any: ...   # the reference's data, as this framework reads it
    def trainer(self, ref, build_model: Callable[[], Any], hp: dict[str, Any], data, seed: int) -> Trainer: ...
    def precision_label(self) -> str: ...
    def sync(self) -> None: ...  # wait for the device's queued work (a window boundary reads the clock after it)
    # model FLOPs of one training step of ``ref`` at ``batch_size`` (None: uncountable) and why not
    def step_flops(self, ref, hp: dict[str, Any], batch_size: int) -> tuple[int | None, str | None]: ...


# name -> "module:class", imported only when that framework runs
BACKENDS = {"pytorch": "trainmark.harness.frameworks.pytorch_backend:PyTorchBackend",
            "tensorflow": "trainmark.harness.frameworks.tensorflow_backend:TensorFlowBackend"}
DISPLAY = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}  # how messages spell them
# the distribution each framework needs beyond the base install, and the command that adds it
REQUIRES = {"tensorflow": ("tensorflow", "pip install -e '.[tensorflow]' (or bash scripts/install.sh)")}


def available(name: str) -> None:
    """Raise a one-line UserError when framework ``name`` is unknown or not installed (no import)."""
    if name not in BACKENDS:
        raise UserError(f"--framework {name}: use {' or '.join(BACKENDS)}")
    if name in REQUIRES and importlib.util.find_spec(REQUIRES[name][0]) is None:
        raise UserError(f"--framework {name} needs {REQUIRES[name][0]}, which is not installed: "
                        f"{REQUIRES[name][1]}")


def implements(name: str, rules) -> None:
    """Raise a one-line UserError when framework ``name`` has no implementation of ``rules``' benchmark (its
    rule file names none under ``implementations``; nothing is imported): said before any data is checked or
    any rank starts."""
    from trainmark.rules import load_ruleset

    if name in rules.implementations:
        return
    try:  # the benchmarks of the same rules that have one (read from their rule files)
        others = load_ruleset(rules.version, rules.path.parent.parent)
    except UserError:
        others = {}
    have = sorted(n for n, r in others.items() if name in r.implementations)
    raise UserError(f"--framework {name}: {rules.name} has no {DISPLAY.get(name, name)} reference yet "
                    f"(available: {', '.join(have)})")


def resolve_device(name: str, spec: str):
    """``--device spec`` as framework ``name`` sees this machine (PyTorch's devices, or TensorFlow's GPUs and TPUs)."""
    available(name)
    module, _, _ = BACKENDS[name].partition(":")
    return import_quietly(module).resolve_device(spec)


def backend(name: str, device, precision: str, dist: Dist | None = None) -> Backend:
    """The backend ``name`` for one device and precision (``dist``: this rank; None: one process)."""
    available(name)
    module, _, cls = BACKENDS[name].partition(":")
    kind = getattr(import_quietly(module), cls)
    return kind(device, precision) if dist is None else kind(device, precision, dist)
