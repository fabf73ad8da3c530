"""Per benchmark, how much longer one evaluated sample takes than one trained sample, in real runs.

The rules' ``evaluation.max_eval_time_ratio`` (the WORK-001 bound) is 3x the highest value this prints
over the example submissions; the ratio uses the same windows and figures as the checker
(``trainmark.checker.checks.work_time``): an evaluation window's seconds per ``eval_samples`` over the
trial's median epoch's seconds per ``train_samples``.

    python benchmarks/eval_time_ratios.py submissions [more folders...]
"""
from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from trainmark.checker.checks.work_time import windows
from trainmark.format import mllog


def ratios(result_file: Path) -> tuple[str, list[float]]:
    events = mllog.read(result_file)
    benchmark = mllog.first_value(events, mllog.SUBMISSION_BENCHMARK)
    epochs = windows(events, "epoch")
    evals = windows(events, "eval")
    train, evaluated = mllog.first_value(events, mllog.TRAIN_SAMPLES), mllog.first_value(events, mllog.EVAL_SAMPLES)
    if not epochs or not train or not evaluated:
        return benchmark, []
    per_trained = statistics.median(w.seconds for w in epochs.values()) / train
    return benchmark, [(w.seconds / evaluated) / per_trained for w in evals.values()]


def main(folders: list[str]) -> int:
    seen: dict[str, list[float]] = defaultdict(list)
    files: dict[str, int] = defaultdict(int)
    for folder in folders:
        for path in sorted(Path(folder).rglob("result_*.txt")):
            benchmark, values = ratios(path)
            seen[benchmark] += values
            files[benchmark] += 1
    print(f"{'benchmark':<18} {'trials':>6} {'evaluations':>11} {'median':>8} {'highest':>8} {'3x highest':>10}")
    for benchmark in sorted(seen):
        values = seen[benchmark]
        print(f"{benchmark:<18} {files[benchmark]:>6} {len(values):>11} {statistics.median(values):>8.4f} "
              f"{max(values):>8.4f} {3 * max(values):>10.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["submissions"]))
