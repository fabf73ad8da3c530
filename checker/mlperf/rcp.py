"""MLPerf's RCP check and the scaling factor it computes, in our own code.

Specification: ``mlperf_logging.rcp_checker.rcp_checker`` (``check_directory`` with
``rcp_pass='pruned_rcps'``, as the package checker calls it). The reference convergence
points are mlperf-logging's ``rcps_<benchmark>.json`` for the ruleset, read as JSON
(``mlperf_data``). Per reference point: the olympic mean and the population standard
deviation of its epochs (or samples) to converge, and the smallest mean a submission may
have (a one-sided t-test at alpha 0.05, found by bisection to 1e-4); the points are pruned
(those with a smaller batch size than the fastest-converging one, then every point slower
than the interpolation of its neighbours), and a batch size between two points is judged
against their linear interpolation. A submission whose olympic mean is below the reference
mean but within the allowed speed-up passes with its score multiplied by
``reference mean / submission mean`` (the scaling factor, never below 1); one below the
allowed speed-up fails. The factor is computed here, never read from the submission.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtr

from trainmark.checker.mlperf import mlperf_data
from trainmark.format.mllog_read import Event

NOT_CONVERGED = 1e9           # what MLPerf counts for a run that did not converge (the slowest, dropped)
ALPHA = 0.05
TOLERANCE = 1e-4
KEYS = frozenset({"global_batch_size", "submission_benchmark", "eval_accuracy", "eval_error", "run_stop"})  # it reads
# read_submission_file: these benchmarks converge in metadata.samples_count, stable_diffusion at the first
# evaluation with FID <= 90 and CLIP >= 0.15 (inline literals there, so stated here)
SAMPLES_COUNT_BENCHMARKS = frozenset({"llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b", "gpt_oss_20b",
                                      "deepseekv3_671b", "qwen35_397b_grpo", "dlrmv4"})
SAMPLES_KEY_BENCHMARKS = frozenset({"llama2_70b_lora", "flux1"})  # their RCP files say "samples to converge"
STABLE_DIFFUSION_FID, STABLE_DIFFUSION_CLIP = 90.0, 0.15
LLAMA405B_SAMPLES_OFFSET = 46080   # from Training 5.0.0 on, llama31_405b's allowed speed-up uses min - 46080


@dataclass(frozen=True)
class Reference:
    """One reference convergence point with the statistics the RCP checker derives from it."""
    name: str
    benchmark: str
    batch_size: float
    mean: float
    stdev: float
    min_mean: float         # the smallest olympic mean a submission may have at this point


@dataclass(frozen=True)
class RunConvergence:
    """What one result file says for the RCP check: batch size, benchmark, epochs (or samples) to converge."""
    batch_size: object
    benchmark: object
    epochs: float           # NOT_CONVERGED when the run did not converge
    problem: str = ""       # why the file cannot be read for the check (MLPerf's checker crashes on it)


@dataclass(frozen=True)
class RcpVerdict:
    passed: bool
    message: str
    scaling_factor: float = 1.0   # what MLPerf multiplies the score by (1 unless passed and faster than the RCP)
    bypassable: bool = False      # a failure package_checker_params' rcp-bypass would let through
    reference: str = ""
    submission_mean: float | None = None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bool(np.isfinite(value))


def _eval_point(event: Event, benchmark: object, ruleset: str, diffusion: dict) -> tuple[float | None, str]:
    """The convergence figure one eval_accuracy/eval_error record gives (diffusion's are collected)."""
    meta = event.metadata
    if benchmark == "stable_diffusion":
        step = meta.get("step_num" if ruleset == "3.1.0" else "samples_count")
        if not _is_number(step) or not isinstance(meta.get("metric"), str) or not _is_number(event.value):
            return None, f"line {event.line}: {event.key} without a numeric step, a metric name and a value"
        diffusion[step][meta["metric"]] = event.value
        return None, ""
    field = "samples_count" if benchmark in SAMPLES_COUNT_BENCHMARKS else "epoch_num"
    if not _is_number(meta.get(field)):
        return None, f"line {event.line}: {event.key} has no numeric metadata.{field}"
    return (meta[field] if field == "samples_count" else round(meta[field], 3)), ""


def run_convergence(events: list[Event], ruleset: str) -> RunConvergence:
    """The RCP checker's reading of one file: the last global_batch_size and submission_benchmark, and at a
    successful run_stop the last evaluation's epoch (samples), or diffusion's first passing step."""
    batch_size = benchmark = point = None
    epochs = NOT_CONVERGED
    diffusion: dict = defaultdict(dict)
    for event in events:
        if event.key == "global_batch_size":
            batch_size = event.value
        elif event.key == "submission_benchmark":
            benchmark = event.value
        elif event.key in ("eval_accuracy", "eval_error"):
            value, problem = _eval_point(event, benchmark, ruleset, diffusion)
            if problem:
                return RunConvergence(batch_size, benchmark, NOT_CONVERGED, problem)
            point = value if value is not None else point
        elif event.key == "run_stop":
            if event.metadata.get("status") != "success":
                epochs = NOT_CONVERGED
                continue
            if benchmark == "stable_diffusion":
                passing = [s for s, m in diffusion.items() if _is_number(m.get("FID")) and _is_number(m.get("CLIP"))
                           and m["FID"] <= STABLE_DIFFUSION_FID and m["CLIP"] >= STABLE_DIFFUSION_CLIP]
                point = min(passing) if passing else None
            if point is None:
                return RunConvergence(batch_size, benchmark, NOT_CONVERGED,
                                      f"line {event.line}: run_stop 'success' without a converging evaluation")
            epochs = point
    return RunConvergence(batch_size, benchmark, epochs)


def _one_sided_p(mean1: float, mean2: float, stdev: float, n1: float, n2: float) -> float:
    """P(T <= t) of the equal-variance two-sample t statistic (scipy's ttest_ind_from_stats, one-sided)."""
    df = n1 + n2 - 2.0
    pooled = ((n1 - 1) * stdev ** 2 + (n2 - 1) * stdev ** 2) / df
    t = (mean1 - mean2) / np.sqrt(pooled * (1.0 / n1 + 1.0 / n2))
    return float(stdtr(df, t))


def min_acceptable_mean(mean: float, stdev: float, reference_runs: float, submission_runs: int) -> float:
    """The smallest submission mean not significantly faster than the reference (bisection on [0, mean])."""
    if stdev == 0:
        return mean
    low, high = 0.0, mean
    mid = (low + high) / 2
    while high - low > TOLERANCE:
        if _one_sided_p(mid, mean, stdev, reference_runs, submission_runs - 2) > ALPHA:
            high = mid
        else:
            low = mid
        mid = (low + high) / 2
    return mid


def reference_points(ruleset: str, benchmark: str) -> list[Reference] | None:
    """Every shipped reference point of ``benchmark``, sorted by batch size (stable), with its statistics."""
    records = mlperf_data.rcp_file_records(ruleset, benchmark)
    runs = mlperf_data.rcp_submission_runs(benchmark)
    if records is None or runs is None:
        return None
    points = []
    for name, record in sorted(records.items(), key=lambda item: item[1]["BS"]):
        key = "samples to converge" if record["Benchmark"] in SAMPLES_KEY_BENCHMARKS else "Epochs to converge"
        epochs = sorted(record[key])
        drop = 4 if record["Benchmark"] == "unet3d" else 1
        mean = float(np.mean(epochs[drop:len(epochs) - drop]))
        stdev = float(np.std(epochs))
        points.append(Reference(name, record["Benchmark"], record["BS"], mean, stdev,
                                min_acceptable_mean(mean, stdev, len(epochs) - 2 * drop, runs)))
    return points


def interpolate(batch_size: float, low: Reference, high: Reference, benchmark: str, runs: int) -> Reference:
    """The point between two others, linear in batch size (its test assumes 2x the submission's runs)."""
    xs = [low.batch_size, high.batch_size]
    mean = float(np.interp(batch_size, xs, [low.mean, high.mean]))
    stdev = float(np.interp(batch_size, xs, [low.stdev, high.stdev]))
    return Reference(f"{benchmark}_interp_{batch_size}", benchmark, batch_size, mean, stdev,
                     min_acceptable_mean(mean, stdev, runs * 2, runs))


def prune(points: list[Reference], benchmark: str, runs: int) -> list[Reference]:
    """The points the check uses: from the fastest-converging batch size up, and none slower than the
    interpolation of its neighbours (re-examined after each removal, as MLPerf's loop does)."""
    if not points:
        return []
    fastest = min(points, key=lambda p: p.mean)
    kept = [p for p in points if p.batch_size >= fastest.batch_size]
    i = 1
    while i < len(kept) - 1:
        if kept[i].mean > interpolate(kept[i].batch_size, kept[i - 1], kept[i + 1], benchmark, runs).mean:
            del kept[i]
            i -= 1
        i += 1
    sizes = {p.batch_size for p in kept}
    return [p for p in points if p.batch_size in sizes]


def _evaluate(point: Reference, epochs: list[float], ruleset: str, benchmark: str) -> tuple[bool, float, float]:
    """(passed, scaling factor, submission mean) of the olympic mean of ``epochs`` against ``point``."""
    if benchmark == "llama31_405b" and _at_least(ruleset, "5.0.0"):
        max_speedup = point.mean / (point.min_mean - LLAMA405B_SAMPLES_OFFSET)
    else:
        max_speedup = point.mean / point.min_mean
    ordered = sorted(epochs)
    drop = 4 if point.benchmark == "unet3d" else 1
    mean = float(np.mean(ordered[drop:len(ordered) - drop]))
    passed = mean > 0 and mean >= point.mean / max_speedup
    factor = max(1.0, point.mean / mean) if passed else 1.0
    return passed, factor, mean


def _at_least(version: str, minimum: str) -> bool:
    return tuple(int(x) for x in version.split(".")) >= tuple(int(x) for x in minimum.split("."))


def _submission_figures(runs: list[RunConvergence], benchmark: str) -> tuple[object, list[float] | None, str]:
    """(batch size, epochs per run, why not) for the folder; the RCP checker's get_submission_epochs."""
    problem = next((r.problem for r in runs if r.problem), "")
    if problem:
        return None, None, f"cannot read the convergence point: {problem}"
    sizes = {repr(r.batch_size) for r in runs}
    if not runs or len(sizes) != 1 or not _is_number(runs[0].batch_size):
        return None, None, f"Could not detect global_batch_size (one number in every file; seen {sorted(sizes)})"
    names = {r.benchmark for r in runs if isinstance(r.benchmark, str)}
    if names != {benchmark} or any(not isinstance(r.benchmark, str) for r in runs):
        return None, None, f"the files log submission_benchmark {sorted(map(repr, names))}, not {benchmark!r}"
    failed = sum(r.epochs == NOT_CONVERGED for r in runs)
    drop = 4 if benchmark == "unet3d" else 1
    if len(runs) <= 2 * drop:
        return None, None, f"{len(runs)} runs leave no olympic mean (MLPerf's mean of nothing is NaN: a failure)"
    if failed > drop:
        return None, None, f"Insufficient convergence ({failed} runs did not converge)"
    return runs[0].batch_size, [r.epochs for r in runs], ""


def check_rcp(runs: list[RunConvergence], benchmark: str, ruleset: str) -> RcpVerdict:
    """MLPerf's verdict on the folder's convergence against the pruned reference points, with its factor."""
    batch_size, epochs, why = _submission_figures(runs, benchmark)
    if epochs is None:
        return RcpVerdict(False, why)
    points = reference_points(ruleset, benchmark)
    if not points:
        return RcpVerdict(False, f"Cannot find any RCPs for {benchmark} in mlperf-logging's training_{ruleset}")
    submission_runs = mlperf_data.rcp_submission_runs(benchmark)
    pruned = prune(points, benchmark, submission_runs)
    exact = next((p for p in pruned if p.batch_size == batch_size), None)
    below = _nearest(pruned, batch_size, below=True)
    above = _nearest(pruned, batch_size, below=False)
    missing = f"Missing RCP, please submit RCP with BS = {batch_size}"
    if exact is not None or (below is not None and above is not None):
        point = exact or interpolate(batch_size, below, above, benchmark, submission_runs)
        message = "RCP found" if exact is not None else "RCP Interpolation"
    elif above is not None:    # smaller than every point: judged against the smallest batch size
        point = min(pruned, key=lambda p: p.batch_size)
        message = "RCP not found but slower convergence on smaller batch size"
    else:
        return RcpVerdict(False, missing if below is not None else "Cannot find any RCPs", bypassable=below is not None)
    passed, factor, mean = _evaluate(point, epochs, ruleset, benchmark)
    if not passed and message.startswith("RCP not found"):
        message = missing
    return RcpVerdict(passed, message, factor, bypassable=not passed, reference=point.name, submission_mean=mean)


def _nearest(points: list[Reference], batch_size: float, below: bool) -> Reference | None:
    """The closest point strictly below (above) ``batch_size``; the first of equals, as MLPerf's scan."""
    best = None
    for p in points:
        if below and batch_size > p.batch_size > (best.batch_size if best else 0):
            best = p
        if not below and batch_size < p.batch_size < (best.batch_size if best else 1e9):
            best = p
    return best
