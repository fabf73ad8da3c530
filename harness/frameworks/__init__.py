"""The framework seam: the only place in the harness that imports a deep-learning framework.

``backend.py`` declares the ``Backend`` and ``Trainer`` protocols the trial loop, sweeps and scale runs use;
``pytorch_backend.py`` and ``tensorflow_backend.py`` implement them; ``distributed.py`` is torch.distributed
under torchrun (gloo on CPU, NCCL on GPU).
"""
