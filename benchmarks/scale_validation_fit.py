"""How much of `trainmark scale validate`'s error table is fitted: in-sample, without the fit, and out of sample.

The projection has two free constants, the overlap of the all-reduce with the backward pass (phi,
``--overlap``) and the share of a step that does not shrink with the local batch (f,
``--fixed-step-fraction``). validate's defaults were chosen on the public pairs themselves, so the
table it prints is in-sample. This script reads the rounds once and prints, per size bucket, the median
|error| of time to train:

- in-sample: the defaults;
- without the fit: phi = 0, f = 0;
- leave one benchmark out: for each benchmark, (phi, f) chosen on the grid by the median |error| over
  every other benchmark's pairs, then applied to its own pairs (the honest out-of-sample figure);

beside the two baselines (linear scaling; the flat ring without convergence). docs/scale.md quotes it.

    python benchmarks/scale_validation_fit.py ROUND_DIR...   # e.g. the four rounds of training_results_v3.1..v5.0
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

from trainmark.harness.measure.system import cpu_model
from trainmark.harness.scale import mlperf_validate as mv

PHI = (0.0, 0.25, 0.5, 0.75)
F = (0.0, 0.05, 0.1, 0.15, 0.2)


def median_abs(records: list[dict], key=lambda r: r["error"]) -> float | None:
    values = [abs(key(r)) for r in records if key(r) is not None]
    return statistics.median(values) if values else None


def in_bucket(records: list[dict], small_max: float, large_min: int) -> list[dict]:
    return [r for r in records if r["n_small"] <= small_max and r["n_large"] >= large_min and r["error"] is not None]


def leave_one_benchmark_out(grid: dict[tuple[float, float], list[dict]]) -> list[dict]:
    """Each benchmark's records under the (phi, f) that the other benchmarks' pairs choose."""
    benchmarks = sorted({r["benchmark"] for records in grid.values() for r in records if r["error"] is not None})
    out = []
    for held_out in benchmarks:
        def others_error(params):
            return median_abs([r for r in grid[params] if r["benchmark"] != held_out and r["error"] is not None])
        chosen = min(grid, key=lambda params: (others_error(params), params))
        out += [r for r in grid[chosen] if r["benchmark"] == held_out]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rounds", nargs="+", type=Path)
    parser.add_argument("--scaling", default="best", choices=["best", "weak", "strong"])
    args = parser.parse_args()
    t0 = time.perf_counter()
    problems: list[str] = []
    read = mv.read_rounds(args.rounds, problems)
    grid = {(phi, f): mv.validate_read(read, scaling=args.scaling, overlap=phi, fixed_fraction=f)["records"]
            for phi, f in itertools.product(PHI, F)}
    defaults = grid[0.5, 0.1]
    loo = leave_one_benchmark_out(grid)
    print(f"{cpu_model()}; {len(defaults)} pairs, {sum(r['error'] is not None for r in defaults)} projected; "
          f"scaling {args.scaling}; {time.perf_counter() - t0:.0f} s")
    print(f"{'bucket':14} {'pairs':>5} {'in-sample':>9} {'no fit':>7} {'LOBO':>6} {'linear':>7} {'flat ring':>9}")
    for name, small_max, large_min in mv.BUCKETS:
        rows = [in_bucket(records, small_max, large_min) for records in (defaults, grid[0.0, 0.0], loo)]
        base = rows[0]
        figures = [median_abs(r) for r in rows] + [
            median_abs(base, lambda r, b=b: r["baselines"][b]["error"]) for b in ("linear", "flat_ring")]
        print(f"{name:14} {len(base):>5} " + " ".join(
            f"{'-' if x is None else f'{100 * x:.0f} %':>{w}}" for x, w in zip(figures, (9, 7, 6, 7, 9))))


if __name__ == "__main__":
    main()
