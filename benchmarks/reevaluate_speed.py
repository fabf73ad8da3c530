"""What ``trainmark check --reevaluate`` costs: seconds per trial for each mini, per framework.

For every benchmark folder of the committed examples (``submissions/closed/trainmark/results/<system>/<mini>``)
it builds the evaluator once (the data read and checked, the reference model or Keras twin built: "setup") and
then re-evaluates each trial's ``model.safetensors`` (weights loaded, one full evaluation pass: "per trial"),
as ``--reevaluate`` does, and prints the logged and re-measured metric beside the times, the CPU model and the
load average (the development machine is shared: say whether it was quiet).

Data: Fashion-MNIST from the Debian package, the sequence minis' prepared folders through their environment
variables (TRAINMARK_LSTM_MINI, TRAINMARK_TRANSFORMER_MINI, TRAINMARK_DS2_MINI) or ``--data-dir NAME=DIR``.

Usage: python benchmarks/reevaluate_speed.py [--submissions DIR] [--benchmarks resnet-mini,...] [--trials N]
                                             [--data-dir NAME=DIR ...]
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from trainmark.cli.check import data_dirs
from trainmark.format import layout, mllog
from trainmark.harness.measure.system import cpu_model
from trainmark.harness.reevaluate import Reevaluation, evaluation_precision
from trainmark.rules import get_rules

ROOT = Path(__file__).resolve().parent.parent
MINIS = ("resnet-mini", "vgg-mini", "inception-mini", "lstm-mini", "transformer-mini", "ds2-mini")


def folders(submissions: Path, names: list[str]):
    """(system, benchmark folder) of every committed example of ``names``."""
    for bench in sorted(submissions.glob("*/*/results/*/*")):
        if bench.name in names:
            yield bench.parent.name, bench


def trial_settings(bench: Path, k: int) -> tuple[str, str, str, float]:
    """(framework, precision, rules version, logged final metric) of trial ``k`` (our own example: trusted)."""
    lines = (bench / layout.result_file(k)).read_text().splitlines()
    records = [json.loads(line[len(mllog.PREFIX):]) for line in lines if line.startswith(mllog.PREFIX)]
    first = {r["key"]: r["value"] for r in reversed(records)}
    summary = json.loads((bench / layout.trial_dir(k) / layout.TRIAL_JSON).read_text())
    return (first.get(mllog.FRAMEWORK, "pytorch"), evaluation_precision(first.get(mllog.PRECISION)),
            summary["rules_version"], summary["final_metric"])


def measure(session: Reevaluation, bench: Path, trials: int) -> tuple[float, list[float], list[str]]:
    """(setup seconds, seconds of each trial, 'logged -> measured' of each trial) of one benchmark folder."""
    seconds, pairs, setup = [], [], 0.0
    for k in range(1, trials + 1):
        framework, precision, version, logged = trial_settings(bench, k)
        rules = get_rules(bench.name, version)
        start = time.perf_counter()
        session.evaluator(rules, framework, precision)
        setup += time.perf_counter() - start
        outcome = session.measure(rules, framework, precision, (bench / layout.trial_dir(k) / layout.MODEL_FILE)
                                  .read_bytes())
        seconds.append(outcome.seconds)
        pairs.append(f"{logged:.6g} -> {outcome.metric:.6g}" if outcome.metric is not None else outcome.refused)
    return setup, seconds, pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=Path, default=ROOT / "submissions")
    parser.add_argument("--benchmarks", default=",".join(MINIS))
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--data-dir", action="append", default=[], metavar="[NAME=]DIR")
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}; load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'system':<22} {'benchmark':<17} {'setup s':>8} {'s/trial':>8} {'max s':>7}  logged -> re-measured")
    session = Reevaluation(data_dirs(args.data_dir))
    for system, bench in folders(args.submissions, args.benchmarks.split(",")):
        setup, seconds, pairs = measure(session, bench, args.trials)
        print(f"{system:<22} {bench.name:<17} {setup:8.1f} {sum(seconds) / len(seconds):8.2f} {max(seconds):7.2f}  "
              f"{'; '.join(pairs)}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
