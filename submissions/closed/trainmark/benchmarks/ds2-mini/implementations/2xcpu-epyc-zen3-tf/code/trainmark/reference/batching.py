"""Length bucketing, shared by the references whose samples vary in length (speech, text).

Sorting a whole epoch by length would make every epoch's batches the same; sorting only
within groups of batches keeps the shuffle while most of a batch is real data, not padding.
"""
from __future__ import annotations

import torch


def length_buckets(lengths: torch.Tensor, local_batch: int, rank: int, world: int, generator: torch.Generator,
                   group_batches: int) -> list[torch.Tensor]:
    """This rank's batches (item indices) for one epoch: shuffled, sorted by length within
    groups of ``group_batches`` global batches (the last group takes the remainder), global
    batches in random order, the ragged end dropped."""
    n, size = len(lengths), local_batch * world
    usable = n - n % size
    order = torch.randperm(n, generator=generator)
    group = size * group_batches
    bounds = list(range(0, usable, group)) + [usable]
    if len(bounds) > 2 and bounds[-1] - bounds[-2] < group:
        del bounds[-2]  # a short last group joins the one before, so no group is too small to sort
    batches = []
    for start, stop in zip(bounds, bounds[1:]):
        idx = order[start:stop]
        idx = idx[torch.argsort(lengths[idx], stable=True)]
        batches.extend(idx[i:i + size] for i in range(0, len(idx), size))
    shuffled = torch.randperm(len(batches), generator=generator)
    return [batches[int(b)][rank * local_batch:(rank + 1) * local_batch] for b in shuffled]
