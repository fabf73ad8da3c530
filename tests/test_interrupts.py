"""trainmark.interrupts: a signal ends the work inside like Ctrl-C, even where something swallowed it."""
from __future__ import annotations

import os
import signal

import pytest

from trainmark.interrupts import signals_interrupt


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_each_signal_interrupts_the_work_and_the_handlers_come_back(name):
    number = getattr(signal, name)
    before = signal.getsignal(number)
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with signals_interrupt():
            os.kill(os.getpid(), number)
            reached.append("after the signal")
    assert reached == []
    assert signal.getsignal(number) is before


def test_a_swallowed_interrupt_is_raised_again_on_leaving():
    finished = []
    with pytest.raises(KeyboardInterrupt):
        with signals_interrupt():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            except BaseException:  # noqa: BLE001 - what mlperf-logging's bare except does
                pass
            finished.append("went on")
    assert finished == ["went on"]  # the work went on, but leaving did not end as if it had finished


def test_no_signal_changes_nothing():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with signals_interrupt():
        pass
    assert {s: signal.getsignal(s) for s in before} == before


def test_nested_windows_restore_the_outer_ones_handlers():
    with signals_interrupt():
        outer = signal.getsignal(signal.SIGTERM)
        with signals_interrupt():
            assert signal.getsignal(signal.SIGTERM) is not outer
        assert signal.getsignal(signal.SIGTERM) is outer
