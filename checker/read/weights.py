"""A sample of a trial's trained weights, read from ``model.safetensors``: what distinctness (WORK-004) and
constancy (WORK-005) are judged on.

Reads at most SAMPLE values of each float tensor of 2+ dimensions and MAX_SAMPLED_BYTES in all, after the
header's sizes were checked against the file (``safetensors_header.read_header``): a header declaring huge
tensors costs the blocks sampled from them, never their size. The blocks of a large tensor lie where a draw
made once per process puts them, the same for every trial, unknown before the check runs (a forger cannot
perturb only the values compared).
"""
from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field

import numpy as np

from trainmark.checker.read.safefs import Missing, SafeTree, UnsafeEntry
from trainmark.checker.read.safetensors_header import Header, HeaderError, read_header, tensor_spans

MIN_CONSTANT_ELEMENTS = 16      # a random matrix of 16 or more values is never constant
FLOAT_DTYPES = {"F16": "<f2", "BF16": "<u2", "F32": "<f4", "F64": "<f8"}
SIZES = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8}
SAMPLE = 16384                  # values compared per tensor: all of a smaller one, random blocks of a larger one
BLOCK = 256                     # values per block read from a larger tensor
MAX_SAMPLED_BYTES = 16 << 20    # read from one weights file at most (every reference samples under 7 MiB)
_DRAW = secrets.randbits(64)    # where the blocks of a large tensor lie: the same for every trial of this check


@dataclass
class Weights:
    """Each float tensor of 2+ dimensions, by name, as its values (all of them, or the same random blocks for
    every trial of this check), and the trained weights among them that hold one value repeated."""
    rel: str
    values: dict[str, np.ndarray] = field(default_factory=dict)
    constant: list[str] = field(default_factory=list)   # names ending in "weight" whose values are all equal


def sample_weights(tree: SafeTree, rel: str, header: Header) -> Weights:
    """The sampled values of the tensors ``header`` (already validated against the file) describes."""
    weights, budget = Weights(rel), MAX_SAMPLED_BYTES
    for name, dtype, begin, end, dimensions in header.spans:
        size = SIZES.get(dtype)
        if size is None or dimensions < 2 or (end - begin) // size < MIN_CONSTANT_ELEMENTS:
            continue
        want = min(SAMPLE, (end - begin) // size) * size
        if want > budget:
            break
        budget -= want
        values = _sample(tree, rel, header.data_start + begin, (end - begin) // size, dtype, name)
        weights.values[name] = values
        if name.endswith("weight") and np.all(values == values[0]):
            weights.constant.append(name)
    return weights


def read_weights(tree: SafeTree, rel: str) -> Weights | None:
    """The sample of a weights file on its own (None when its header is refused or it cannot be read)."""
    try:
        header = read_header(tree, rel)
    except (Missing, UnsafeEntry, HeaderError):
        return None
    return sample_weights(tree, rel, header)


def _sample(tree: SafeTree, rel: str, offset: int, count: int, dtype: str, name: str) -> np.ndarray:
    """The tensor's values as float32: all of them up to SAMPLE, else SAMPLE // BLOCK blocks at positions drawn
    from (_DRAW, name, count), so every trial of this check is sampled at the same places."""
    size = SIZES[dtype]
    if count <= SAMPLE:
        pieces = [tree.read_range(rel, offset, count * size)]
    else:
        draw = random.Random(f"{_DRAW}:{name}:{count}")
        starts = sorted(draw.sample(range(count // BLOCK), SAMPLE // BLOCK))
        pieces = [tree.read_range(rel, offset + s * BLOCK * size, BLOCK * size) for s in starts]
    raw = np.frombuffer(b"".join(pieces), dtype=FLOAT_DTYPES[dtype])
    if dtype == "BF16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.astype(np.float32)


class TooLarge(Exception):
    """A model.safetensors whose header declares more bytes of tensors than the caller allows."""

    def __init__(self, declared: int):
        super().__init__(f"{declared} bytes of tensors declared")
        self.declared = declared


def read_weights_bytes(tree: SafeTree, rel: str, limit: int) -> bytes:
    """The bytes of a model.safetensors, read only after its header's sizes were checked against the file and
    against ``limit`` (``TooLarge`` beyond it): never more than ``limit`` bytes of tensors are read."""
    start, spans = tensor_spans(tree, rel)
    declared = sum(end - begin for _, _, begin, end, _ in spans)
    if declared > limit:
        raise TooLarge(declared)
    return tree.read_bytes(rel, start + declared)
