"""Throughput tools: what a device reaches without training to a target.

``trainmark ops`` (operator microbenchmarks against the datasheet peak: ``ops.py``; each framework's kernels in
harness/frameworks/)
and ``trainmark sweep`` (one benchmark's training step over batch sizes and precisions: ``sweep.py``,
written by ``sweep_output.py``; out-of-memory search in ``oom.py``).
"""
