"""trainmark: time-to-quality training benchmark and compliance suite.

The design's top-level folders are installed under this one import name:
``harness/`` is ``trainmark.harness``, ``reference/`` is ``trainmark.reference``,
``rules/`` is ``trainmark.rules`` and ``checker/`` is ``trainmark.checker``.
"""

__version__ = "0.1.0"
# 2: submissions hold the implementation record; 3: each epoch's telemetry row is stamped with its epoch_stop's
# millisecond (docs/result-format.md)
RESULT_FORMAT_VERSION = 3
