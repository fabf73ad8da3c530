"""Issue 38, "no honest run failed", proven on a real run: the tiny benchmark trains while the test itself starts
busy processes beside it in epochs 3 and 4 of every trial. The check PASSes (the slowed epochs are at most
WORK-008, a warning naming the other load); the same folder with one epoch's time cut still FAILs (TELEMETRY-007:
the epoch rows no longer sit at their epoch_stops; WORK-003 too where the epochs are long enough to judge).

Each training step does a fixed amount of CPU work (``WORK_PER_STEP`` loop iterations), so every epoch does the
same work and only the competing load changes its time. About a minute of training on 2 cores.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys

import forge
import pytest
from conftest import TEST_RULES
from tiny_reference import TinyTest

from trainmark.cli import main

STEPS_PER_EPOCH = 16            # tiny-test: 512 samples at the default batch of 32
EPOCHS = 4                      # the metric reaches the target in epoch 4 of every trial
LOADED_EPOCHS = (2, 3)          # 0-based: the busy processes run during epochs 3 and 4
WORK_PER_STEP = 5_000_000       # loop iterations: 0.1-0.3 s a step alone: epochs of seconds, beyond clock noise
METRICS = (0.6, 0.7, 0.8, 0.95)


class CompetingLoad:
    """Busy processes (one per CPU) started and stopped by the training steps themselves. Each is started
    through a shell that exits at once, so it is not in the run's process tree (the telemetry counts that tree
    as the run): it is another process on the machine, as a neighbour's would be."""

    def __init__(self, processes: int = 2):
        self.processes = processes
        self.running: list[int] = []
        self.steps = 0

    def tick(self) -> None:
        epoch = self.steps // STEPS_PER_EPOCH % EPOCHS
        self.steps += 1
        if epoch in LOADED_EPOCHS and not self.running:
            self.running = [_detached_busy_process() for _ in range(self.processes)]
        elif epoch not in LOADED_EPOCHS:
            self.stop()
        for _ in range(WORK_PER_STEP):
            pass

    def stop(self) -> None:
        for pid in self.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.running = []


def _detached_busy_process() -> int:
    """The id of a busy Python process whose parent is not this process (the shell that started it exits)."""
    shell = subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                           capture_output=True, text=True, check=True)
    return int(shell.stdout.split()[-1])


@pytest.fixture
def contended_run(tmp_path):
    load = CompetingLoad()
    evaluations = []
    TinyTest.tick = staticmethod(load.tick)

    def metric() -> float:  # the same curve in every trial, a little higher each trial (distinct trials: WORK-004)
        evaluations.append(1)
        n = len(evaluations) - 1
        return METRICS[n % EPOCHS] + 0.001 * (n // EPOCHS)
    TinyTest.metric_override = staticmethod(metric)
    out = tmp_path / "sub"
    try:
        rc = main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--data-dir", str(tmp_path), "--out", str(out),
                   "--submitter", "ci", "--system-name", "ci-box", "--seed", "7", "--quiet"])
    finally:
        load.stop()
    assert rc == 0
    return out


def _check(root, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc = main(["check", str(root), "--rules-dir", str(TEST_RULES), "--json", "--no-reevaluate"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_an_honest_run_beside_busy_processes_passes_and_a_cut_epoch_still_fails(contended_run, tmp_path, capsys):
    rc, report = _check(contended_run, capsys)
    assert rc == 0, [f for f in report["findings"] if f["severity"] == "error"]
    bench = contended_run / "closed" / "ci" / "results" / "ci-box" / "tiny-test"
    history = json.loads((bench / "trial_1" / "trial.json").read_text())["history"]
    with capsys.disabled():  # what the load did, for the log of a run of this test
        print("\nepoch seconds, trial 1:", [round(h["train_s"], 2) for h in history],
              "findings:", sorted({f["rule"] for f in report["findings"]}))

    forged = tmp_path / "forged"
    shutil.copytree(contended_run, forged)
    fbench = forged / "closed" / "ci" / "results" / "ci-box" / "tiny-test"

    def cut(records):  # epoch 3 (loaded) keeps a tenth of its time; every later record moves back
        start = forge.record(records, "epoch_start", 3)["time_ms"]
        stop = forge.record(records, "epoch_stop", 3)
        shift = (stop["time_ms"] - start) * 9 // 10
        for r in records[records.index(stop):]:
            r["time_ms"] -= shift
    forge.edit_records(fbench / "result_2.txt", cut)
    forge.resummarize(fbench, 2)
    forge.rewrite_epochs_log(fbench)
    rc, report = _check(forged, capsys)
    # the cut is caught by the telemetry: from result format 3 on each epoch's row carries its epoch_stop's
    # millisecond, and epochs 3 and 4 of trial 2 moved off theirs (TELEMETRY-007). WORK-003 may add to it where
    # the epochs are long enough to judge beyond the clock's noise; on a quiet machine they last about a second,
    # and with format 2's 500 ms slack a periodic row stood in for a moved epoch_stop about half the time (the
    # CI run that refused session 17's submission)
    assert rc == 1 and "TELEMETRY-007" in forge.error_codes(report), forge.error_codes(report)
