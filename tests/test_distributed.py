"""Two ranks under torchrun (gloo): one writer, no duplicated MLLOG lines, the same results."""
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import TEST_RULES

from trainmark.format import epochlog

HERE = Path(__file__).parent


def test_two_ranks_write_once(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", "29533",
           str(HERE / "dist_launch.py"), "run", "tiny-test", "--trials", "2", "--rules-dir", str(TEST_RULES),
           "--out", str(out), "--submitter", "acme", "--system-name", "box", "--seed", "5", "--quiet"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = out / "closed" / "acme" / "results" / "box" / "tiny-test"
    lines = [epochlog.parse_line(x) for x in (d / "epochs.log").read_text().splitlines()]
    assert [x.trial for x in lines] == sorted(x.trial for x in lines) and {x.trial for x in lines} == {1, 2}
    for k in (1, 2):
        events = [json.loads(x.split(" ", 1)[1]) for x in (d / f"result_{k}.txt").read_text().splitlines()]
        keys = [e["key"] for e in events]
        for key in ("run_start", "run_stop", "seed", "init_start", "trainmark_trial_result"):
            assert keys.count(key) == 1, key
        t = json.loads((d / f"trial_{k}" / "trial.json").read_text())
        assert t["world_size"] == 2 and t["status"] == "converged"
        # the evaluation covers all 512 points across both ranks: accuracy is a multiple of 1/512
        assert abs(t["final_metric"] * 512 - round(t["final_metric"] * 512)) < 1e-6
