"""TensorFlow's side of ``trainmark profile`` (harness/profile/): a Keras twin's training steps under
TensorFlow's profiler (``tf.profiler.experimental``), its trace (an XSpace protobuf) read back, and each
executed op joined by its node name to the traced step's graph, which gives its shapes, dtypes and FLOPs.

What the trace holds: on the host plane, one event per executed op on the executor's threads, named
``node_name:OpType``, lasting from the op's start to its end on that thread. Ops of one step may run
side by side on several inter-op threads; where k run at once each is charged 1/k of that stretch, so
the operators' times add up to the time some op ran, as PyTorch's outermost operators do.
FLOPs are the harness's TensorFlow count (tensorflow_backend._op_flops: convolutions and matmuls, forward
and gradients); bytes are every input's and every output's shape x dtype size. Ops whose node the
traced graph does not hold (Grappler's rewrites, a loop body's nodes) keep their time with no FLOPs
and no bytes; the join's counts say how many.
"""
from __future__ import annotations

import glob
import tempfile
import time
from collections import defaultdict
from typing import Any, Callable

from trainmark.reference.tf_import import tf  # first: it imports TensorFlow safely beside PyTorch

# isort: split
from trainmark.harness.frameworks import tensorflow_backend as _backend

STEP_TRACE = "trainmark_step"
DTYPE_LABELS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}
# where a node's name says it runs: the gradient tape's scope, the optimizer's apply step
BACKWARD_SCOPES = ("gradient_tape/", "gradients/")
OPTIMIZER_WORDS = ("optimizer", "sgd", "adam", "apply_gradients", "clip_by_global_norm", "assignaddvariableop",
                   "assignsubvariableop", "resourceapply")


def _nbytes(t) -> int | None:
    """A tensor's bytes from its static shape and dtype (None: unknown shape or a resource handle)."""
    if t.dtype in (tf.resource, tf.variant) or t.shape.rank is None or None in t.shape.as_list():
        return None
    n = 1
    for d in t.shape.as_list():
        n *= d
    return n * t.dtype.size


def _graph_ops(graph) -> dict[str, Any]:
    """Every op of the step's graph and of the functions it calls, by node name."""
    out = {op.name: op for op in graph.get_operations()}
    for fn in getattr(graph, "_functions", {}).values():
        inner = getattr(fn, "graph", None)
        if inner is not None:
            out.update({op.name: op for op in inner.get_operations()})
    return out


def _op_record(op) -> dict:
    """Per call of one graph op: FLOPs, bytes read and written, dtype, shapes."""
    reads = [_nbytes(t) for t in op.inputs]
    if op.type == "ReadVariableOp":  # reading a variable moves its value
        reads = [_nbytes(t) for t in op.outputs]
    flops = _backend._op_flops(op)
    floats = [t.dtype.name for t in [*op.inputs, *op.outputs] if t.dtype.is_floating]
    written = sum(b for b in map(_nbytes, op.outputs) if b)
    return {"flops": flops, "read": sum(b for b in reads if b), "written": written,
            "dtype": DTYPE_LABELS.get(floats[0], floats[0]) if floats else None,
            "shapes": [t.shape.as_list() for t in op.inputs if t.dtype not in (tf.resource, tf.variant)
                       and t.shape.rank]}


def _phase(node: str) -> str:
    low = node.lower()
    if any(low.startswith(s) or f"/{s}" in low for s in BACKWARD_SCOPES):
        return "backward"
    if any(w in low for w in OPTIMIZER_WORDS):
        return "optimizer"
    return "forward"


def _op_events(space) -> dict[str, list[float]]:
    """node name -> its executions' shares of the host's busy time (s): where k ops run at once on the
    executor's threads, each is charged 1/k of that time, so the shares add up to the time some op ran
    (the union of the ops' intervals), never to more than the wall time."""
    intervals = []
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            base = line.timestamp_ns * 1000
            for e in line.events:
                md = plane.event_metadata[e.metadata_id]
                if md.display_name and ":" in md.name:
                    start = base + e.offset_ps
                    intervals.append((start, start + e.duration_ps, md.name.rsplit(":", 1)[0]))
    return _fair_shares(intervals)


def _fair_shares(intervals: list[tuple[int, int, str]]) -> dict[str, list[float]]:
    """Sweep the intervals' boundaries in order; each stretch of time is split evenly among the open ones."""
    edges = sorted([(s, 1, i) for i, (s, _, _) in enumerate(intervals)] +
                   [(e, 0, i) for i, (_, e, _) in enumerate(intervals)])
    share = [0.0] * len(intervals)
    open_now: set[int] = set()
    last = None
    for at, starts, i in edges:
        if open_now and last is not None and at > last:
            part = (at - last) / len(open_now) / 1e12
            for j in open_now:
                share[j] += part
        last = at
        (open_now.add if starts else open_now.discard)(i)
    out: dict[str, list[float]] = defaultdict(list)
    for (_, _, node), s in zip(intervals, share):
        out[node].append(s)
    return out


