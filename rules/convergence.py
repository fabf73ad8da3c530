"""Reference convergence points, after MLPerf's RCP check: is a submission converging too fast?

The rules carry epochs-to-target of reference trials per global batch size. A closed submission
fails when its olympic-mean epochs-to-target lies below the smallest mean that a one-sided
two-sample t-test (alpha 0.05, equal variance, the submission assumed to have the reference's
spread, n = trials - 2 after dropping the fastest and slowest) cannot tell from the reference.
Between batch sizes the reference mean and standard deviation are interpolated linearly, after
pruning points slower than the interpolation of their neighbours; outside them there is no verdict
(the checker makes that an error in the closed division: CONVERGE-003). The curve band between two
calibrated batch sizes is the envelope of theirs: a curve at an intermediate batch size is expected
within the union of its neighbours' ranges, never narrower than either.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from statistics import mean, stdev
from typing import Any

import yaml

from trainmark.errors import UserError
from trainmark.rules.reference_code import implementation_of
from trainmark.rules.ruleset import BenchmarkRules

ALPHA = 0.05


def olympic(values: list[float]) -> list[float]:
    """Drop the fastest and the slowest (when at least 3 values remain meaningful)."""
    return sorted(values)[1:-1] if len(values) >= 3 else list(values)


@dataclass(frozen=True)
class RefPoint:
    batch_size: int
    mean: float
    std: float
    n: int
    between: tuple[int, int] | None = None   # the calibrated batch sizes an interpolated point lies between


def ref_points(points: list[dict]) -> list[RefPoint]:
    """Olympic mean and std of each reference batch size, pruned of points slower than their neighbours."""
    pts = []
    for p in sorted(points, key=lambda p: p["global_batch_size"]):
        kept = olympic([float(e) for e in p["epochs_to_target"]])
        if len(kept) >= 2:
            pts.append(RefPoint(p["global_batch_size"], mean(kept), stdev(kept), len(kept)))
    pruned = True
    while pruned and len(pts) >= 3:
        pruned = False
        for i in range(1, len(pts) - 1):
            if pts[i].mean > _interp(pts[i - 1], pts[i + 1], pts[i].batch_size)[0]:
                del pts[i]
                pruned = True
                break
    return pts


def _interp(a: RefPoint, b: RefPoint, bs: float) -> tuple[float, float]:
    w = (bs - a.batch_size) / (b.batch_size - a.batch_size)
    return a.mean + w * (b.mean - a.mean), a.std + w * (b.std - a.std)


def reference_at(points: list[RefPoint], batch_size: int) -> RefPoint | None:
    """The (interpolated) reference at ``batch_size``; None outside the measured range."""
    for p in points:
        if p.batch_size == batch_size:
            return p
    for a, b in zip(points, points[1:]):
        if a.batch_size < batch_size < b.batch_size:
            m, s = _interp(a, b, batch_size)
            return RefPoint(batch_size, m, s, min(a.n, b.n), (a.batch_size, b.batch_size))
    return None


def min_allowed_mean(ref: RefPoint, n_submission: int, alpha: float = ALPHA) -> float:
    """The smallest submission mean that the one-sided t-test cannot tell from the reference."""
    from scipy.special import stdtrit  # the Student-t quantile; scipy.stats would cost seconds of import

    df = ref.n + n_submission - 2
    t_crit = float(stdtrit(df, 1 - alpha)) if df > 0 else math.inf
    return float(ref.mean - t_crit * ref.std * math.sqrt(1 / ref.n + 1 / n_submission))


@dataclass(frozen=True)
class Verdict:
    ok: bool | None          # None: no reference at this batch size, no verdict
    submission_mean: float
    min_allowed: float | None
    reference: RefPoint | None
    message: str


def check(points: list[dict], batch_size: int, epochs_to_target: list[int], alpha: float = ALPHA) -> Verdict:
    """Judge a submission's epochs-to-target (one value per converged trial) at ``batch_size``."""
    kept = olympic([float(e) for e in epochs_to_target])
    sub_mean = mean(kept) if kept else math.nan
    ref = reference_at(ref_points(points), batch_size)
    if ref is None:
        sizes = [p["global_batch_size"] for p in points]
        return Verdict(None, sub_mean, None, None,
                       f"no reference convergence points at global batch size {batch_size} (rules have {sizes})")
    floor = min_allowed_mean(ref, len(kept), alpha)
    ok = bool(sub_mean >= floor)
    return Verdict(ok, sub_mean, floor, ref,
                   f"olympic-mean epochs to target {sub_mean:.2f} {'>=' if ok else '<'} {floor:.2f}, the fastest "
                   f"a one-sided t-test (alpha {alpha}) allows against the reference mean {ref.mean:.2f} "
                   f"(std {ref.std:.2f}, n {ref.n}) at batch {batch_size}")


