"""Multi-rank checks (checker/checks/ranks.py, RANK-*) on hand-made MLLOG events."""
import json

from trainmark.checker.checks.ranks import check_ranks
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.verdict.findings import Findings


def mllog(world=2, local=16, glob=32, nodes=1, node_energy=None, total=None, extra=()):
    recs = [("init_start", None, {}), ("seed", 7, {}), ("global_batch_size", glob, {})]
    if world is not None:
        recs += [("trainmark_world_size", world, {}), ("trainmark_local_batch_size", local, {}),
                 ("trainmark_nodes", nodes, {})]
    recs += [("init_stop", None, {})]
    start_meta = {"trainmark_energy_j": 0.0 if total is not None else None}
    stop_meta = {"trainmark_energy_j": total}
    if node_energy is not None:
        start_meta["trainmark_node_energy_j"] = [None if v is None else 0.0 for v in node_energy]
        stop_meta["trainmark_node_energy_j"] = node_energy
    recs += [("run_start", None, start_meta), ("run_stop", None, {"status": "success", **stop_meta}), *extra]
    lines = [":::MLLOG " + json.dumps({"namespace": "", "time_ms": 1000 + i, "event_type": "POINT_IN_TIME", "key": k,
                                       "value": v, "metadata": {"file": "x.py", "lineno": 1, **m}})
             for i, (k, v, m) in enumerate(recs)]
    return ("\n".join(lines) + "\n").encode()


def run(*files):
    findings = Findings()
    events = {k: read_events(data, f"b/result_{k}.txt", findings, strict=True) for k, data in enumerate(files, 1)}
    assert not list(findings)
    check_ranks(events, "b", findings)
    return sorted({(f.rule, f.file) for f in findings})


def test_consistent_multi_rank_results_pass():
    assert run(mllog(), mllog()) == []
    assert run(mllog(nodes=2, node_energy=[1.25, 2.5], total=3.75),
               mllog(nodes=2, node_energy=[1.0, 1.0], total=2.0)) == []


def test_results_without_rank_keys_are_not_judged():
    assert run(mllog(world=None), mllog(world=None)) == []


def test_world_size_must_agree_and_be_logged_in_every_trial():
    assert run(mllog(), mllog(world=4, local=8)) == [("RANK-001", "b/result_2.txt")]
    assert run(mllog(), mllog(world=None)) == [("RANK-001", "b/result_2.txt")]
    assert run(mllog(world=0)) == [("RANK-001", "b/result_1.txt")]


def test_global_batch_is_local_batch_times_world():
    assert run(mllog(world=2, local=16, glob=48)) == [("RANK-002", "b/result_1.txt")]
    assert run(mllog(world=4, local=8, glob=32, nodes=3)) == [("RANK-002", "b/result_1.txt")]


def test_a_second_writer_is_caught():
    dup = (("run_start", None, {"trainmark_energy_j": None}), ("seed", 7, {}))
    assert run(mllog(extra=dup)) == [("RANK-003", "b/result_1.txt")]


def test_node_energy_must_add_up_to_the_total():
    assert run(mllog(nodes=2, node_energy=[1.0, 2.0], total=3.5)) == [("RANK-004", "b/result_1.txt")]
    assert run(mllog(nodes=2, node_energy=[1.0], total=1.0)) == [("RANK-004", "b/result_1.txt")]
    assert run(mllog(nodes=2, node_energy=[1.0, None], total=1.0)) == [("RANK-004", "b/result_1.txt")]
    assert run(mllog(nodes=2, node_energy=[1.0, "2"], total=3.0)) == [("RANK-004", "b/result_1.txt")]
    assert run(mllog(nodes=2, node_energy=[1.0, None], total=None)) == []


def test_a_multi_node_total_without_per_node_readings_is_caught():
    assert run(mllog(nodes=2, total=3.0)) == [("RANK-005", "b/result_1.txt")]
    assert run(mllog(nodes=2, total=None)) == []
