"""How long does ``render_html`` take on a folder of about 5,000 trials, and how big is the page?

Issue 32's bound: 5,000 trials rendered in under 30 s (the report of 4,998 trials took 119 s and
33 MB when every figure was a matplotlib figure). The folder is synthetic (tests/synthetic.py): the
six mini benchmarks, each run by as many systems as it takes to reach ``--trials`` trials, five
trials a benchmark. It is checked once (``check_path``, not timed: the report's own cost is the
question); then, in a fresh process per code version, the report's curves are gathered (not timed)
and ``render_html`` is timed.

``--before COMMIT`` also times the report/ of an earlier commit (taken with ``git archive``) on the
same check, side by side: the same folder, the same machine, the same minute. Prints the CPU model
(/proc/cpuinfo) and the date, which every figure quoted from this script must carry.

Usage: python benchmarks/report_scale.py [--trials 5000] [--before COMMIT] [--keep DIR | --folder DIR]
"""
from __future__ import annotations

import argparse
import datetime
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from trainmark.harness.measure.system import cpu_model

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ("resnet-mini", "vgg-mini", "inception-mini", "ds2-mini", "lstm-mini", "transformer-mini")
BOUND_S = 30.0


def write_folder(root: Path, trials: int) -> int:
    """The synthetic submission: every mini benchmark on ``ceil(trials / 5 / 6)`` systems; the trials written."""
    sys.path.insert(0, str(ROOT / "tests"))
    import synthetic

    from trainmark.rules import get_rules

    per_benchmark = math.ceil(trials / 5 / len(BENCHMARKS))
    model = synthetic.tiny_reference_model()
    written = 0
    for name in BENCHMARKS:
        rules = get_rules(name)
        systems = tuple(f"sys{i:04d}" for i in range(1, per_benchmark + 1))
        synthetic.write_submission(root, rules, model, systems=systems)
        written += per_benchmark * int(rules.trials)
    return written


def check(root: Path, report_json: Path) -> float:
    """Check the folder once (the tiny stand-in reference model) and keep the check's JSON; its seconds."""
    sys.path.insert(0, str(ROOT / "tests"))
    import synthetic

    from trainmark.checker.check import CheckOptions, check_path

    start = time.perf_counter()
    report = check_path(root, CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model()))
    report_json.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return time.perf_counter() - start


def render(report_json: Path, report_dir: str | None) -> dict:
    """In this process: gather the curves with the report/ at ``report_dir`` (None: this tree's), time render_html."""
    if report_dir:   # an earlier report/: the package trainmark.report is that folder
        import types

        import trainmark

        package = types.ModuleType("trainmark.report")
        package.__path__ = [report_dir]
        sys.modules["trainmark.report"] = package
        trainmark.report = package
    from trainmark.cli.checked import CheckedFiles
    from trainmark.report.collect import ReportData, gather
    from trainmark.report.page import render_html

    report = json.loads(report_json.read_text(encoding="utf-8"))
    start = time.perf_counter()
    views, systems = gather(report, CheckedFiles(Path(report["path"])))
    gathered = time.perf_counter() - start
    data = ReportData(report, views, systems)
    start, cpu = time.perf_counter(), time.process_time()
    html = render_html(data)
    return {"render_s": time.perf_counter() - start, "render_cpu_s": time.process_time() - cpu,
            "gather_s": gathered, "bytes": len(html.encode("utf-8")), "figures": html.count('<figure class="plot"'),
            "trials": sum(len(b["trials"]) for b in report["benchmarks"]), "benchmarks": len(report["benchmarks"])}


def render_in_child(report_json: Path, report_dir: str | None) -> dict:
    code = ("import json, sys; sys.path.insert(0, %r); import report_scale; "
            "print(json.dumps(report_scale.render(__import__('pathlib').Path(%r), %r)))"
            % (str(Path(__file__).parent), str(report_json), report_dir))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"render failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def old_report_dir(commit: str, into: Path) -> str:
    """The report/ folder of ``commit``, unpacked under ``into``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "report"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
        archive.extractall(into, filter="data")
    return str(into / "report")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5000)
    parser.add_argument("--before", metavar="COMMIT", help="also time this commit's report/ on the same check")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the folder here and keep it")
    parser.add_argument("--folder", type=Path, metavar="DIR", help="a folder --keep wrote: measure it again")
    args = parser.parse_args()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()} "
          f"({len(os.sched_getaffinity(0))} CPUs), load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        root = args.folder or args.keep or Path(tmp) / "sub"
        if not args.folder:
            start = time.perf_counter()
            written = write_folder(root, args.trials)
            print(f"wrote {written} trials in {time.perf_counter() - start:.0f} s")
        report_json = Path(tmp) / "check.json"
        print(f"checked in {check(root, report_json):.0f} s")
        versions = [("this tree", None)]
        if args.before:
            versions.append((f"report/ of {args.before}", old_report_dir(args.before, Path(tmp) / "before")))
        print(f"{'code':<32} {'render s':>9} {'CPU s':>7} {'MB':>7} {'figures':>8} {'benchmarks':>11} {'trials':>7}")
        for label, report_dir in versions:
            r = render_in_child(report_json, report_dir)
            print(f"{label:<32} {r['render_s']:>9.1f} {r['render_cpu_s']:>7.1f} {r['bytes'] / 2**20:>7.1f} "
                  f"{r['figures']:>8} {r['benchmarks']:>11} {r['trials']:>7}")
            if report_dir is None and r["render_s"] > BOUND_S:
                print(f"over the {BOUND_S:.0f} s bound")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
