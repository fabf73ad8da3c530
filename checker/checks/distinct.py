"""Are the trials distinct trainings, with weights that could have been evaluated? WORK-004, WORK-005.

A copy of one trial under another seed (to replace a slow trial) leaves two traces a forger cannot
easily avoid: byte-identical weights, and the same metric after every epoch. Trainings from distinct
seeds never give either: float rounding alone makes the weights differ, and two curves of three or
more evaluations agreeing to four decimals under different seeds has not happened in any calibration
(docs/calibration.md: 10 seeds per mini). Curves of fewer evaluations are not compared (coarse metrics
can agree by chance). A weight matrix or kernel (two or more dimensions) starts random and no training
makes it constant; one that is (say, zeroed) cannot be what reached the logged metric. One-dimensional
weights are not judged: a normalization's scale may stay at its initial 1.0 (a twin that does not train
it). ``check --reevaluate`` proves the rest by measuring the metric again.

Weights are read a tensor at a time (``SafeTree.read_range``) and hashed in chunks: memory stays
bounded by the largest tensor, time linear in the file.
"""
from __future__ import annotations

import hashlib

from trainmark.checker.read.safefs import Missing, SafeTree, UnsafeEntry
from trainmark.checker.read.safetensors_header import HeaderError, tensor_spans
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.codes import WORK_004, WORK_005
from trainmark.checker.verdict.findings import Findings
from trainmark.format import mllog

MIN_CURVE_EVALUATIONS = 3
MIN_CONSTANT_ELEMENTS = 16      # a random matrix of 16 or more values is never constant
FLOAT_DTYPES = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8}
MAX_TENSOR_BYTES = 1 << 30      # larger tensors are hashed but not scanned for constancy (1 GiB in memory)
CHUNK = 16 << 20


def weights_digest(tree: SafeTree, rel: str, findings: Findings) -> str | None:
    """The sha256 of the data section, and WORK-005 for every constant trained weight; None when unreadable
    (conformity's CONFORM-004 or LAYOUT-003 already says why)."""
    try:
        start, spans = tensor_spans(tree, rel)
    except (Missing, UnsafeEntry, HeaderError):
        return None
    digest = hashlib.sha256()
    constant = []
    for group in _groups(spans):  # small tensors in one read, a large one in CHUNK pieces
        begin, end = group[0][2], group[-1][3]
        data = tree.read_range(rel, start + begin, end - begin) if end - begin <= CHUNK else None
        for name, dtype, b, e, dimensions in group:
            if data is not None:
                pieces = [data[b - begin:e - begin]]
            else:
                pieces = (tree.read_range(rel, start + o, min(CHUNK, e - o)) for o in range(b, e, CHUNK))
            if _constant(name, dtype, dimensions, e - b, pieces, digest):
                constant.append(name)
    if constant:
        findings.add(WORK_005, rel, f"{len(constant)} trained weight tensor(s) hold one value repeated: "
                     f"{', '.join(constant[:5])}{' ...' if len(constant) > 5 else ''}",
                     expected="trained weights", seen=f"{len(constant)} constant tensors")
    return digest.hexdigest()


def _groups(spans: list[tuple[str, str, int, int, int]]) -> list[list[tuple[str, str, int, int, int]]]:
    """Consecutive tensors together up to CHUNK bytes; a tensor larger than CHUNK alone."""
    groups: list[list[tuple[str, str, int, int, int]]] = []
    for span in spans:
        if groups and span[3] - groups[-1][0][2] <= CHUNK:
            groups[-1].append(span)
        else:
            groups.append([span])
    return groups


def _constant(name: str, dtype: str, dimensions: int, nbytes: int, pieces, digest) -> bool:
    """Hash the tensor's bytes; True when it is a trained weight matrix whose every value is the same."""
    size = FLOAT_DTYPES.get(dtype)
    scan = size is not None and name.endswith("weight") and dimensions >= 2 \
        and MIN_CONSTANT_ELEMENTS * size <= nbytes <= MAX_TENSOR_BYTES
    first, same = b"", True
    for piece in pieces:
        digest.update(piece)
        if scan and same:
            first = first or piece[:size]
            # a trained tensor differs within its first values: only a constant one is compared whole
            same = piece[size:2 * size] in (first, b"") and piece == first * (len(piece) // size)
    return scan and same


def check_weights_distinct(digests: dict[int, tuple[str, str]], seeds: dict[int, object], findings: Findings) -> None:
    """``digests``: trial -> (weights file, sha256 of its data). Two trials with the same weights under different
    seeds: WORK-004 (the same seed twice is SEED-002's finding: one finding per problem)."""
    first_with: dict[str, int] = {}
    for k in sorted(digests):
        rel, digest = digests[k]
        if digest in first_with and seeds.get(first_with[digest]) == seeds.get(k):
            continue
        if digest in first_with:
            other = first_with[digest]
            findings.add(WORK_004, rel, f"trial {k}'s weights are byte for byte trial {other}'s: not a distinct "
                         "training", expected="weights of its own training", seen=f"the weights of trial {other}")
        else:
            first_with[digest] = k


def check_curves_distinct(records: list[TrialRecord], findings: Findings) -> None:
    """Identical metric curves (3+ evaluations) under different seeds: WORK-004."""
    first_with: dict[tuple, TrialRecord] = {}
    for rec in records:
        curve = tuple((ev.epoch, ev.accuracy) for ev in rec.evals)
        if len(curve) < MIN_CURVE_EVALUATIONS:
            continue
        other = first_with.get(curve)
        if other is None:
            first_with[curve] = rec
        elif other.value(mllog.SEED) != rec.value(mllog.SEED):
            findings.add(WORK_004, rec.rel, f"trial {rec.trial} (seed {rec.value(mllog.SEED)!r}) logs the same "
                         f"metric after every one of its {len(curve)} evaluations as trial {other.trial} (seed "
                         f"{other.value(mllog.SEED)!r})", line=rec.evals[0].accuracy_line,
                         expected="the curve of its own seed", seen=f"the curve of trial {other.trial}")
