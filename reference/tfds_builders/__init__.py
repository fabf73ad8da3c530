"""tensorflow-datasets builders for the benchmarks' local data, for ``--framework tensorflow``
(docs/frameworks.md).

A package of its own, like ``keras_twins``, so that the registry's discovery of
``trainmark.reference`` never imports TensorFlow: only ``harness/frameworks/tensorflow_backend.py`` imports
the modules in here.
"""
