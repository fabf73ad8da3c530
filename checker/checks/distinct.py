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

Weights are compared tensor by tensor, by name and value (the relative distance of each tensor shared by two
trials, their median), never by bytes or file order: a copy with 1e-6 noise or with its tensors written in
another order is as close as the original. Weights swapped between two trials are each other's, distinct: only
re-evaluation (checks/reeval.py) sees that a trial's weights do not give its own logged metric. At most SAMPLE
values of a tensor are read (random blocks of a larger one, through ``SafeTree.read_range``) and at most
MAX_SAMPLED_BYTES of a file: reading is bounded whatever sizes the header declares (checked against the file
before any data). What this cannot see: a copy whose hidden units were permuted (the same function, far weights).
"""
from __future__ import annotations

import math

import numpy as np

from trainmark.checker.checks.judgement import Judgement
from trainmark.checker.read.evidence import BenchmarkEvidence
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.read.weights import Weights
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog

WORK_004 = rule(
    "WORK-004", ERROR, "two trials are not distinct: identical weights, or identical metric curves under different "
    "seeds",
    fix="run every trial; a copy of another trial is not a trial",
    why="A copied trial leaves identical weights or the same metric after every epoch; distinct seeds never do (float "
    "rounding alone differs). Curves of fewer than 3 evaluations are not compared; it cannot catch a copy whose "
    "weights and metrics were perturbed.",
    bad="trial_5/model.safetensors byte-identical to trial_2's",
    good="weights and curves that differ between trials", module=__name__)
WORK_005 = rule(
    "WORK-005", ERROR, "a trained weight matrix or kernel is constant (every value the same): these are not the "
    "weights that were evaluated",
    fix="submit the model.safetensors the harness wrote at the end of the trial",
    why="A trained matrix or kernel starts random and never becomes constant; a constant one (say zeroed) cannot be "
    "what reached the logged metric. One-dimensional weights are not judged (a norm's scale may stay 1.0).",
    bad="a conv kernel of all zeros",
    good="the weights as trained", module=__name__)

MIN_CURVE_EVALUATIONS = 3
# Two trials whose weight tensors lie closer than this (median over the tensors they share of the relative distance
# |a - b| / max(|a|, |b|)) are one training. The committed examples' closest pair of distinct seeds is 0.88-0.89
# (vgg-mini, TensorFlow, trials 3 and 5: the blocks of a large tensor are drawn anew each check, so the third digit
# moves; 120 pairs in 12 folders, most near 1.4 = sqrt(2), two independent random
# draws: a seeded initialisation stays that far from another one after training on the same data;
# `python benchmarks/evidence_cost.py` prints every folder's closest pair). A copy lies under 1e-3 even with noise
# a thousand times float32's rounding; noise large enough to reach 0.1 (10 % of every weight) makes another model,
# whose metric re-evaluation measures. 0.1 sits nine times below the closest honest pair.
CLONE_DISTANCE = 0.1


def check_constant(weights: Weights | None, findings: Findings) -> None:
    """WORK-005 for every trained weight matrix of the trial that holds one value repeated (None: unreadable
    weights, which conformity's CONFORM-004 or LAYOUT-003 already reports)."""
    if weights is not None and weights.constant:
        constant = weights.constant
        findings.add(WORK_005, weights.rel, f"{len(constant)} trained weight tensor(s) hold one value repeated: "
                     f"{', '.join(constant[:5])}{' ...' if len(constant) > 5 else ''}",
                     expected="trained weights", seen=f"{len(constant)} constant tensors")


def distance(a: Weights, b: Weights) -> float | None:
    """The median over the tensors both hold (same name, same sampled length) of |a - b| / max(|a|, |b|): 0 for a
    copy, whatever order its tensors were written in; None when they share no tensor."""
    shared = [n for n in a.values.keys() & b.values.keys() if len(a.values[n]) == len(b.values[n])]
    if not shared:
        return None
    per_tensor = []
    for name in shared:
        x, y = a.values[name], b.values[name]
        scale = max(float(np.linalg.norm(x)), float(np.linalg.norm(y)))
        per_tensor.append(float(np.linalg.norm(x - y)) / scale if scale > 0 and math.isfinite(scale) else 0.0)
    return float(np.median(per_tensor))


def check_weights_distinct(digests: dict[int, tuple[str, Weights]], seeds: dict[int, object],
                           findings: Findings) -> None:
    """``digests``: trial -> (weights file, its Weights). Two trials under different seeds whose weights lie
    closer than CLONE_DISTANCE: WORK-004 (the same seed twice is SEED-002's finding: one finding per problem)."""
    trials = sorted(digests)
    for i, k in enumerate(trials):
        for other in trials[:i]:
            if seeds.get(other) == seeds.get(k):
                continue
            d = distance(digests[other][1], digests[k][1])
            if d is not None and d < CLONE_DISTANCE:
                findings.add(WORK_004, digests[k][0], f"trial {k}'s weights lie {d:.2g} from trial {other}'s (median "
                             f"relative distance of their tensors; trials of distinct seeds lie {CLONE_DISTANCE:g} or "
                             "more apart): not a distinct training", expected=f">= {CLONE_DISTANCE:g}",
                             seen=f"{d:.2g} from trial {other}")
                break


def check_curves_distinct(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """Identical metric curves (3+ evaluations) under different seeds: WORK-004."""
    records = judged.ordered
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
