"""Multi-rank results (RANK-*): one world size, global batch = local batch x world, one writer, nodes adding up.

The harness logs ``trainmark_world_size``, ``trainmark_local_batch_size`` and ``trainmark_nodes``
once per trial, and on ``run_start`` and ``run_stop`` of a multi-node run each node's cumulative
energy reading (``trainmark_node_energy_j``) beside the total (``trainmark_energy_j``). Results
written before these keys existed log none of them and are not judged here; a benchmark that logs
them in some trials must log them in all.
"""
from __future__ import annotations

import math
from typing import Any

from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import layout, mllog

RANK_001 = rule(
    "RANK-001", ERROR, "the world size is not logged the same way in every trial",
    fix="log trainmark_world_size once per trial (the harness does) and run every trial of a benchmark on the same "
    "number of ranks",
    why="The world size decides the global batch and the resources the time was measured on; it must be logged the "
    "same way in every trial. It proves inconsistency, not the real number of ranks.",
    bad="trainmark_world_size 2 in trial 1, 4 in trial 2",
    good="the same world size in every trial", module=__name__)
RANK_002 = rule(
    "RANK-002", ERROR, "the global batch is not the per-rank batch times the world size",
    fix="log global_batch_size = trainmark_local_batch_size x trainmark_world_size, with ranks spread evenly over "
    "trainmark_nodes",
    why="The global batch (what the rules judge) must be the per-rank batch times the world size, ranks spread evenly "
    "over nodes; otherwise the logged batch is not the one trained. It checks the arithmetic of logged values only.",
    bad="global 256 with local 64 on 2 ranks",
    good="global 128 = local 64 x 2 ranks", module=__name__)
RANK_003 = rule(
    "RANK-003", ERROR, "more than one process wrote a result file",
    fix="only rank 0 writes the MLLOG (`trainmark run` under torchrun does); do not concatenate the ranks' logs",
    why="Only rank 0 writes the MLLOG; records from several processes mean logs were concatenated, so events repeat "
    "and the timeline is ambiguous. It cannot say which process's records are right.",
    bad="result_1.txt holding two run_start records from ranks 0 and 1",
    good="one writer", module=__name__)
RANK_004 = rule(
    "RANK-004", ERROR, "the nodes' energy readings do not add up to the total",
    fix="trainmark_energy_j must equal the sum of trainmark_node_energy_j (one reading per node, null with a null "
    "total)",
    why="The total energy of a multi-node run is the sum of its nodes' readings; a total that differs was edited or "
    "metered elsewhere. It checks the sum of logged readings, not the meters.",
    bad="total 1000 J, nodes 300 J + 300 J",
    good="total 600 J, nodes 300 J + 300 J", module=__name__)
RANK_005 = rule(
    "RANK-005", ERROR, "a multi-node run records its total energy without the per-node readings",
    fix="record trainmark_node_energy_j on run_start and run_stop, one reading per node (each node's local rank 0 "
    "meters it)",
    why="A multi-node total without per-node readings cannot be checked (RANK-004 needs them). It proves the readings "
    "are absent.",
    bad="trainmark_nodes 2, no trainmark_node_energy_j",
    good="one reading per node on run_start and run_stop", module=__name__)

WORLD, LOCAL, NODES, NODE_ENERGY = ("trainmark_world_size", "trainmark_local_batch_size", "trainmark_nodes",
                                    "trainmark_node_energy_j")
# Keys the harness writes exactly once per trial from rank 0: a second copy means a second writer.
ONCE = (mllog.INIT_START, mllog.INIT_STOP, mllog.RUN_START, mllog.RUN_STOP, mllog.SEED, mllog.TRIAL_RESULT, WORLD)
ENERGY_TOLERANCE_J = 1e-6  # readings are summed in float64 and logged as JSON numbers (17 digits)


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _count(x: Any) -> int | None:
    return x if type(x) is int and x >= 1 else None


