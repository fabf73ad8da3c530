"""TensorFlow's side of ``trainmark check --reevaluate`` (harness/reevaluate.py): a TensorFlow trial's weights
(saved in the PyTorch reference's names and layouts, reference/keras_twins/weights.py), read with safetensors
only, laid into the benchmark's Keras twin through that mapping, and scored by the TensorFlow trainer's own
``evaluate`` (the reference's evaluation with the twin standing in), on the data as a TensorFlow trial reads it."""
from __future__ import annotations

from typing import Any

from trainmark.reference.tf_import import tf  # noqa: F401 - first: it imports TensorFlow safely beside PyTorch

# isort: split
import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load as load_safetensors

from trainmark.harness.frameworks.pytorch_reevaluate import WeightsRefused, refuse_misfits
from trainmark.harness.frameworks.tensorflow_backend import TensorFlowBackend
from trainmark.reference.keras_twins import weights as keras_weights


class TensorFlowEvaluator:
    """One benchmark's Keras twin and evaluation data, built once; ``measure`` scores one trial's weights."""

    def __init__(self, ref, rules, data_dir, device: str, precision: str):
        backend = TensorFlowBackend(device, precision)
        data = backend.load_data(ref, rules, data_dir)
        self.trainer = backend.trainer(ref, ref.build_model, rules.defaults(), data, seed=0, count_flops=False)
        self.expected = keras_weights.tensors(self.trainer.model)[0]

    def measure(self, weights: bytes) -> float:
        """The metric of ``weights`` (the bytes of a model.safetensors) on the full evaluation set."""
        keras_weights.load(self.trainer.model, arrays(weights, self.expected))
        return float(self.trainer.evaluate())


def arrays(weights: bytes, expected: dict[str, Any]) -> dict[str, np.ndarray]:
    """The arrays of a safetensors file (never pickle), each of the name and shape ``expected`` holds."""
    try:
        loaded = load_safetensors(weights)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise WeightsRefused(f"not a readable safetensors file: {exc}") from None
    refuse_misfits({n: tuple(a.shape) for n, a in loaded.items()}, {n: tuple(a.shape) for n, a in expected.items()})
    return loaded
