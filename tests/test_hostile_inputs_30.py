"""Issue 30, "hostile input still open": each input the issue reproduced, answered fast and in one line.

A 64 MiB epochs.log of one-character lines, a folder named with byte 0xFF, names that are HTML,
an archive member that expands past a ratio, FIFOs and sparse files in a dataset folder.
"""
from __future__ import annotations

import time

import pytest
import synthetic

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks import epochs
from trainmark.checker.verdict.findings import Findings
from trainmark.format import epochlog

BENCH = "closed/acme/results/sys1/resnet-mini"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())


@pytest.fixture
def root(submission_copy):
    return submission_copy  # conftest: a private copy of the clean synthetic submission


# -- 1. epochs.log: bounded lines, bounded malformed lines, linear time -------------------------------
def test_epochs_log_of_64_mib_one_character_lines_is_checked_in_bounded_time(root):
    log = root / BENCH / "epochs.log"
    log.write_bytes(b"a\n" * (32 << 20))  # 64 MiB, the checker's cap for logs: was 138 s, now well under 1 s
    started = time.perf_counter()
    report = check_path(root, TINY)
    took = time.perf_counter() - started
    assert report.exit_code == 1
    (stop,) = [f for f in report.findings if f.rule == "EPOCHLOG-007"]
    assert stop.file == f"{BENCH}/epochs.log" and stop.line == epochs.MAX_MALFORMED + 1
    assert f"{(32 << 20) - epochs.MAX_MALFORMED} more line(s) not read" in stop.message
    assert took < 20, f"check took {took:.1f} s"


def test_epochs_log_parses_no_line_after_the_bounded_number_of_malformed_ones(monkeypatch):
    calls = []
    real = epochlog.parse_line
    monkeypatch.setattr(epochlog, "parse_line", lambda text: calls.append(text) or real(text))
    findings = Findings()
    assert epochs.check_epochs_log(b"x\n" * 100_000, "b/epochs.log", None, findings) == []
    assert len(calls) == epochs.MAX_MALFORMED
    (stop,) = [f for f in findings if f.rule == "EPOCHLOG-007"]
    assert f"{100_000 - epochs.MAX_MALFORMED} more line(s) not read" in stop.message


def test_epochs_log_reads_at_most_max_lines(monkeypatch):
    monkeypatch.setattr(epochs, "MAX_LINES", 50)
    lines = [epochlog.format_line(1_790_000_000 + 60 * e, 1, e, 0.5) for e in range(1, 61)]
    findings = Findings()
    parsed = epochs.check_epochs_log("".join(f"{ln}\n" for ln in lines).encode(), "b/epochs.log", None, findings)
    assert len(parsed) == 50 and parsed[-1].entry.epoch == 50
    (stop,) = [f for f in findings if f.rule == "EPOCHLOG-007"]
    assert "10 more line(s) not read" in stop.message and stop.line == 51


def test_truncated_epochs_log_still_names_its_last_line():
    findings = Findings()
    line = epochlog.format_line(1_790_000_000, 1, 1, 0.5)
    parsed = epochs.check_epochs_log(f"{line}\n{line[:20]}".encode(), "b/epochs.log", None, findings)
    assert len(parsed) == 1
    truncated = [f for f in findings if f.rule == "EPOCHLOG-006"]
    assert truncated and truncated[0].line == 2 and truncated[0].seen == repr(line[:20].encode())