def check_ranks(events_by_trial: dict[int, list], folder_rel: str, findings: Findings) -> None:
    """Every RANK-* rule over the MLLOG events of one benchmark folder (``{trial: [Event]}``)."""
    worlds: dict[int, tuple[int | None, int]] = {}
    for k, events in sorted(events_by_trial.items()):
        rel = _join(folder_rel, layout.result_file(k))
        _one_writer(events, rel, findings)
        by_key: dict[str, list] = {}
        for e in events:
            by_key.setdefault(e.key, []).append(e)
        if WORLD not in by_key:
            continue
        world_event = by_key[WORLD][0]
        world = _count(world_event.value)
        worlds[k] = (world, world_event.line)
        if world is None:
            findings.add(RANK_001, rel, "trainmark_world_size is not a positive integer", line=world_event.line,
                         expected="an integer >= 1", seen=world_event.value)
            continue
        _batch(by_key, world, rel, findings)
        _nodes(by_key, world, rel, findings)
    if worlds and len(worlds) < len(events_by_trial):
        k = min(set(events_by_trial) - set(worlds))
        findings.add(RANK_001, _join(folder_rel, layout.result_file(k)), f"trial {k} does not log trainmark_world_size "
                     "while other trials of the benchmark do", expected="trainmark_world_size in every trial",
                     seen="missing")
    seen_worlds = {w for w, _ in worlds.values() if w is not None}
    if len(seen_worlds) > 1:
        first = min(worlds)
        for k, (w, line) in sorted(worlds.items()):
            if w is not None and w != worlds[first][0]:
                findings.add(RANK_001, _join(folder_rel, layout.result_file(k)),
                             f"trial {k} ran on {w} ranks, trial {first} on {worlds[first][0]}", line=line,
                             expected=worlds[first][0], seen=w)


def _one_writer(events: list, rel: str, findings: Findings) -> None:
    counts: dict[str, list[int]] = {}
    for e in events:
        if e.key in ONCE:
            counts.setdefault(e.key, []).append(e.line)
    repeated = {key: lines for key, lines in counts.items() if len(lines) > 1}
    if repeated:
        key, lines = next(iter(repeated.items()))
        findings.add(RANK_003, rel, f"{', '.join(sorted(repeated))} logged more than once: more than one process "
                     f"wrote this file", line=lines[1], expected=f"{key} once (rank 0 writes)",
                     seen=f"{len(lines)} times, lines {', '.join(map(str, lines[:5]))}")


def _batch(by_key: dict, world: int, rel: str, findings: Findings) -> None:
    local_e = (by_key.get(LOCAL) or [None])[0]
    global_e = (by_key.get("global_batch_size") or [None])[0]
    if local_e is None or global_e is None:
        findings.add(RANK_002, rel, "the global and per-rank batch sizes must both be logged with the world size",
                     line=(local_e or global_e).line if (local_e or global_e) else None,
                     expected=f"global_batch_size and {LOCAL}", seen="missing")
        return
    local, glob = _count(local_e.value), _count(global_e.value)
    if local is None or glob is None or local * world != glob:
        findings.add(RANK_002, rel, f"global batch {global_e.value!r} is not the per-rank batch {local_e.value!r} "
                     f"x {world} ranks", line=local_e.line,
                     expected=f"global_batch_size = {LOCAL} x {WORLD}", seen=f"{global_e.value!r} vs "
                     f"{local_e.value!r} x {world}")


def _nodes(by_key: dict, world: int, rel: str, findings: Findings) -> None:
    node_e = (by_key.get(NODES) or [None])[0]
    nodes = _count(node_e.value) if node_e is not None else 1
    if nodes is None or world % nodes:
        findings.add(RANK_002, rel, f"{world} ranks cannot be spread evenly over {node_e.value!r} nodes",
                     line=node_e.line, expected=f"{NODES} dividing {WORLD}", seen=node_e.value)
        return
    for key in (mllog.RUN_START, mllog.RUN_STOP):
        for e in by_key.get(key, [])[:1]:
            total = e.metadata.get(mllog.ENERGY_J)
            per_node = e.metadata.get(NODE_ENERGY)
            if nodes == 1 and per_node is None:
                continue
            if per_node is None:
                if total is not None:
                    findings.add(RANK_005, rel, f"{nodes} nodes, but {key} records no per-node energy", line=e.line,
                                 expected=f"{NODE_ENERGY}: one reading per node", seen="missing")
                continue
            _node_sum(e, key, total, per_node, nodes, rel, findings)


def _node_sum(e, key: str, total: Any, per_node: Any, nodes: int, rel: str, findings: Findings) -> None:
    numbers = isinstance(per_node, list) and all(
        v is None or (type(v) in (int, float) and math.isfinite(v) and v >= 0) for v in per_node)
    if not numbers or len(per_node) != nodes:
        findings.add(RANK_004, rel, f"{key}: {NODE_ENERGY} must list one reading per node", line=e.line,
                     expected=f"{nodes} non-negative numbers or null", seen=per_node)
        return
    if None in per_node:
        if total is not None:
            findings.add(RANK_004, rel, f"{key}: a node's energy is null but the total is not", line=e.line,
                         expected="trainmark_energy_j null", seen=total)
        return
    ok = type(total) in (int, float) and math.isfinite(total) and \
        abs(sum(per_node) - total) <= ENERGY_TOLERANCE_J * max(1.0, abs(total))
    if not ok:
        findings.add(RANK_004, rel, f"{key}: the nodes' energy does not add up to the total", line=e.line,
                     expected=f"trainmark_energy_j = sum of {NODE_ENERGY} = {sum(per_node)!r}", seen=total)
