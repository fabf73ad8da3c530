"""Several nodes under torchrun: every node's energy, summed at the same instants, and every node described.

Each node's local rank 0 opens that node's meter (``trainmark.harness.measure.energy.open_meter``: all
its GPUs, or its CPU packages); the other ranks hold none. ``NodeSumMeter.joules()`` is a
collective: every rank calls it at the same window boundary (the trial loop does), each local
rank 0 contributes its node's cumulative reading, and every rank gets the sum. The per-node
readings of the last call stay in ``per_node`` so the MLLOG can record them beside the total
(``trainmark_node_energy_j``; the checker verifies that they add up, RANK-004).

Node numbers are torchrun's ``GROUP_RANK`` (the rendezvous's node rank).
"""
from __future__ import annotations

import os
import socket
from typing import Any

from trainmark.harness.measure import energy

NODE_ENERGY_KEY = "trainmark_node_energy_j"
_ORDER = (energy.UNAVAILABLE, energy.ESTIMATED, energy.MEASURED_POWER, energy.MEASURED_COUNTER)


def topology(dist) -> tuple[int, int, int]:
    """(number of nodes, this node's number, ranks per node) from torchrun's environment."""
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", dist.world))
    if local_world < 1 or dist.world % local_world:
        raise RuntimeError(f"world size {dist.world} is not a multiple of LOCAL_WORLD_SIZE {local_world}: "
                           "trainmark needs the same number of ranks on every node")
    nnodes = dist.world // local_world
    node = int(os.environ.get("GROUP_RANK", dist.rank // local_world))
    return nnodes, node, local_world


class NodeSumMeter(energy.MeterBase):
    """The sum of every node's meter; ``joules()`` and ``readings()`` must be called by all ranks together.
    It has no domains of its own: each node's reading is in ``per_node``."""

    def __init__(self, local, dist, device, nnodes: int, node: int):
        from trainmark.harness.frameworks import distributed

        self.local, self.dist, self.nnodes, self.node = local, dist, nnodes, node
        self._failed = distributed.COLLECTIVE_FAILED
        self._device = distributed.host_or(device)  # NCCL reduces device tensors only; gloo host tensors
        self.per_node: list[float | None] = [None] * nnodes
        mine = (node, local.method, local.reason, local.scope) if local is not None else None
        gathered = dist.gather(mine)
        nodes = sorted({g for g in gathered if g is not None})
        if [n for n, *_ in nodes] != list(range(nnodes)):
            raise RuntimeError(f"expected one energy meter per node 0..{nnodes - 1}, "
                               f"got nodes {[n for n, *_ in nodes]}")
        self.methods = [m for _, m, _, _ in nodes]
        self.method = min(self.methods, key=_ORDER.index)
        reasons = [f"node {n}: {r}" for n, _, r, _ in nodes if r]
        self.reason = "; ".join(reasons) or None
        scopes = {sc for *_, sc in nodes}
        # what the total covers: every node's own scope (energy.open_meter's), summed over the nodes
        self.scope = (f"{nnodes} nodes x {scopes.pop()}" if len(scopes) == 1 and None not in scopes
                      else None if None in scopes else f"{nnodes} nodes: " + "; ".join(
                          f"node {n}: {sc}" for n, *_, sc in nodes))

    def start(self) -> None:
        if self.local is not None:
            self.local.start()

    def joules(self) -> float | None:
        values = [0.0] * (2 * self.nnodes)  # per node: its joules and 1 where it has a reading
        if self.local is not None:
            value = self.local.joules()
            if value is not None:
                values[2 * self.node], values[2 * self.node + 1] = float(value), 1.0
        try:
            values = self.dist.sum(values, self._device)  # float64, summed over the ranks
        except self._failed:  # a rank died: the run ends, energy unknown
            self.per_node = [None] * self.nnodes
            self.reason = "a rank stopped answering: the nodes' energy could not be summed"
            return None
        self.per_node = [values[2 * i] if values[2 * i + 1] >= 0.5 else None for i in range(self.nnodes)]
        return None if None in self.per_node else sum(self.per_node)

    def stop(self) -> None:
        if self.local is not None:
            self.local.stop()


def open_node_meter(device, dist, estimate_watts: float | None, device_ids=None) -> NodeSumMeter:
    """Each node's local rank 0 meters its node; every rank gets the sum (collective: call on all ranks)."""
    nnodes, node, local_world = topology(dist)
    local = None
    if dist.local_rank == 0:
        ids = device_ids(device, list(range(local_world))) if device_ids else list(range(local_world))
        local = energy.open_meter(str(device), estimate_watts, device_ids=ids)
    return NodeSumMeter(local, dist, device, nnodes, node)


def node_fields(meter) -> dict:
    """MLLOG metadata with each node's reading of the meter's last call; {} for a one-node meter."""
    if isinstance(meter, NodeSumMeter):
        return {NODE_ENERGY_KEY: list(meter.per_node)}
    return {}


def describe_nodes(sysdesc: dict, dist, detect) -> dict:
    """The system description with ``number_of_nodes`` and a ``nodes`` list (collective on all ranks).

    ``detect()`` runs on each node's local rank 0; a one-node world returns ``sysdesc`` unchanged.
    """
    nnodes, node, _ = topology(dist)
    if nnodes == 1:
        return sysdesc
    mine = None
    if dist.local_rank == 0:
        facts = detect()
        mine = {"node": node, "hostname": socket.gethostname(),
                **{k: facts.get(k) for k in ("host_processor_model_name", "host_processor_core_count",
                                             "host_memory_capacity", "accelerator_model_name",
                                             "accelerators_per_node", "operating_system")}}
    nodes = sorted((g for g in dist.gather(mine) if g is not None), key=lambda g: g["node"])
    count = sysdesc.get("number_of_nodes")
    return {**sysdesc, "number_of_nodes": str(nnodes) if isinstance(count, str) else nnodes, "nodes": nodes}


def rank_events(dist, local_batch: int) -> list[tuple[str, Any]]:
    """The MLLOG points the multi-rank checks read: world size, per-rank batch, nodes."""
    nnodes = topology(dist)[0] if dist.world > 1 else 1
    return [("trainmark_world_size", dist.world), ("trainmark_local_batch_size", local_batch),
            ("trainmark_nodes", nnodes)]


# ---------------------------------------------------------------- naming a rank that died

_PEERS: list[tuple[int, int, str, int]] = []  # (rank, local rank, host, pid) of every rank of this run
DEATH_GRACE_S = 2.0


def record_peers(dist) -> None:
    """Every rank's host and process id, gathered once after the process group forms (collective)."""
    _PEERS.clear()
    if dist.world == 1:
        return
    _PEERS.extend(sorted(dist.gather((dist.rank, dist.local_rank, socket.gethostname(), os.getpid()))))


def _gone(pid: int) -> bool:
    """No such process, or one that has exited and waits to be reaped (a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state in (b"Z", b"X")
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False


def dead_ranks(dist, grace_s: float = DEATH_GRACE_S) -> tuple[list[tuple[int, int, int]], int]:
    """([(rank, local rank, pid)] of ranks on this host whose process is gone, ranks on other hosts).

    A peer's connection closes as its process exits, so the process may still be going when the
    collective fails here: look again for up to ``grace_s`` seconds.
    """
    import time

    here = socket.gethostname()
    local = [(r, lr, pid) for r, lr, host, pid in _PEERS if host == here and r != dist.rank]
    remote = sum(1 for _, _, host, _ in _PEERS if host != here)
    deadline = time.monotonic() + grace_s
    while True:
        dead = [p for p in local if _gone(p[2])]
        if dead or time.monotonic() >= deadline:
            return dead, remote
        time.sleep(0.05)


def dead_ranks_note(dist) -> str:
    """'rank 1 (local rank 1, pid 123) died; ' for a crashed trial's error, or '' (one rank, none found).

    A crashed multi-rank trial ends the run (harness/run.py), and torchrun sends SIGTERM to the
    ranks still alive as soon as it sees one die: from here on SIGTERM is ignored, so that the
    crashed trial is recorded whole (torchrun's SIGKILL, 30 s later, stays the backstop).
    """
    if dist.world == 1 or not _PEERS:
        return ""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dead, remote = dead_ranks(dist)
    if dead:
        names = ", ".join(f"rank {r} (local rank {lr}, pid {pid})" for r, lr, pid in dead)
        return f"{names} died; "
    return f"no rank on this host died ({remote} ranks on other hosts not checked); " if remote else ""