def band_for(rules: BenchmarkRules | None, global_batch_size: Any, precision: Any,
             framework: object = None) -> dict[int, tuple[float, float]]:
    """``{epoch: (low, high)}`` of the rules' reference curve band (``curve_band``) for this batch size,
    precision and framework's implementation (``resnet-mini``, ``resnet-mini@tensorflow``); {} when there
    is none. Between two calibrated batch sizes, the envelope of both bands. The checker judges trials
    against it (CURVE-*), the report draws it."""
    spec = (rules.data.get("curve_band") if rules is not None else None) or {}
    implementation = implementation_of(rules, framework) if rules is not None else None
    bands = {band["global_batch_size"]: {int(e): (float(lo), float(hi)) for e, lo, hi in band["epochs"]}
             for band in spec.get("bands", [])
             if band["implementation"] == implementation and band["precision"] == precision}
    if type(global_batch_size) is not int:  # a logged value: anything (HPARAM-* report a bad one)
        return {}
    if global_batch_size in bands:
        return bands[global_batch_size]
    below = [b for b in bands if b < global_batch_size]
    above = [b for b in bands if b > global_batch_size]
    if not below or not above:
        return {}
    low, high = bands[max(below)], bands[min(above)]
    return {e: (min(low[e][0], high[e][0]), max(low[e][1], high[e][1])) for e in sorted(low.keys() & high.keys())}



def points_of(rules: BenchmarkRules, implementation: str) -> list[dict]:
    """The rules' convergence points of one implementation (a point without one is the PyTorch reference's)."""
    default = implementation_of(rules, None)
    return [p for p in rules.convergence["points"] if p.get("implementation", default) == implementation]

def calibrated_recipe(rules: BenchmarkRules, global_batch_size: int,
                      framework: str) -> tuple[dict[str, Any], str] | None:
    """The hyperparameters of the convergence point at exactly this batch size (this framework's implementation)
    and the command that measured it: the rules' defaults with that command's ``--hparam KEY=VALUE`` pairs (a point
    without a command ran the rules' ``convergence.command``). None when no point sits at this batch. Commands are
    the rules' own data, never a submission's."""
    for point in points_of(rules, implementation_of(rules, framework)):
        if point.get("global_batch_size") == global_batch_size:
            command = point.get("command") or rules.convergence.get("command") or ""
            recipe = {**rules.defaults(), "global_batch_size": global_batch_size}
            try:
                tokens = shlex.split(command)
                for flag, pair in zip(tokens, tokens[1:]):
                    key, sep, value = pair.partition("=")
                    if flag == "--hparam" and sep and key in recipe:
                        recipe[key] = yaml.safe_load(value)
            except (ValueError, yaml.YAMLError) as e:
                raise UserError(f"{rules.path}: convergence point at global batch {global_batch_size}: its command "
                                f"{command[:200]!r} cannot be read ({str(e).splitlines()[0]})") from None
            return recipe, command
    return None


def recipe_changes(rules: BenchmarkRules, hp: dict[str, Any], framework: str) -> list[str]:
    """What a run changes against the convergence point at its batch size (``opt_base_learning_rate 0.2, the
    point's 0.4``): allowed in the closed division within the rules' ranges, but that point's epochs were measured
    with the point's values. Empty when nothing differs or no point sits at this batch."""
    found = calibrated_recipe(rules, hp.get("global_batch_size"), framework)
    if found is None:
        return []
    recipe, _ = found
    return [f"{key} {hp[key]}, the point's {recipe[key]}" for key in sorted(recipe)
            if key in hp and hp[key] != recipe[key]]
