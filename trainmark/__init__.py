"""trainmark: time-to-quality training benchmark and compliance suite.

The design's top-level folders are installed under this one import name:
``harness/`` is ``trainmark.harness``, ``reference/`` is ``trainmark.reference``,
``rules/`` is ``trainmark.rules`` and ``checker/`` is ``trainmark.checker``.
"""

__version__ = "0.1.0"
RESULT_FORMAT_VERSION = 2  # 2: submissions hold the implementation record (docs/result-format.md)
