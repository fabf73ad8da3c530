"""What the evidence checks of issues 30 and 38 cost per result file, and default re-evaluation per mini.

Runs ``check_path`` on a folder (default: the committed example submissions, 60 result files) with every
evidence check, and with those checks replaced by no-ops, alternating A B B A for ``--rounds`` rounds, and
prints the median wall time per result file of both and their difference, with the CPU. The evidence checks:
work and time (WORK-001..003), distinct trials and weights (WORK-004/005: each model.safetensors sampled
tensor by tensor), energy consistency and power integral (ENERGY-004..006), the telemetry clock and timeline
(TELEMETRY-005/006), the logged format version and interrupted attempts (MLLOG-013, TRIAL-004), and issue 38's
records (CODE-014/015), and the figures issue 38 derives instead of reading them (WORK-006/007/009/010,
TRIALJSON-004, TELEMETRY-007/008, ENERGY-007..009: checks/evidence_*.py). Then every folder's closest pair of
trials (the WORK-004 threshold's evidence), and the default re-evaluation (one trial per mini, where its data is
found) once: seconds per mini and the whole check with it against without it.
Times on a shared machine are contended: read the ratios.

    python benchmarks/evidence_cost.py [FOLDER] [--rounds 5] [--no-reevaluation]
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks import (
    code,
    distinct,
    energy,
    evidence_energy,
    evidence_format,
    evidence_timeline,
    evidence_work,
    reeval,
    telemetry,
    work_time,
)
from trainmark.checker.checks import mllog as mllog_check
from trainmark.checker.read import evidence
from trainmark.checker.read.weights import read_weights
from trainmark.harness.measure.system import cpu_model

# (module, function, what the no-op returns)
EVIDENCE = [(work_time, "check_trial", None), (evidence, "sample_weights", None),
            (distinct, "check_curves_distinct", None), (energy, "check_figures", None), (energy, "check_power", None),
            (telemetry, "check_span", None), (telemetry, "check_timeline", None),
            (mllog_check, "check_format_version", None), (mllog_check, "check_interrupted_attempts", None),
            (code, "_check_closed_extras", None), (code, "_check_open_model", None),
            (evidence_work, "derive", None), (evidence_format, "check_format", None), (evidence_format, "period", None),
            (evidence_energy, "check_trial", None), (evidence_timeline, "check_coverage", None),
            (evidence_timeline, "check_period", None)]


def timed(folder: Path, evidence: bool) -> float:
    with ExitStack() as stack:
        if not evidence:
            for module, name, value in EVIDENCE:
                stack.enter_context(mock.patch.object(module, name, lambda *a, _v=value, **k: _v))
        start = time.perf_counter()
        check_path(folder)
        return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=str(Path(__file__).resolve().parent.parent / "submissions"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-reevaluation", dest="reevaluation", action="store_false",
                        help="skip the default re-evaluation's measurement (it evaluates a model per mini)")
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
    closest_pairs(folder)
    if args.reevaluation:
        default_reevaluation(folder, b)
    return 0


def closest_pairs(folder: Path) -> None:
    """Every benchmark folder's closest pair of trials by the median relative distance of their tensors."""
    from trainmark.checker.read.safefs import SafeTree

    tree, closest = SafeTree(folder), []
    for bench in sorted({p.parent for p in folder.rglob("result_*.txt")}):
        rel = bench.relative_to(folder).as_posix()
        weights = {int(p.parent.name.split("_")[1]): read_weights(tree, f"{rel}/{p.parent.name}/"
                   f"{p.name}") for p in sorted(bench.glob("trial_*/model.safetensors"))}
        pairs = [(distinct.distance(weights[a], weights[b]), a, b) for a in weights for b in weights if a < b
                 and weights[a] is not None and weights[b] is not None]
        pairs = [p for p in pairs if p[0] is not None]
        if pairs:
            d, a, b = min(pairs)
            closest.append((d, rel))
            print(f"closest pair {d:6.3f} (trials {a}, {b}) of {len(pairs)} in {rel}")
    if closest:
        d, rel = min(closest)
        print(f"closest pair of all: {d:.3f} in {rel}; WORK-004 below {distinct.CLONE_DISTANCE:g} "
              f"({d / distinct.CLONE_DISTANCE:.1f}x under it)")


def default_reevaluation(folder: Path, without: float) -> None:
    """The check with the default re-evaluation (one trial per mini drawn at random) once, beside the median
    without any: seconds per mini (loading and evaluating the weights; building model and data once)."""
    from trainmark.harness.reevaluate import Reevaluation

    session = Reevaluation(twins=False)  # as `trainmark check` by default: every trial through the PyTorch reference
    start, cpu = time.perf_counter(), time.process_time()
    report = check_path(folder, CheckOptions(reevaluate=reeval.Reevaluate(session, reeval.ONE_PER_MINI)))
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    for note in report.notes:
        if note.startswith("re-evaluation"):
            print(note)
    for (name, _, _, framework, _), seconds in sorted(session.setup_seconds.items()):
        print(f"  model and data of {name} ({framework}) built once: {seconds:.2f} s")
    skipped = [f.file for f in report.findings if f.rule == "REEVAL-005"]
    print(f"not re-evaluated (REEVAL-005, no data here): {len(skipped)} folder(s)")
    print(f"the default check with re-evaluation {total:.1f} s ({cpu:.1f} s of CPU), without {without:.1f} s "
          f"({total / without:.1f}x)")


if __name__ == "__main__":
    raise SystemExit(main())
