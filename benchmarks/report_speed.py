"""How much CPU does ``trainmark report`` take on the six example submissions, and how big is the page?

Issue 13's bound: the report of the example submissions in under 5 s of CPU on the 2-core
development machine, HTML under 2 MB. Each repetition runs, in fresh processes (so imports
count, as they do for a user), ``trainmark check submissions/`` and ``trainmark report
submissions/ -o FILE``, alternating, and reads their CPU time (user + system) from
``getrusage(RUSAGE_CHILDREN)``. The check is printed beside the report because the report
*is* the check plus figures: the difference is what the report adds.

CPU time is less sensitive to other processes than wall time, but not immune (caches,
frequency): say "contended machine" for figures taken while anything else runs.

Usage: python benchmarks/report_speed.py [--repeats 3] [--path submissions]
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_BOUND_S = 5.0
SIZE_BOUND = 2 * 1024 * 1024


def cpu_of(argv: list[str]) -> float:
    """CPU seconds (user + system) of ``trainmark ARGV`` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = f"from trainmark.cli import main; raise SystemExit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"trainmark {' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--path", type=Path, default=ROOT / "submissions")
    args = parser.parse_args()
    check_s, report_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        for _ in range(args.repeats):
            check_s.append(cpu_of(["check", str(args.path), "--quiet"]))
            report_s.append(cpu_of(["report", str(args.path), "-o", str(page)]))
        size = page.stat().st_size
    check_m, report_m = statistics.median(check_s), statistics.median(report_s)
    print(f"trainmark check  {args.path}: CPU s per run {', '.join(f'{t:.2f}' for t in check_s)} "
          f"(median {check_m:.2f})")
    print(f"trainmark report {args.path}: CPU s per run {', '.join(f'{t:.2f}' for t in report_s)} "
          f"(median {report_m:.2f})")
    print(f"report / check = {report_m / check_m:.2f}; the report adds {report_m - check_m:.2f} CPU s")
    print(f"HTML: {size:,} bytes")
    ok_cpu, ok_size = report_m < CPU_BOUND_S, size < SIZE_BOUND
    print(f"bound: < {CPU_BOUND_S:g} CPU s {'PASS' if ok_cpu else 'FAIL'}; < 2 MB {'PASS' if ok_size else 'FAIL'}")
    return 0 if ok_cpu and ok_size else 1


if __name__ == "__main__":
    raise SystemExit(main())
