"""A benchmark's scores from its recomputed trials.

Primary score (the rules' ``scoring``): the olympic mean of the trials' train times,
dropping the ``drop_fastest_and_slowest`` fastest and slowest, where a trial that
missed the target counts as the slowest (infinitely slow), as MLPerf scores a run that
did not converge; more of those than ``max_not_converged`` (or than are dropped)
gives no score. The plain means, spread and 95 % confidence interval are over the
trials that reached the target.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Protocol


class ScoredTrial(Protocol):
    """What scoring needs of a trial: the figures ``checker/read/trial_record.py`` recomputes from its logs
    (a protocol, so that the verdict layer imports nothing of the reading above it)."""
    trial: int
    converged: bool
    train_time_s: float | None
    total_time_s: float | None
    final_metric: float | None
    train_energy_j: float | None
    total_energy_j: float | None
    energy_reason: str


@dataclass
class BenchmarkScore:
    trials: int = 0
    converged: int = 0
    score_train_time_s: float | None = None       # the olympic mean: the benchmark's score
    score_reason: str = ""
    olympic_total_time_s: float | None = None
    mean_train_time_s: float | None = None
    mean_total_time_s: float | None = None
    trials_in_mean: int = 0
    cv_train_time: float | None = None
    ci95_train_time_s: list[float] | None = None
    mean_train_energy_j: float | None = None
    mean_total_energy_j: float | None = None
    energy_reason: str = ""
    mean_final_metric: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def olympic_mean(times: list[float | None], drop: int, max_not_converged: int) -> tuple[float | None, str]:
    """Mean after dropping ``drop`` fastest and slowest; ``None`` entries did not converge."""
    failed = sum(1 for t in times if t is None)
    if failed > max_not_converged:
        return None, f"{failed} trials did not reach the target; the rules allow {max_not_converged}"
    if failed > drop:
        return None, f"{failed} trials did not reach the target but only {drop} slowest are dropped"
    done = sorted(t for t in times if t is not None)
    kept = done[drop: len(done) - (drop - failed)]
    if not kept:
        return None, f"{len(times)} trials leave none after dropping {drop} fastest and {drop} slowest"
    return sum(kept) / len(kept), ""


def confidence_interval(values: list[float], level: float = 0.95) -> list[float] | None:
    """Two-sided t-interval of a time's mean, computed on the log scale (None below two values).

    A time cannot go below zero and its spread grows with it, so the interval is the t-interval of the
    logarithms taken back (exp): always above zero, and wider above the mean than below it. A plain
    interval of five trials with one slow outlier reached below zero (-1262.94..1699.36 s, issue 42). Where
    a value is not above zero (never a timed trial) the plain interval is used, held at zero."""
    if len(values) < 2:
        return None
    from scipy.special import stdtrit  # Student-t quantile (= scipy.stats.t.ppf, without its seconds of import)

    quantile = float(stdtrit(len(values) - 1, 0.5 + level / 2))
    if all(v > 0 for v in values):
        logs = [math.log(v) for v in values]
        half = quantile * statistics.stdev(logs) / math.sqrt(len(logs))
        return [math.exp(statistics.fmean(logs) - half), math.exp(statistics.fmean(logs) + half)]
    mean = statistics.fmean(values)
    half = quantile * statistics.stdev(values) / math.sqrt(len(values))
    return [max(mean - half, 0.0), max(mean + half, 0.0)]


def score_benchmark(records: list[ScoredTrial], drop: int, max_not_converged: int) -> BenchmarkScore:
    score = BenchmarkScore(trials=len(records), converged=sum(r.converged for r in records))
    timed = [r for r in records if r.converged and r.train_time_s is not None]
    untimed = [r for r in records if r.converged and r.train_time_s is None]
    for r in untimed:
        score.notes.append(f"trial {r.trial}: time not known ({r.time_reason})")
    if untimed:
        score.score_reason = f"trial {untimed[0].trial} reached the target but its time cannot be recomputed"
    else:
        score.score_train_time_s, score.score_reason = olympic_mean(
            [r.train_time_s if r.converged else None for r in records], drop, max_not_converged)
        score.olympic_total_time_s, _ = olympic_mean(
            [r.total_time_s if r.converged else None for r in records], drop, max_not_converged)
    if timed:
        train = [r.train_time_s for r in timed]
        score.trials_in_mean = len(timed)
        score.mean_train_time_s = statistics.fmean(train)
        score.mean_total_time_s = statistics.fmean(r.total_time_s for r in timed)
        if len(train) >= 2 and score.mean_train_time_s > 0:
            score.cv_train_time = statistics.stdev(train) / score.mean_train_time_s
        score.ci95_train_time_s = confidence_interval(train)
        _energy(score, timed)
    else:
        score.energy_reason = "no trial reached the target"
    metrics = [r.final_metric for r in records if r.final_metric is not None]
    if metrics:
        score.mean_final_metric = statistics.fmean(metrics)
    return score


def _energy(score: BenchmarkScore, timed: list[ScoredTrial]) -> None:
    missing = next((r for r in timed if r.train_energy_j is None), None)
    if missing is not None:
        score.energy_reason = f"trial {missing.trial}: {missing.energy_reason}"
        return
    score.mean_train_energy_j = statistics.fmean(r.train_energy_j for r in timed)
    missing_total = next((r for r in timed if r.total_energy_j is None), None)
    if missing_total is None:
        score.mean_total_energy_j = statistics.fmean(r.total_energy_j for r in timed)
    else:
        score.energy_reason = f"trial {missing_total.trial}: {missing_total.energy_reason}"
