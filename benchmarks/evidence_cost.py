"""What issue 30's evidence checks cost per result file, measured side by side.

Runs ``check_path`` on a folder (default: the committed example submissions, 60 result files) with every
evidence check, and with those checks replaced by no-ops, alternating A B B A for ``--rounds`` rounds, and
prints the median wall time per result file of both and their difference, with the CPU. The evidence checks:
work and time (WORK-001..003), distinct trials and weights (WORK-004/005: hashing every model.safetensors),
energy consistency and power integral (ENERGY-004..006), the telemetry clock and timeline (TELEMETRY-005/006),
the logged format version and interrupted attempts (MLLOG-013, TRIAL-004).

    python benchmarks/evidence_cost.py [FOLDER] [--rounds 5]
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

from trainmark.checker.check import check_path
from trainmark.checker.checks import distinct, energy, telemetry, work_time
from trainmark.checker.checks import mllog as mllog_check
from trainmark.harness.measure.system import cpu_model

# (module, function, what the no-op returns)
EVIDENCE = [(work_time, "check_trial", None), (distinct, "weights_digest", None),
            (distinct, "check_curves_distinct", None), (energy, "check_figures", None), (energy, "check_power", None),
            (telemetry, "check_span", None), (telemetry, "check_timeline", None),
            (mllog_check, "check_format_version", None), (mllog_check, "check_interrupted_attempts", None)]


def timed(folder: Path, evidence: bool) -> float:
    with ExitStack() as stack:
        if not evidence:
            for module, name, value in EVIDENCE:
                if hasattr(module, name):
                    stack.enter_context(mock.patch.object(module, name, lambda *a, _v=value, **k: _v))
        start = time.perf_counter()
        check_path(folder)
        return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=str(Path(__file__).resolve().parent.parent / "submissions"))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folder = Path(args.folder)
    files = len(list(folder.rglob("result_*.txt")))
    timed(folder, True)  # warm: imports, reference structures, page cache
    with_, without = [], []
    for _ in range(args.rounds):  # A B B A
        with_.append(timed(folder, True))
        without.append(timed(folder, False))
        without.append(timed(folder, False))
        with_.append(timed(folder, True))
    a, b = statistics.median(with_), statistics.median(without)
    print(f"{folder}: {files} result files, {args.rounds} ABBA rounds, {cpu_model()}, {platform.python_version()}")
    print(f"with the evidence checks    {1000 * a / files:8.2f} ms per result file ({a:.2f} s)")
    print(f"without them                {1000 * b / files:8.2f} ms per result file ({b:.2f} s)")
    print(f"the evidence checks cost    {1000 * (a - b) / files:8.2f} ms per result file ({a / b:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
