"""Keras twins of the references, for ``--framework tensorflow`` (docs/frameworks.md).

A package of its own so that the registry's discovery of ``trainmark.reference`` (which imports
every module beside it) never imports TensorFlow: only ``harness/frameworks/tensorflow_backend.py`` imports
the modules in here.
"""
