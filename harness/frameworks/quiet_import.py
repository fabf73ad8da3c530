"""A framework imported without its start-up noise, unless ``--verbose`` (issue 39).

TensorFlow writes to the process's standard error before Python sees anything: absl's "All log messages before
absl::InitializeLog() is called are written to STDERR", the CUDA stub's "Could not find cuda drivers", oneDNN's
notes. ``TF_CPP_MIN_LOG_LEVEL`` (set by reference/tf_import.py) cannot reach the lines absl prints before its own
start, so the import runs with file descriptor 2 pointed at /dev/null; an import that fails still raises, and
its traceback is printed after the descriptor is restored. ``--verbose`` (``TRAINMARK_VERBOSE=1``) shows it all.
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from types import ModuleType
from typing import Iterator

VERBOSE_ENV = "TRAINMARK_VERBOSE"


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Standard error (the descriptor, so C++ writes too) into /dev/null for the block; unchanged with --verbose."""
    if verbose():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w", encoding="utf-8") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def import_quietly(name: str) -> ModuleType:
    """``importlib.import_module(name)`` without the start-up noise; absl's and TensorFlow's Python loggers kept to
    errors after it (their warnings during a run, such as tf.function's retracing notes, are TensorFlow's, not the
    benchmark's), unless --verbose."""
    if name in sys.modules:
        return sys.modules[name]
    if verbose():
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # before tf_import's default of 3
        return importlib.import_module(name)
    with quiet_stderr():
        module = importlib.import_module(name)
    absl = sys.modules.get("absl.logging")
    if absl is not None:
        absl.set_verbosity(absl.ERROR)
    if "tensorflow" in sys.modules:  # its own Python logger (tf.function's retracing notes) is not absl's
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
    return module
