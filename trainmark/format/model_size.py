"""How every output names a model's size: parameters and FLOPs per training step, an open-division model beside
the reference's (the run's banner, ``trainmark check``'s CONFORM-003 and the report say it in the same words)."""
from __future__ import annotations


def flops_words(flops: object) -> str:
    """``5.32 GFLOP per step`` (``not counted`` for a missing or non-integer count)."""
    if type(flops) is not int or flops < 0:
        return "FLOPs per step not counted"
    for scale, unit in ((1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP")):
        if flops >= scale:
            return f"{flops / scale:.2f} {unit} per step"
    return f"{flops:,} FLOP per step"


def size_words(parameters: object, flops: object) -> str:
    """``308,538 parameters, 5.32 GFLOP per step``."""
    count = f"{parameters:,} parameters" if type(parameters) is int else "parameters unknown"
    return f"{count}, {flops_words(flops)}"


def beside_reference(parameters: object, flops: object, reference: str, ref_parameters: object,
                     ref_flops: object) -> str:
    """``1,234 parameters, 0.12 GFLOP per step; the reference resnet-mini: 308,538 parameters, 5.32 GFLOP per
    step``."""
    return f"{size_words(parameters, flops)}; the reference {reference}: {size_words(ref_parameters, ref_flops)}"
