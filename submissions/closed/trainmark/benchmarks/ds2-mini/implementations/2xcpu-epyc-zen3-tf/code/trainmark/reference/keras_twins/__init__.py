"""Keras twins of the references, for ``--framework tensorflow`` (docs/frameworks.md).

A package of its own, kept apart from the PyTorch references: a benchmark's rule file names its twin
class (``implementations: {tensorflow: trainmark.reference.keras_twins.<module>:<Class>}``), and only the
TensorFlow backend (``harness/frameworks/tensorflow_backend.py``) imports the modules in here.
"""
