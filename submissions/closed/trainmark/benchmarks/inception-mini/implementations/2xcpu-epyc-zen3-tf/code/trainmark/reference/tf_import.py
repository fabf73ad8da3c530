"""Import TensorFlow safely beside PyTorch: every TensorFlow module of trainmark imports it from here.

Triton (which torchvision imports through ``torch._dynamo``) and TensorFlow each load their own
LLVM. Loaded after TensorFlow's, Triton's segfaults at import (measured: torch 2.14.1, triton,
tensorflow 2.21 on this machine), so torchvision is imported first. TensorFlow's C++ log lines
are silenced (on a machine without a GPU it logs a failed cuInit as an error): its errors still
reach the harness as Python exceptions.
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# the order is the point: sorted, TensorFlow came first and Triton then segfaulted
# isort: off
import torchvision  # noqa: E402,F401  (before TensorFlow: see above)
import tensorflow  # noqa: E402
# isort: on

tf = tensorflow
