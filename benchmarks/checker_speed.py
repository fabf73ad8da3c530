"""How fast is ``trainmark check``? Files per second beside mlperf-logging's own compliance checker.

Writes a synthetic closed-division submission (``--systems`` systems x the rules' trials
of resnet-mini; 400 x 5 = 2,000 MLLOG files by default), then, in one run:

1. ``trainmark check`` on the whole submission: every rule (layout, both logs, their
   agreement, trials, conformity, scores), the MLLOG files through mlperf-logging's
   engine with the generated rules;
2. mlperf-logging's compliance checker alone on the same MLLOG files, the way its own
   command line runs one file (``make_checker`` + ``mlp_compliance.main``) with the same
   generated rules.

The checker runs the same engine but parses the rule file once instead of once per file
(see ``trainmark.checker.engine``), which is why it can be faster than the engine alone.

Usage: python benchmarks/checker_speed.py [--systems 400] [--out DIR]
"""
from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mlperf_logging.compliance_checker import mlp_compliance

from trainmark.checker import synthetic
from trainmark.checker.check import CheckOptions, check_path
from trainmark.rules import compliance, get_rules


def build(root: Path, systems: int) -> list[Path]:
    rules = get_rules("resnet-mini")
    model = synthetic.tiny_reference_model()
    names = tuple(f"sys{i:04d}" for i in range(systems))
    synthetic.write_submission(root, rules, model, systems=names)
    return sorted(root.glob("closed/acme/results/*/resnet-mini/result_*.txt"))


def time_mlperf_engine(files: list[Path], config: Path) -> float:
    logging.disable(logging.WARNING)  # the engine logs every file it checks
    try:
        start = time.perf_counter()
        for path in files:
            mlp_compliance.enqueued_configs.clear()
            checker = mlp_compliance.make_checker("training", "6.1.0", quiet=True, werror=True)
            valid, *_ = mlp_compliance.main(str(path), str(config), checker)
            if not valid:
                raise SystemExit(f"{path} fails the generated rules: the synthetic folder is broken")
        return time.perf_counter() - start
    finally:
        logging.disable(logging.NOTSET)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=400, help="systems of 5 trials each (default 400)")
    parser.add_argument("--out", type=Path, help="write the submission here and keep it (default: a temp folder)")
    args = parser.parse_args(argv)
    root = args.out or Path(tempfile.mkdtemp(prefix="checker-speed-"))
    try:
        t0 = time.perf_counter()
        files = build(root, args.systems)
        print(f"wrote {len(files)} MLLOG files ({args.systems} systems) in {time.perf_counter() - t0:.1f} s: {root}")

        options = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())
        start = time.perf_counter()
        report = check_path(root, options)
        ours = time.perf_counter() - start
        if report.exit_code != 0:
            print(f"unexpected findings: {[(f.rule, f.file) for f in list(report.findings)[:5]]}")
            return 1

        with tempfile.TemporaryDirectory() as tmp:
            config = compliance.write_compliance_file(get_rules("resnet-mini"), "closed", Path(tmp))
            theirs = time_mlperf_engine(files, config)

        print(f"trainmark check (all rules, {len(files)} trials): {ours:7.2f} s  {len(files) / ours:8.1f} files/s")
        print(f"mlperf-logging compliance checker only:          {theirs:7.2f} s  {len(files) / theirs:8.1f} files/s")
        print(f"ratio: trainmark check takes {ours / theirs:.2f}x the time of the compliance engine alone")
        return 0
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
