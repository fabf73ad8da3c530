"""Does ``trainmark check`` give MLPerf's verdicts and scores on a published MLPerf Training round?

Why: MLPerf's own tools (mlperf-logging's package checker and result summarizer) are the
specification of ``trainmark check`` on MLPerf folders (docs/checker.md, "MLPerf Training
result folders"). This script runs both sides on every submitter folder of a round and
prints, per round: the folders, the (system, benchmark) scores equal within 1e-6 relative
out of those both sides score, how many folders each side fails, and the time each side
took; then each folder where the verdicts differ, with trainmark's first finding codes and
MLPerf's failure lines. Nothing here is needed by the tests (CI has no mirrors).

How, per submitter folder:
- MLPerf: a scratch COPY of the folder (the package checker writes and removes
  ``scaling.json`` in it), ``python -m mlperf_logging.package_checker COPY training X.Y.Z``
  (it exits 0 whatever it finds: a folder fails when it logs "PACKAGE CHECKER FOUND ERRORS";
  no such line is a crash, counted as a failure), then
  ``python -m mlperf_logging.result_summarizer COPY training X.Y.Z --csv S.csv`` on the same
  copy, the way a round is reviewed (its score uses the ``scaling.json`` the package checker
  wrote). Scores come from S.csv: the system is the file name of the row's ``details_url``,
  the benchmark its column.
- trainmark: ``trainmark check FOLDER --mlperf-ruleset X.Y.Z -q --json FILE`` (exit 1: fails;
  the JSON's ``benchmarks[].score.score_minutes`` are the scores).

Getting a round: the mirrors of mlcommons/training_results_vX.Y are bare git repositories
missing their largest blobs, so ``git archive`` stops; ``--mirror GITDIR`` extracts only
``<submitter>/systems/`` and ``<submitter>/results/`` (what both checkers read) into ROUND;
a submitter with files absent from the mirror is left out of the table and named under it
(v4.0 JuniperNetworks, v4.1 Clemson):

    python benchmarks/mlperf_parity.py /tmp/mlperf/v3.1 --ruleset 3.1.0 \\
        --mirror /work/.mirror/mlcommons+training_results_v3.1/repo
    python benchmarks/mlperf_parity.py /tmp/mlperf/v4.1 --ruleset 4.1.0 --only NVIDIA,Dell

Times are wall times of the commands (process start-up included) on whatever machine runs
it; the CPU and versions are printed with the table. ``--json FILE`` keeps every detail.
"""
from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mlperf_logging.benchmark_meta import get_allowed_benchmarks

from trainmark.harness.measure.system import cpu_model

REL_TOL = 1e-6
PARTS = ("systems", "results")   # what the package checker, the summarizer and trainmark read


