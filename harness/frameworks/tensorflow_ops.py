"""``trainmark ops --framework tensorflow``: the same matmul, conv2d and memory cases, timed in TensorFlow.

Each case is one ``tf.function`` (no XLA: the harness's TensorFlow step does not use it either) on
the shapes of harness/throughput/ops.py, in NHWC, the layout TensorFlow's CPU and GPU kernels prefer; the FLOPs
of a case are the shape's, counted once for both frameworks. Backward is the input and weight
gradients of one call, as in the PyTorch cases. The bandwidth cases are TensorFlow's own copy and add
on the same number of bytes; a TensorFlow op writes a fresh output tensor each call (PyTorch's cases
write into a preallocated one), so the allocator's work is part of what they measure, as it is
part of every TensorFlow step. Imported only when that framework is asked for.
"""
from __future__ import annotations

from typing import Callable

from trainmark.reference.tf_import import tf

DTYPES = {"fp32": tf.float32, "bf16": tf.bfloat16, "fp16": tf.float16}


def version() -> str:
    """TensorFlow's version, as the report names it beside torch's."""
    return tf.__version__


def _function(fn: Callable[[], object]) -> Callable[[], object]:
    """One graph for a case (no AutoGraph: the cases hold no Python control flow, and AutoGraph cannot
    read a lambda's source, warning once per case)."""
    return tf.function(fn, autograph=False)


def _cpu_only(device) -> None:
    if str(getattr(device, "type", device)) != "cpu":
        raise NotImplementedError("trainmark ops --framework tensorflow measures --device cpu for now")


def copy_and_add(n: int, device) -> tuple[Callable[[], object], Callable[[], object], str]:
    """TensorFlow's bandwidth kernels on ``n`` fp32 elements. ``DeepCopy`` is the op that copies:
    ``tf.identity`` returns the same buffer and moves no byte (measured: "1,400 GB/s")."""
    _cpu_only(device)
    g = tf.random.Generator.from_seed(0)
    src, other = g.uniform((n,)), g.uniform((n,))
    return (_function(lambda: tf.raw_ops.DeepCopy(x=src)), _function(lambda: tf.add(src, other)),
            "tf.raw_ops.DeepCopy; tf.add")


def _inputs(shape, dtype):
    """(a, b) of the case: x and w for matmul; the padded NHWC input and the HWIO filter for conv2d."""
    d = shape.dims
    g = tf.random.Generator.from_seed(0)
    if shape.op == "matmul":
        return g.normal((d["m"], d["k"]), dtype=dtype), g.normal((d["k"], d["n"]), dtype=dtype)
    p = d["pad"]  # PyTorch's symmetric padding, applied once (Keras' "same" pads right and bottom only)
    x = tf.pad(g.normal((d["n"], d["h"], d["w"], d["c"]), dtype=dtype), [[0, 0], [p, p], [p, p], [0, 0]])
    return x, g.normal((d["r"], d["s"], d["c"], d["k"]), dtype=dtype)


def case(shape, dtype_name: str, device, pass_: str) -> Callable[[], object]:
    """The callable timed for one (shape, dtype, pass). On the CPU a ``tf.function`` returns when its
    result is computed. Backward runs the two gradient kernels alone, as PyTorch's case does."""
    _cpu_only(device)
    if dtype_name not in DTYPES:
        raise NotImplementedError(f"{dtype_name} is not measured under TensorFlow")
    a, b = _inputs(shape, DTYPES[dtype_name])
    if shape.op == "matmul":
        fwd = _function(lambda: tf.matmul(a, b))
        g = tf.ones((a.shape[0], b.shape[1]), a.dtype)
        bwd = _function(lambda: (tf.matmul(g, b, transpose_b=True), tf.matmul(a, g, transpose_a=True)))
    else:
        strides = [1, shape.dims["stride"], shape.dims["stride"], 1]
        fwd = _function(lambda: tf.nn.conv2d(a, b, strides=strides, padding="VALID"))
        g = tf.ones_like(fwd())
        bwd = _function(lambda: (
            tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(a), filter=b, out_backprop=g, strides=strides,
                                           padding="VALID"),
            tf.raw_ops.Conv2DBackpropFilter(input=a, filter_sizes=tf.shape(b), out_backprop=g, strides=strides,
                                            padding="VALID")))
    return fwd if pass_ == "fwd" else bwd
