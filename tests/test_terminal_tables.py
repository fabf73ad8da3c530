"""Tables that fit the terminal (issue 32): at 60, 80, 120 and 200 columns no line is wider than the
terminal and no benchmark id, system or score is split across lines (120 columns used to print
"trainma / rk/ince / ption-m / ini"); piped output keeps every column, one line per row."""
from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from trainmark.checker.check import check_path
from trainmark.checker.verdict.registry import INFO
from trainmark.checker.verdict.render import HEADERS, print_report, summary_rows
from trainmark.cli import main
from trainmark.cli.rules import benchmark_rows
from trainmark.format.numbers import display

SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
WIDTHS = [60, 80, 120, 200]


@pytest.fixture(scope="module")
def report():
    """One check of the committed example submissions, rendered at every width."""
    return check_path(SUBMISSIONS)


@pytest.fixture(scope="module")
def rows(report):
    found = summary_rows(report)
    assert len(found) == 12  # four systems, three benchmarks each
    return found


def rendered(report, width: int) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    print_report(report, console)
    return console.export_text().splitlines()


def score_section(lines: list[str]) -> list[str]:
    """The lines from the score table's title on: the findings above also name systems (in paths)."""
    start = next(i for i, line in enumerate(lines) if "Scores (recomputed" in line)
    return lines[start:]


def expected_tokens(row: dict) -> list[str]:
    """What must appear unbroken, whatever the width: the id, the system and the score."""
    score = f"{display(row['score_train_time_s'], decimals=2)} s"
    return [f"{row['submitter']}/{row['benchmark']}", row["system"], score]


@pytest.mark.parametrize("width", WIDTHS)
def test_check_table_fits_and_splits_no_name_or_score(report, rows, width):
    lines = rendered(report, width)
    assert max(len(line) for line in lines) <= width
    section = score_section(lines)
    for row in rows:
        for token in expected_tokens(row):
            assert any(token in line for line in section), (width, token, "\n".join(section))
    if width >= 80:  # a table: each row's id, system and score on one line
        for row in rows:
            assert any(all(t in line for t in expected_tokens(row)) for line in section), (width, row["benchmark"])


def test_check_table_names_the_columns_it_leaves_out(report):
    narrow = score_section(rendered(report, 80))
    header = next(line for line in narrow if "┃" in line and "benchmark" in line)
    start = next(i for i, line in enumerate(narrow) if line.startswith("left out at 80 columns:"))
    left_out = " ".join(narrow[start:])
    assert "division" in left_out and "CV" in left_out and "division" not in header
    for full, abbreviated, _ in HEADERS:  # each column is in the table or named as left out
        assert any(name in text for name in (full, abbreviated) for text in (header, left_out)), full
    wide = score_section(rendered(report, 200))
    assert not any("left out" in line for line in wide)
    header = next(line for line in wide if "benchmark" in line and "system" in line)
    for full, abbreviated, _ in HEADERS:  # every column, its header abbreviated where the full one does not fit
        assert full in header or abbreviated in header


def test_check_blocks_below_the_narrowest_table(report, rows):
    section = score_section(rendered(report, 60))
    assert not any("┃" in line for line in section)  # no table: one block per benchmark
    heads = [line for line in section if re.fullmatch(r"\S+/\S+", line)]
    assert heads == [f"{r['submitter']}/{r['benchmark']}" for r in rows]
    ci = f"{display(rows[0]['ci95_low_s'], decimals=2)}..{display(rows[0]['ci95_high_s'], decimals=2)}"
    assert any(ci in line for line in section)  # every field kept


def test_piped_check_keeps_every_column_one_line_per_row(report, rows, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    print_report(report)  # no console: stdout is captured, not a terminal
    section = score_section(capsys.readouterr().out.splitlines())
    assert not any("left out" in line for line in section)
    for row in rows:
        ci = f"{display(row['ci95_low_s'], decimals=2)}..{display(row['ci95_high_s'], decimals=2)}"
        metric = display(row["mean_final_metric"], decimals=4)
        assert any(all(t in line for t in [*expected_tokens(row), ci, metric, row["division"]]) for line in section)


def test_columns_variable_fits_piped_output(report, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    print_report(report)
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any("left out at 80 columns" in line for line in lines)


def summary_counts(lines: list[str]) -> tuple[int, int]:
    found = re.search(r"(\d+) info, (\d+) note\(s\)$", lines[-1])
    assert found, lines[-1]
    return int(found.group(1)), int(found.group(2))


@pytest.mark.parametrize("notes", [[], ["ruleset 1.0 (the logs name it)", "closed/x: division taken from the logs: "
                                                                           "closed"]])
def test_summary_counts_the_note_lines_it_prints(report, notes):
    lines = rendered(dataclasses.replace(report, notes=notes), 120)
    info, note_count = summary_counts(lines)
    assert note_count == len(notes) == sum(line.startswith("note: ") for line in lines)
    assert info == report.findings.count(INFO) == sum(line.startswith("INFO") for line in lines)


@pytest.fixture(scope="module")
def listed():
    return benchmark_rows("1.1", None)


@pytest.mark.parametrize("width", WIDTHS)
def test_list_fits_and_splits_no_word(listed, width, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= width
    tokens = {word for line in lines for word in line.split()}
    for row in listed:
        assert row["benchmark"] in tokens and row["metric"] in tokens
        assert any(f"{'>=' if row['higher_is_better'] else '<='} {display(row['target'], significant=6)}" in line
                   for line in lines)
        for word in (row["task"] + " " + row["dataset"]).split():  # prose may wrap between words only
            assert word in tokens, (width, word)


def test_piped_list_is_one_line_per_benchmark(listed, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for row in listed:
        assert any(row["task"] in line and row["dataset"] in line and f" {row['benchmark']} " in line
                   for line in lines)


MLPERF = SUBMISSIONS.parents[1] / "shared" / "fixtures" / "mlperf-training-v4.0"


@pytest.mark.skipif(not MLPERF.is_dir(), reason=f"no MLPerf fixture at {MLPERF}")
@pytest.mark.parametrize("width", [60, 80, 120])
def test_mlperf_scores_fit_whole(width):
    mlperf = check_path(MLPERF)
    lines = rendered(mlperf, width)
    assert max(len(line) for line in lines) <= width
    section = score_section(lines)
    for row in summary_rows(mlperf):
        assert any(f"{display(row['mlperf_score_minutes'], decimals=3)} min" in line for line in section)
        assert any(f"{row['submitter']}/{row['benchmark']}" in line for line in section)
    info, notes = summary_counts(lines)
    assert notes == len(mlperf.notes) == sum(line.startswith("note: ") for line in lines) >= 1
    assert info == mlperf.findings.count(INFO) == sum(line.startswith("INFO") for line in lines) >= 1
