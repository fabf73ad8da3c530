"""PyTorch's side of ``trainmark check --reevaluate`` (harness/reevaluate.py): a submission's weights, read
with safetensors only, loaded into the reference model the trusted rules name, and scored by the trainer's own
``evaluate`` (the reference's evaluation, at the trial's precision), not by a second evaluation loop."""
from __future__ import annotations

from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors

from trainmark.harness.frameworks.pytorch_backend import PyTorchBackend
from trainmark.harness.frameworks.pytorch_runtime import check_device


class WeightsRefused(Exception):
    """Weights that are no safetensors file, or do not fit the reference model (names, shapes)."""


class PyTorchEvaluator:
    """One benchmark's reference model and evaluation data, built once; ``measure`` scores one trial's weights."""

    def __init__(self, ref, rules, data_dir, device: str, precision: str):
        backend = PyTorchBackend(check_device(device), precision)
        data = backend.load_data(ref, rules, data_dir)
        # a trainer without FLOP counting: its model, autocast and evaluate() are what a trial scored with
        self.trainer = backend.trainer(ref, ref.build_model, rules.defaults(), data, seed=0, count_flops=False)

    def measure(self, weights: bytes) -> float:
        """The metric of ``weights`` (the bytes of a model.safetensors) on the full evaluation set."""
        self.trainer.model.load_state_dict(tensors(weights, self.trainer.model.state_dict()), strict=True)
        with torch.inference_mode():
            return float(self.trainer.evaluate())


def tensors(weights: bytes, expected: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file (never pickle), each of the name and shape ``expected`` holds;
    WeightsRefused says the first few differences."""
    try:
        loaded = load_safetensors(weights)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise WeightsRefused(f"not a readable safetensors file: {exc}") from None
    refuse_misfits({n: tuple(t.shape) for n, t in loaded.items()}, {n: tuple(t.shape) for n, t in expected.items()})
    return loaded


def refuse_misfits(loaded: dict[str, tuple], expected: dict[str, tuple]) -> None:
    """WeightsRefused naming the first few tensors (name -> shape) that differ from the reference's."""
    problems = [f"{name} missing" for name in sorted(expected.keys() - loaded.keys())]
    problems += [f"{name} is not in the reference" for name in sorted(loaded.keys() - expected.keys())]
    problems += [f"{name} has shape {list(loaded[name])}, the reference {list(expected[name])}"
                 for name in sorted(expected.keys() & loaded.keys()) if loaded[name] != expected[name]]
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise WeightsRefused(f"the weights do not fit the reference model: {'; '.join(problems[:3])}{more}")
