"""Start-up cost of the light commands against importing their own dependencies.

    python benchmarks/cli_startup.py [--repeats 5]

Each command runs as a fresh process, ``--repeats`` times, interleaved with the baseline
``python -c "import yaml, jsonschema, rich"``; the script prints the median wall and CPU time
of each and its ratio to the baseline (target: <= 1.5x, issue 11). Light commands must not
import torch: the script also reports whether torch was imported (``python -X importtime``).
State the CPU and how busy the machine was beside any figure you quote.
"""
from __future__ import annotations

import argparse
import platform
import resource
import statistics
import subprocess
import sys
import time

BASELINE = [sys.executable, "-c", "import yaml, jsonschema, rich"]
COMMANDS = {
    "trainmark --version": ["--version"],
    "trainmark --help": ["--help"],
    "trainmark list": ["list"],
    "trainmark rules show resnet-mini": ["rules", "show", "resnet-mini"],
}


def measure(cmd: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imports_torch(args: list[str]) -> bool:
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "trainmark", *args], capture_output=True, text=True)
    return any(line.rstrip().endswith("| torch") for line in out.stderr.splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"baseline": [], **{name: [] for name in COMMANDS}}
    for _ in range(args.repeats):  # interleaved, so load changes hit every command alike
        runs["baseline"].append(measure(BASELINE))
        for name, argv in COMMANDS.items():
            runs[name].append(measure([sys.executable, "-m", "trainmark", *argv]))
    base_wall = statistics.median(w for w, _ in runs["baseline"])
    base_cpu = statistics.median(c for _, c in runs["baseline"])
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"median of {args.repeats}")
    print(f"{'command':36} {'wall s':>8} {'cpu s':>8} {'wall x':>7} {'cpu x':>7}  torch")
    for name, values in runs.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        torch = "-" if name == "baseline" else ("IMPORTED" if imports_torch(COMMANDS[name]) else "no")
        print(f"{name:36} {wall:8.3f} {cpu:8.3f} {wall / base_wall:7.2f} {cpu / base_cpu:7.2f}  {torch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
