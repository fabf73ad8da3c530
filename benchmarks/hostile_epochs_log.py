"""How long does ``trainmark check`` take on a 64 MiB ``epochs.log`` of one-character lines?

The checker caps a log at 64 MiB and stops parsing after ``MAX_MALFORMED`` malformed lines
(EPOCHLOG-007), so the hostile file costs about what an honest folder does: before that bound the
check took 138 s (issue 30). tests/test_hostile_inputs_30.py proves the bound by counting the lines
parsed; this script measures the time, side by side in one run: the synthetic submission as written,
then the same with the hostile epochs.log, each the least of ``--repeat`` runs. Times are CPU seconds on
whatever machine runs it; the CPU is printed: say whether it was shared.

Usage: python benchmarks/hostile_epochs_log.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the tests' folder builder
import synthetic  # noqa: E402

from trainmark.checker.check import CheckOptions, check_path  # noqa: E402
from trainmark.harness.measure.system import cpu_model  # noqa: E402
from trainmark.rules import get_rules  # noqa: E402

BENCH = "closed/acme/results/sys1/resnet-mini"


def least_cpu(root: Path, options: CheckOptions, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        check_path(root, options)
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="keep the least of this many checks (default 3)")
    args = parser.parse_args(argv)
    options = CheckOptions(reference_builder=lambda _rules: synthetic.tiny_reference_model())
    with tempfile.TemporaryDirectory(prefix="hostile-epochs-log-") as tmp:
        root = Path(tmp) / "sub"
        synthetic.write_submission(root, get_rules("resnet-mini"), synthetic.tiny_reference_model())
        honest = least_cpu(root, options, args.repeat)
        (root / BENCH / "epochs.log").write_bytes(b"a\n" * (32 << 20))  # 64 MiB, the checker's cap for logs
        hostile = least_cpu(root, options, args.repeat)
    print(f"CPU: {cpu_model()}")
    print(f"check of the synthetic submission: {honest:.2f} s CPU; with a 64 MiB epochs.log of one-character lines: "
          f"{hostile:.2f} s CPU ({hostile / honest:.1f}x; 138 s before the malformed-line bound)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
