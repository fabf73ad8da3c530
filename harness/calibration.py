"""What ``trainmark calibrate`` reports: epochs-to-target and the spread of train times over reference trials.

The trials are ordinary runs (harness/run.py) into a scratch folder; this module turns their
results into the JSON report the command prints, and says whether the calibration succeeded
(every trial reached the rules' target).
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import mean, pstdev, stdev


def epochs_to_target(history, reached) -> int | None:
    """The first evaluated epoch whose metric meets the target, or None."""
    return next((e.epoch for e in history if e.metric is not None and reached(e.metric)), None)


def train_time_cv(times: list[float]) -> float | None:
    """Coefficient of variation (sample std / mean) of train times, as the checker's score reports it."""
    return round(stdev(times) / mean(times), 4) if len(times) > 1 and mean(times) > 0 else None


def epochs_spread(epochs: list[int]) -> dict:
    return {"mean_epochs": mean(epochs) if epochs else None, "std_epochs": pstdev(epochs) if epochs else None}


def other_load(bench_dir: Path, k: int) -> float | None:
    """The share of the CPUs other processes used during trial ``k`` (trial.json), or None."""
    try:
        from trainmark.format import layout

        path = bench_dir / layout.trial_dir(k) / layout.TRIAL_JSON
        return json.loads(path.read_text(encoding="utf-8")).get("other_cpu_load_pct")
    except (OSError, ValueError):
        return None


def other_loads(summary) -> list[float | None]:
    """``other_load`` of every trial of a run (read while its folder still exists)."""
    return [other_load(summary.bench_dir, k) for k in range(1, len(summary.results) + 1)]


def target_report(benchmark: str, rules, summary, load: list) -> tuple[dict, bool]:
    """Epochs and train times of the trials that converged; ok when all of them did."""
    epochs = [r.epochs for r in summary.results if r.status == "converged"]
    times = [r.train_time_s for r in summary.results if r.status == "converged"]
    report = {"benchmark": benchmark, "target": rules.target, "trials": len(summary.results),
              "converged": len(epochs), **epochs_spread(epochs), "train_time_s": [round(t, 1) for t in times],
              "train_time_cv": train_time_cv(times), "other_cpu_load_pct": load}
    return report, len(epochs) == len(summary.results)


def curves_report(benchmark: str, rules, summary, seed, what_if: list[float], load: list) -> tuple[dict, bool]:
    """Full curves: epochs-to-target for the rules' target and every ``what_if`` target.

    ok when every trial reached the rules' target (the what-if targets only inform).
    """
    report = {"benchmark": benchmark, "trials": len(summary.results),
              "seeds_from": seed, "curves": [[e.metric for e in r.history] for r in summary.results],
              "epoch_train_s": [[round(e.train_s, 1) for e in r.history] for r in summary.results],
              "other_cpu_load_pct": load, "targets": {}}
    ok = True
    for target in [rules.target, *what_if]:
        reached = lambda v, t=target: rules.reached(v, t)  # noqa: E731
        epochs = [epochs_to_target(r.history, reached) for r in summary.results]
        got = [e for e in epochs if e is not None]
        times = [sum(e.train_s for e in r.history[:k]) for r, k in zip(summary.results, epochs) if k is not None]
        report["targets"][str(target)] = {
            "converged": len(got), "epochs_to_target": epochs, **epochs_spread(got),
            "epochs_range": [min(got), max(got)] if got else None,
            "train_time_s": [round(t, 1) for t in times], "train_time_cv": train_time_cv(times)}
        ok = ok and (target != rules.target or len(got) == len(epochs))
    return report, ok
