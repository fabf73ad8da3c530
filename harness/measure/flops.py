"""The achieved TFLOPS and utilization of a run, from the model FLOPs of one training step.

The count itself is the framework's (the framework seam's ``Backend.step_flops`` and
``Trainer.flops_per_step``: harness/frameworks/pytorch_flops.py for PyTorch, ``step_flops`` in
harness/frameworks/tensorflow_backend.py for TensorFlow), in one convention: 2 FLOPs per
multiply-add of matrix multiplications, convolutions and attention, forward and backward.
"""
from __future__ import annotations

__all__ = ["achieved_tflops", "utilization"]


def achieved_tflops(flops_per_step: int | None, steps: int, seconds: float) -> float | None:
    """FLOPs × steps / time, in TFLOP/s; None when the count or the time is missing."""
    if flops_per_step is None or seconds is None or seconds <= 0 or steps <= 0:
        return None
    return flops_per_step * steps / seconds / 1e12


def utilization(achieved: float | None, peak: float | None) -> float | None:
    """Fraction of ``peak`` (same unit as ``achieved``) reached; None when either is unknown."""
    if achieved is None or peak is None or peak <= 0:
        return None
    return achieved / peak
