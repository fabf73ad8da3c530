"""The framework seam: the only place in the harness that imports a deep-learning framework.

``backend.py`` declares the ``Backend`` and ``Trainer`` protocols the trial loop, sweeps and scale runs use
(a backend gives its ``device``, ``sync()`` and the FLOPs of a step); ``pytorch_backend.py`` and
``tensorflow_backend.py`` implement them; ``distributed.py`` is torch.distributed under torchrun (gloo on
CPU, NCCL on GPU), the collective library of every framework; ``pytorch_runtime.py`` answers what the rest
of the harness asks PyTorch about devices (names, UUIDs, synchronisation, versions); ``pytorch_flops.py``
counts a PyTorch step's FLOPs; ``pytorch_ops.py`` and ``tensorflow_ops.py`` are ``trainmark ops``' kernels;
``pytorch_memory.py`` the allocator's side of the sweep's out-of-memory search; ``pytorch_scale.py`` what a
``trainmark scale`` rank does in PyTorch (its device, gradient buffer, all-reduces, gathered figures).
"""
