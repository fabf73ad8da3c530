"""Two nodes on localhost: two torchrun invocations (node 0 and node 1, c10d rendezvous, gloo).

Each node's local rank 0 meters its node (here the labelled W x time estimate: this machine has
no readable counter), the readings are summed into the trial's energy with each node's recorded
beside it, and the system description lists both nodes.
"""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from conftest import TEST_RULES

from trainmark.checker.checks.ranks import check_ranks
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.verdict.findings import Findings

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_nodes_on_localhost(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE)}
    port = free_port()
    procs = []
    for node in (0, 1):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
               "--node-rank", str(node), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
               "--rdzv-id", "trainmark-two-nodes", str(HERE / "dist_launch.py"), "run", "tiny-test", "--trials", "1",
               "--rules-dir", str(TEST_RULES), "--out", str(out), "--submitter", "acme", "--system-name", "pair",
               "--seed", "11", "--quiet", "--energy-estimate-watts", "7", "--data-dir", str(tmp_path)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]

    system = json.loads((out / "closed" / "acme" / "systems" / "pair.json").read_text())
    assert int(system["number_of_nodes"]) == 2
    assert [n["node"] for n in system["nodes"]] == [0, 1]
    d = out / "closed" / "acme" / "results" / "pair" / "tiny-test"
    data = (d / "result_1.txt").read_bytes()
    findings = Findings()
    events = read_events(data, "result_1.txt", findings, strict=True)
    by_key = {}
    for e in events:
        by_key.setdefault(e.key, []).append(e)
    assert [e.value for e in by_key["trainmark_world_size"]] == [2]
    assert [e.value for e in by_key["trainmark_nodes"]] == [2]
    for key in ("run_start", "run_stop"):
        (e,) = by_key[key]
        per_node, total = e.metadata["trainmark_node_energy_j"], e.metadata["trainmark_energy_j"]
        assert len(per_node) == 2 and all(v > 0 for v in per_node)
        assert sum(per_node) == total
    start, stop = by_key["run_start"][0].metadata, by_key["run_stop"][0].metadata
    node_j = [b - a for a, b in zip(start["trainmark_node_energy_j"], stop["trainmark_node_energy_j"])]
    assert all(j > 0 for j in node_j)  # each node's own estimate grew over the run
    assert by_key["trainmark_energy_method"][0].value == "estimated"
    assert by_key["trainmark_energy_scope"][0].value == "2 nodes x estimate"
    trial = json.loads((d / "trial_1" / "trial.json").read_text())
    assert trial["world_size"] == 2 and trial["status"] == "converged"
    assert trial["total_energy_j"] == stop["trainmark_energy_j"] - start["trainmark_energy_j"]

    check_ranks({1: events}, "", findings)
    assert [f.rule for f in findings] == []
    # one node's reading changed: the checker sees that the nodes no longer add up
    tampered = data.replace(json.dumps(stop["trainmark_node_energy_j"][1]).encode(), b"0.5", 1)
    assert tampered != data
    findings = Findings()
    check_ranks({1: read_events(tampered, "result_1.txt", findings, strict=True)}, "", findings)
    assert [f.rule for f in findings] == ["RANK-004"]
