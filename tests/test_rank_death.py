"""A rank that dies mid-trial under torchrun: the run ends, the trial is recorded as crashed with the rank named."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import TEST_RULES

HERE = Path(__file__).parent


def test_a_dead_rank_ends_the_run_and_is_named(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE), "DIE_RANK": "1", "DIE_STEP": "5"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc-per-node", "2",
           str(HERE / "dist_die_launch.py"), "run", "tiny-test", "--trials", "2", "--rules-dir", str(TEST_RULES),
           "--out", str(out), "--submitter", "acme", "--system-name", "box", "--seed", "5", "--quiet",
           "--data-dir", str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert re.search(r"rank\s*:\s*1 \(local_rank: 1\)", proc.stderr)  # torchrun's own summary names it too
    d = out / "closed" / "acme" / "results" / "box" / "tiny-test"
    assert not (d / "result_2.txt").exists() and not (d / "trial_2").exists()  # the run ended at the crash
    trial = json.loads((d / "trial_1" / "trial.json").read_text())
    assert trial["status"] == "crashed" and trial["error"].startswith("rank 1 (local rank 1, pid ")
    events = [json.loads(x.split(" ", 1)[1]) for x in (d / "result_1.txt").read_text().splitlines()]
    (summary,) = [e["value"] for e in events if e["key"] == "trainmark_trial_result"]
    assert summary["status"] == "crashed" and summary["error"].startswith("rank 1 ")
    (stop,) = [e for e in events if e["key"] == "run_stop"]
    assert stop["metadata"]["status"] == "aborted"


def _outcome_of_a_signal(monkeypatch, peer_pid: int):
    """What rank 0's trial records when torchrun's SIGTERM (a KeyboardInterrupt here) reaches it, rank 1 being
    ``peer_pid``: the race a loaded machine lost in CI, where the signal came before the collective failed."""
    import signal
    import socket
    from types import SimpleNamespace

    from trainmark.harness import trial
    from trainmark.harness.measure import nodes

    host = socket.gethostname()
    monkeypatch.setattr(nodes, "_PEERS", [(0, 0, host, os.getpid()), (1, 1, host, peer_pid)])
    dist = SimpleNamespace(world=2, rank=0, local_rank=0)
    res = trial.TrialResult()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with trial._Outcome(res, dist) as outcome:
            raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGTERM, previous)
    return res, outcome


def test_torchruns_sigterm_after_a_rank_died_is_that_ranks_crash(monkeypatch):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # exited and reaped: gone
    res, outcome = _outcome_of_a_signal(monkeypatch, dead.pid)
    assert res.status == "crashed" and res.error.startswith(f"rank 1 (local rank 1, pid {dead.pid}) died; ")
    assert outcome.interrupted is None  # recorded as the crash, not re-raised as the user's Ctrl-C


def test_a_ctrl_c_with_every_rank_alive_is_an_abort(monkeypatch):
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        res, outcome = _outcome_of_a_signal(monkeypatch, alive.pid)
    finally:
        alive.kill()
        alive.wait()
    assert res.status == "aborted" and outcome.interrupted is not None