def _read_space(logdir: str):
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    files = sorted(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True))
    space = xplane_pb2.XSpace()
    if files:
        with open(files[-1], "rb") as fh:
            space.ParseFromString(fh.read())
    return space


def profiled(step: Callable[[Any], None], next_batch: Callable[[], Any], steps: int,
             loss_value: Callable[[], float]) -> tuple[Any, float, float]:
    """``steps`` steps under TensorFlow's profiler; (the trace, wall seconds, seconds fetching batches)."""
    waited = 0.0
    with tempfile.TemporaryDirectory(prefix="trainmark-tfprof-") as logdir:
        tf.profiler.experimental.start(logdir, options=tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=2, python_tracer_level=0, device_tracer_level=1))
        try:
            t0 = time.perf_counter()
            for i in range(steps):
                with tf.profiler.experimental.Trace(STEP_TRACE, step_num=i, _r=1):
                    w0 = time.perf_counter()
                    batch = next_batch()
                    waited += time.perf_counter() - w0
                    step(batch)
                    loss_value()  # the step's result read: its ops have run
            wall = time.perf_counter() - t0
        finally:
            tf.profiler.experimental.stop()
        space = _read_space(logdir)
    return space, wall, waited


GRAPPLER_SCOPE = "/ArithmeticOptimizer/"
GRAPPLER_RENAMES = ("FoldTransposeIntoMatMul_",)   # rewrites that keep the op's work and append its old name


def _graph_op(node: str, ops: dict[str, Any]):
    """The traced graph's op behind an executed node; a node Grappler rewrote by folding a transpose into a
    matmul (``<scope>/ArithmeticOptimizer/FoldTransposeIntoMatMul_<name>``) is the matmul ``<scope>/<name>``."""
    if node in ops or GRAPPLER_SCOPE not in node:
        return ops.get(node)
    scope, _, rewritten = node.partition(GRAPPLER_SCOPE)
    for prefix in GRAPPLER_RENAMES:
        if rewritten.startswith(prefix):
            return ops.get(f"{scope}/{rewritten[len(prefix):]}")
    return None


def operators(durations: dict[str, list[float]], ops: dict[str, Any], steps: int) -> tuple[list[dict], dict]:
    """Executed ops aggregated by (type, input shapes, phase), per step; the join's counts."""
    rows: dict[tuple, dict] = {}
    matched = total = 0
    for node, times in durations.items():
        op = _graph_op(node, ops)
        record = _op_record(op) if op is not None else None
        kind = op.type if op is not None else "unmatched"
        total += len(times)
        matched += len(times) if record else 0
        shapes = record["shapes"] if record else []
        key = (kind, str(shapes), _phase(node))
        row = rows.setdefault(key, {"name": kind, "shapes": shapes, "phase": key[2], "calls": 0, "host_s": 0.0,
                                    "device_s": 0.0, "flops": 0.0, "bytes_read": 0.0, "bytes_written": 0.0,
                                    "dtype": record["dtype"] if record else None, "kernels": [], "nodes": [],
                                    "profiler_flops": None})
        row["calls"] += len(times)
        row["host_s"] += sum(times)
        if record:
            row["flops"] += record["flops"] * len(times)
            row["bytes_read"] += record["read"] * len(times)
            row["bytes_written"] += record["written"] * len(times)
        if len(row["nodes"]) < 3:
            row["nodes"].append(node)  # the graph's node names (on the CPU an op is its own kernel)
    out = []
    for row in rows.values():
        for field in ("calls", "host_s", "device_s", "flops", "bytes_read", "bytes_written"):
            row[field] = row[field] / steps
        out.append(row)
    return out, {"calls_matched": matched / steps, "calls": total / steps}


def trace(trainer, next_batch: Callable[[], Any], *, steps: int, warmup: int, device) -> dict:
    """Warm-up, ``steps`` plain steps timed (no profiler), ``steps`` profiled steps: what harness/profile/
    turns into the table. Nothing here is a timed step of a trial."""
    for _ in range(warmup):
        trainer.step(next_batch())
    trainer.loss_value()
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.step(next_batch())
    trainer.loss_value()
    plain = (time.perf_counter() - t0) / steps
    batch = next_batch()
    graph = trainer._step.get_concrete_function(*batch).graph  # noqa: SLF001 - the trainer's own traced step
    space, wall, waited = profiled(trainer.step, next_batch, steps, trainer.loss_value)
    rows, join = operators(_op_events(space), _graph_ops(graph), steps)
    return {"device_type": "cpu", "device_name": None, "threads": None, "plain_step_s": plain,
            "profiled_step_s": wall / steps, "data_wait_s": waited / steps, "operators": rows, "join": join}
