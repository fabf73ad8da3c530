"""The result checker behind ``trainmark check`` (docs/checker.md).

``check_path(path, CheckOptions(...))`` returns a ``Report``: every finding with its
stable rule id (``catalog``), and the scores recomputed from the logs.
"""
