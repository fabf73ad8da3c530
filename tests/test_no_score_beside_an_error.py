"""No score is shown for a benchmark with an error, in the terminal table and the CSV (issue 42)."""
from __future__ import annotations

import csv
from pathlib import Path

import synthetic

from trainmark.cli import main
from trainmark.reference import registry
from trainmark.rules import get_rules

TEST_RULES = Path(__file__).parent / "rules"


def _check(capsys, root: Path, out: Path) -> tuple[int, str, list[dict]]:
    code = main(["check", str(root), "--rules-dir", str(TEST_RULES), "--csv", str(out)])
    text = capsys.readouterr().out
    with out.open(newline="", encoding="utf-8") as fh:
        return code, text, list(csv.DictReader(fh))


def test_a_benchmark_with_an_error_shows_no_score(tmp_path, capsys):
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    root = tmp_path / "sub"
    synthetic.write_submission(root, rules, registry.for_rules(rules).build_model())
    code, text, (row,) = _check(capsys, root, tmp_path / "before.csv")
    assert code == 0 and float(row["score_train_time_s"]) > 0 and f"{float(row['score_train_time_s']):.2f} s" in text
    score = f"{float(row['score_train_time_s']):.2f} s"
    bench = next(root.glob("closed/*/results/*/tiny-test"))
    synthetic.edit_mllog(bench / "result_2.txt", "trainmark_precision", lambda r: {**r, "value": "amp-bf16"})
    code, text, (row,) = _check(capsys, root, tmp_path / "after.csv")
    assert code == 1 and int(row["errors"]) > 0
    assert (row["score_train_time_s"], row["olympic_total_time_s"]) == ("", "")
    assert row["score_reason"] == f"withheld: {row['errors']} error(s) in this benchmark (see the findings)"
    assert score not in text and "withheld" in text
