"""tensorflow-datasets builders for the benchmarks' local data, for ``--framework tensorflow``
(docs/frameworks.md).

A package of its own, like ``keras_twins``, kept apart from the PyTorch references: only the Keras twins
and ``harness/frameworks/tensorflow_backend.py`` import the modules in here.
"""
