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
(see ``trainmark.checker.mlperf.engine``), which is why it can be faster than the engine alone.

3. On a real MLPerf Training folder (``--mlperf DIR``, default the shared v4.0 fixture) and
   on the synthetic one: the ``trainmark check`` command (a fresh process, start-up
   included) beside mlperf-logging's per-file command line
   (``python -m mlperf_logging.compliance_checker --usage training FILE``, one process
   per file, as a reviewer runs it). Issue 18 asks for >= 5x; the ratio is printed.

Every figure is wall time on whatever machine runs it; say whether it was quiet.

Usage: python benchmarks/checker_speed.py [--systems 400] [--out DIR] [--mlperf DIR] [--cli-files N]
"""
from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlperf_logging.compliance_checker import mlp_compliance

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the tests' fixture builder
import synthetic  # noqa: E402

from trainmark.checker.check import CheckOptions, check_path  # noqa: E402
from trainmark.checker.mlperf import compliance_rules as compliance  # noqa: E402
from trainmark.rules import get_rules


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


FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"


def time_cli(args: list[str], expect: tuple[int, ...] = (0, 1)) -> float:
    """Wall seconds of one fresh process (start-up included)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cwd:  # mlperf-logging writes compliance_checker.log into the cwd
        proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - start
    if proc.returncode not in expect:
        raise SystemExit(f"{' '.join(args[:4])}... exited {proc.returncode}: {proc.stderr[-500:]}")
    return seconds


def compare_commands(label: str, folder: Path, files: list[Path], their_args: list[str]) -> None:
    """``trainmark check`` (one process) beside mlperf-logging's per-file command on the same files."""
    ours = time_cli(["-m", "trainmark", "check", str(folder), "--quiet"])
    theirs = sum(time_cli(["-m", "mlperf_logging.compliance_checker", "--usage", "training", "--quiet",
                           *their_args, str(f)], expect=(0, 1)) for f in files)
    print(f"{label}: trainmark check {ours:7.2f} s for the folder; mlperf-logging per file {theirs:7.2f} s for "
          f"{len(files)} files: {theirs / ours:.1f}x (issue 18 asks >= 5x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=400, help="systems of 5 trials each (default 400)")
    parser.add_argument("--out", type=Path, help="write the submission here and keep it (default: a temp folder)")
    parser.add_argument("--mlperf", type=Path, default=FIXTURE, help="an MLPerf Training results folder "
                        "(default: the shared v4.0 fixture; ruleset from its path)")
    parser.add_argument("--cli-files", type=int, default=200, help="at most this many files for the per-file "
                        "command comparison on the synthetic folder (one process each; default 200)")
    args = parser.parse_args(argv)
    if args.mlperf.is_dir():
        real = sorted(args.mlperf.rglob("result_*.txt"))
        compare_commands(f"MLPerf fixture ({args.mlperf.name})", args.mlperf, real, ["--ruleset", "4.0.0"])
    root = args.out or Path(tempfile.mkdtemp(prefix="checker-speed-"))
    config_dir = Path(tempfile.mkdtemp(prefix="checker-speed-rules-"))
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

        config = compliance.write_compliance_file(get_rules("resnet-mini"), "closed", config_dir)
        theirs = time_mlperf_engine(files, config)

        print(f"trainmark check (all rules, {len(files)} trials): {ours:7.2f} s  {len(files) / ours:8.1f} files/s")
        print(f"mlperf-logging compliance checker only:          {theirs:7.2f} s  {len(files) / theirs:8.1f} files/s")
        print(f"ratio: trainmark check takes {ours / theirs:.2f}x the time of the compliance engine alone")
        if args.systems * 5 <= args.cli_files:  # the per-file command costs one interpreter start-up per file
            compare_commands("synthetic submission", root, files, ["--ruleset", "6.1.0", "--config", str(config)])
        else:
            print(f"(per-file command comparison skipped: {len(files)} files > --cli-files {args.cli_files})")
        return 0
    finally:
        shutil.rmtree(config_dir, ignore_errors=True)
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
