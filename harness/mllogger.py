"""One MLLOG file per trial, written with ``mlperf_logging.mllog`` by rank 0 only.

mllog's module-level logger is a shared singleton whose ``config(filename=)`` adds a handler
each call; we build a private ``MLLogger`` over our own ``logging.Logger`` with exactly one
file handler per trial. Every event carries an explicit ``time_ms`` from the trial's monitor,
and ``stack_offset`` points the metadata's file/line at the harness's caller.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from mlperf_logging.mllog import constants
from mlperf_logging.mllog.mllog import MLLogger

_counter = 0
PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the folder holding harness/, rules/, checker/


class TrialLog:
    """MLLOG events of one trial. On ranks other than 0 every call does nothing."""

    def __init__(self, path: Path | None):
        self.path = path
        self._logger = None
        if path is None:
            return
        global _counter
        _counter += 1
        pylogger = logging.getLogger(f"trainmark.mllog.{_counter}")
        pylogger.propagate = False
        pylogger.setLevel(logging.INFO)
        self._handler = logging.FileHandler(path, mode="a", encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        pylogger.addHandler(self._handler)
        self._pylogger = pylogger
        # metadata names the harness line that logged, relative to the package ("harness/trial.py"): the
        # absolute path of a submitter's checkout is theirs, not the log's (mllog takes root_dir as a regex)
        self._logger = MLLogger(logger=pylogger, default_stack_offset=3, root_dir=re.escape(str(PACKAGE_ROOT)))

    def _emit(self, kind: str, key: str, value: Any, time_ms: int, metadata: dict | None) -> None:
        if self._logger is None:
            return
        getattr(self._logger, kind)(key=key, value=value, metadata=metadata, time_ms=time_ms)
        self._handler.flush()

    def event(self, key: str, value: Any, time_ms: int, **metadata) -> None:
        self._emit("event", key, value, time_ms, metadata or None)

    def start(self, key: str, time_ms: int, value: Any = None, **metadata) -> None:
        self._emit("start", key, value, time_ms, metadata or None)

    def end(self, key: str, time_ms: int, value: Any = None, **metadata) -> None:
        self._emit("end", key, value, time_ms, metadata or None)

    def close(self) -> None:
        if self._logger is not None:
            self._handler.close()
            self._pylogger.removeHandler(self._handler)
            self._logger = None


# Names used by the harness, spelled once (MLPerf's where they exist).
K = constants
SUCCESS, ABORTED = constants.SUCCESS, constants.ABORTED
