"""Ctrl-C, SIGTERM and SIGHUP end a command alike, so its ``finally`` blocks (temporary folders) run."""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Inside, each of ``SIGNALS`` raises KeyboardInterrupt where the code happens to be; on the way out the
    handlers from before are back. A signal whose KeyboardInterrupt code inside swallowed (a bare ``except:``:
    mlperf-logging's engine has several) is raised again on leaving, so work cut short never ends as if it had
    finished. Outside the main thread (an embedding program's worker) nothing changes: only it may set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def interrupt(signum, _frame) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous = {}
    for name in SIGNALS:
        if hasattr(signal, name):
            number = getattr(signal, name)
            previous[number] = signal.signal(number, interrupt)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if received:
        raise KeyboardInterrupt