def extract(mirror: Path, round_dir: Path, only: set[str] | None) -> dict[str, int]:
    """Write ``<submitter>/{systems,results}/**`` of the mirror's HEAD under ``round_dir``; per submitter,
    the number of blobs absent from the mirror (those files are not written)."""
    listing = subprocess.run(["git", "--git-dir", str(mirror), "ls-tree", "-r", "-z", "HEAD"],
                             check=True, capture_output=True).stdout.decode().split("\0")
    wanted = []
    for entry in filter(None, listing):
        meta, path = entry.split("\t", 1)
        kind, sha = meta.split()[1:3]
        parts = path.split("/")
        if kind == "blob" and len(parts) > 2 and parts[1] in PARTS and (not only or parts[0] in only):
            wanted.append((sha, path))
    missing: dict[str, int] = {}
    with subprocess.Popen(["git", "--git-dir", str(mirror), "cat-file", "--batch"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as git:
        for sha, path in wanted:
            git.stdin.write(sha.encode() + b"\n")
            git.stdin.flush()
            header = git.stdout.readline().split()
            missing.setdefault(path.split("/")[0], 0)
            if header[-1] == b"missing":
                missing[path.split("/")[0]] += 1
                continue
            data = git.stdout.read(int(header[2]) + 1)[:-1]   # the content, then a newline
            target = round_dir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        git.stdin.close()
    return missing


def run_timed(cmd: list[str], cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace")
    return done, time.perf_counter() - start


def summarizer_scores(summary_csv: Path, ruleset: str) -> dict[str, float]:
    """'system folder/benchmark' -> score in minutes, from the summarizer's CSV (strong scaling rows)."""
    benchmarks = set(get_allowed_benchmarks("training", ruleset))
    scores = {}
    if not summary_csv.is_file():
        return scores
    with summary_csv.open(newline="") as f:
        for row in csv.DictReader(f):
            m = re.search(r"/systems/(.+)\.json$", row.get("details_url", ""))
            if not m:
                continue
            for column, value in row.items():
                if column in benchmarks and value:
                    scores[f"{m[1]}/{column}"] = float(value)
    return scores


def run_mlperf(folder: Path, ruleset: str) -> dict:
    """MLPerf's package checker then its result summarizer on a scratch copy of ``folder``."""
    with tempfile.TemporaryDirectory(prefix="mlperf-parity-") as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy)
        checker, t_check = run_timed([sys.executable, "-m", "mlperf_logging.package_checker", str(copy),
                                      "training", ruleset, "--log_output", str(Path(tmp) / "pc.log")], cwd=tmp)
        out = checker.stdout + checker.stderr
        summary, t_sum = run_timed([sys.executable, "-m", "mlperf_logging.result_summarizer", str(copy),
                                    "training", ruleset, "--csv", str(Path(tmp) / "summary.csv")], cwd=tmp)
        scores = summarizer_scores(Path(tmp) / "summary.csv", ruleset)
    if "PACKAGE CHECKER FOUND NO ERRORS" in out:
        verdict = "pass"
    elif "PACKAGE CHECKER FOUND ERRORS" in out:
        verdict = "fail"
    else:
        verdict = "crash"
    errors = [line.replace(str(copy), folder.name) for line in out.splitlines()
              if line.startswith(("ERROR", "CRITICAL"))]
    if verdict == "crash":
        errors += [line for line in out.splitlines()[-3:]]
    sum_out = summary.stdout + summary.stderr
    sum_crash = "Traceback" in sum_out
    return {"verdict": verdict, "errors": errors, "scores": scores, "seconds": t_check + t_sum,
            "summarizer_crash": sum_out.strip().splitlines()[-1] if sum_crash else ""}


def run_trainmark(folder: Path, ruleset: str) -> dict:
    """``trainmark check FOLDER --mlperf-ruleset X.Y.Z -q --json FILE``: verdict, scores, error findings."""
    with tempfile.TemporaryDirectory(prefix="trainmark-parity-") as tmp:
        out = Path(tmp) / "report.json"
        done, seconds = run_timed(["trainmark", "check", str(folder), "--mlperf-ruleset", ruleset, "-q",
                                   "--json", str(out)])
        try:
            report = json.loads(out.read_text())
        except (OSError, ValueError):
            report = None
    if report is None:
        return {"verdict": f"exit {done.returncode}", "codes": [], "scores": {}, "seconds": seconds,
                "errors": (done.stdout + done.stderr).strip().splitlines()[-3:]}
    scores = {f'{b["system"]}/{b["benchmark"]}': b["score"]["score_minutes"]
              for b in report.get("benchmarks", []) if b.get("score") and b["score"].get("score_minutes") is not None}
    errors = [f for f in report.get("findings", []) if f["severity"] == "error"]
    verdict = {0: "pass", 1: "fail"}.get(done.returncode, f"exit {done.returncode}")
    return {"verdict": verdict,
            "codes": [f"{f['rule']} {f['file']}: {f['message']}" for f in errors],
            "scores": scores, "seconds": seconds}


def compare(folder: Path, ruleset: str) -> dict:
    mlperf = run_mlperf(folder, ruleset)
    ours = run_trainmark(folder, ruleset)
    both = sorted(set(mlperf["scores"]) & set(ours["scores"]))
    unequal = [(k, mlperf["scores"][k], ours["scores"][k]) for k in both
               if abs(mlperf["scores"][k] - ours["scores"][k]) > REL_TOL * abs(mlperf["scores"][k])]
    only = sorted(set(mlperf["scores"]) ^ set(ours["scores"]))
    return {"folder": folder.name, "mlperf": mlperf, "trainmark": ours, "compared": len(both),
            "equal": len(both) - len(unequal), "unequal": unequal,
            "scored_by_one_side": [(k, "mlperf" if k in mlperf["scores"] else "trainmark") for k in only]}


def machine() -> str:
    return (f"{cpu_model()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; "
            f"trainmark {importlib.metadata.version('trainmark')}, "
            f"mlperf-logging {importlib.metadata.version('mlperf-logging')}, Python {platform.python_version()}")


def report(round_name: str, ruleset: str, results: list[dict], missing: dict[str, int]) -> str:
    """The table row (markdown) and the folders where the verdicts or the scores differ."""
    fails = lambda side: sum(r[side]["verdict"] != "pass" for r in results)  # noqa: E731
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}",
             "| Round (ruleset) | folders | scores equal (1e-6) / compared | MLPerf fails | trainmark fails "
             "| time: trainmark / package checker + summarizer |",
             "|---|---|---|---|---|---|",
             f"| {round_name} ({ruleset}) | {len(results)} | {sum(r['equal'] for r in results)} of "
             f"{sum(r['compared'] for r in results)} | {fails('mlperf')} | {fails('trainmark')} "
             f"| {sum(r['trainmark']['seconds'] for r in results):.0f} s / "
             f"{sum(r['mlperf']['seconds'] for r in results):.0f} s |", ""]
    for name, count in sorted(missing.items()):
        if count:
            lines.append(f"{name}: not checked, {count} of its files are absent from the mirror")
    for r in results:
        m, t = r["mlperf"], r["trainmark"]
        if m["summarizer_crash"]:
            lines.append(f"{r['folder']}: MLPerf's summarizer crashed: {m['summarizer_crash']}")
        for key, theirs, ours in r["unequal"]:
            lines.append(f"{r['folder']}: score {key}: summarizer {theirs!r}, trainmark {ours!r}")
        for key, side in r["scored_by_one_side"]:
            lines.append(f"{r['folder']}: score {key} only from {side}")
        if m["verdict"] != t["verdict"]:
            lines.append(f"{r['folder']}: MLPerf {m['verdict']}, trainmark {t['verdict']}")
            lines += [f"    trainmark: {c[:300]}" for c in (t["codes"] or t.get("errors", []))[:5]]
            lines += [f"    MLPerf: {e[:300]}" for e in m["errors"][:5]]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("round", type=Path, help="folder holding the round's submitter folders")
    ap.add_argument("--ruleset", required=True, help="MLPerf Training ruleset, e.g. 3.1.0")
    ap.add_argument("--mirror", type=Path, help="bare git repository of the round: extract into ROUND first")
    ap.add_argument("--only", help="comma-separated submitter folders (default: all)")
    ap.add_argument("--jobs", type=int, default=1, help="folders checked at once (default 1: times comparable)")
    ap.add_argument("--json", type=Path, help="write every result to this file")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    missing = extract(args.mirror, args.round, only) if args.mirror else {}
    folders = sorted(p for p in args.round.iterdir()   # a folder missing files would fail on the mirror's account
                     if (p / "results").is_dir() and (p / "systems").is_dir() and (not only or p.name in only)
                     and not missing.get(p.name))
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = []
        for result in pool.map(lambda f: compare(f, args.ruleset), folders):
            print(f"{result['folder']}: MLPerf {result['mlperf']['verdict']} ({result['mlperf']['seconds']:.0f} s), "
                  f"trainmark {result['trainmark']['verdict']} ({result['trainmark']['seconds']:.0f} s), "
                  f"scores {result['equal']}/{result['compared']}", file=sys.stderr, flush=True)
            results.append(result)
    print(report(args.round.name, args.ruleset, results, missing))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "ruleset": args.ruleset, "missing": missing,
                                         "results": results}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
