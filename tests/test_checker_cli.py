"""``trainmark check`` as a user calls it: levels, exit codes, JSON schema, CSV, tables, docs."""
from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import synthetic

from trainmark.checker.verdict.registry import load_all
from trainmark.checker.verdict.render import CSV_COLUMNS
from trainmark.checker.verdict.result import REPORT_SCHEMA
from trainmark.cli import main
from trainmark.reference import registry
from trainmark.rules import get_rules

RULE_IDS = load_all()
TEST_RULES = Path(__file__).parent / "rules"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "checker.md"
BENCH = "closed/acme/results/sys1/tiny-test"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A clean submission of the test benchmark 'tiny-test', whose reference the registry builds."""
    root = tmp_path_factory.mktemp("cli")
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    synthetic.write_submission(root, rules, registry.for_rules(rules).build_model())
    return root


def run(capsys, *args):
    code = main(["check", *map(str, args), "--rules-dir", str(TEST_RULES)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("sub,level", [("", "submission"), ("closed", "division"), ("closed/acme", "submitter"),
                                       ("closed/acme/results/sys1", "system"), (BENCH, "benchmark")])
def test_every_level_passes_with_a_valid_json_report(tree, capsys, sub, level):
    code, out, _ = run(capsys, tree / sub, "--json")
    report = json.loads(out)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert (code, report["exit_code"], report["level"], report["passed"]) == (0, 0, level, True)
    (bench,) = report["benchmarks"]
    assert bench["path"] == BENCH[len(sub):].lstrip("/")
    assert bench["score"]["trials"] == 3 and bench["score"]["score_train_time_s"] > 0


def test_broken_folder_exits_1_and_names_the_finding(tree, capsys, tmp_path):
    import shutil
    root = tmp_path / "t"
    shutil.copytree(tree, root)
    log = root / BENCH / "epochs.log"
    lines = log.read_text(encoding="utf-8").split("\n")
    lines[1] = re.sub(r"\[0\.(\d)", lambda m: f"[0.{(int(m[1]) + 1) % 10}", lines[1])
    log.write_text("\n".join(lines), encoding="utf-8")
    code, out, _ = run(capsys, root)
    assert code == 1 and "AGREE-003" in out and f"{BENCH}/epochs.log:2" in out and "FAIL" in out
    code, out, _ = run(capsys, root, "--json")
    finding = json.loads(out)["findings"][0]
    assert (finding["rule"], finding["file"], finding["line"]) == ("AGREE-003", f"{BENCH}/epochs.log", 2)
    code, out, err = run(capsys, root, "--quiet")  # -q: each error on one line and the verdict (issue 32)
    assert (code, err) == (1, "") and out.splitlines()[0].startswith(f"ERROR AGREE-003 {BENCH}/epochs.log:2: ")
    assert out.splitlines()[-1].startswith("FAIL: 1 error(s)") and len(out.splitlines()) == 2


@pytest.mark.parametrize("args", [["/no/such/folder"], ["{file}"], ["{empty}"],
                                  ["{tree}", "--mlperf-ruleset", "9.9.9"]])
def test_unusable_input_exits_2(tree, capsys, tmp_path, args):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    args = [a.format(file=tmp_path / "file.txt", empty=tmp_path / "empty", tree=tree) for a in args]
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and err.startswith("trainmark check: error:")


def test_bad_rules_dir_exits_2(tree, capsys, tmp_path):
    code = main(["check", str(tree), "--rules-dir", str(tmp_path / "none")])
    assert code == 2 and "rules" in capsys.readouterr().err


def test_csv_summary(tree, capsys, tmp_path):
    path = tmp_path / "summary.csv"
    code, out, _ = run(capsys, tree, "--csv", path, "--quiet")
    assert code == 0 and out.startswith("PASS: ") and out.count("\n") == 1  # -q: the verdict line alone
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0]) == CSV_COLUMNS and len(rows) == 1
    assert rows[0]["benchmark"] == "tiny-test" and rows[0]["converged"] == "3"
    assert float(rows[0]["ci95_low_s"]) < float(rows[0]["mean_train_time_s"]) < float(rows[0]["ci95_high_s"])


def test_table_output_shows_scores(tree, capsys):
    code, out, _ = run(capsys, tree)
    assert code == 0 and "PASS" in out and "tiny-test" in out and "Scores" in out


def test_python_dash_m_entry_point(tree):
    proc = subprocess.run([sys.executable, "-m", "trainmark", "check", str(tree / BENCH), "--json",
                           "--rules-dir", str(TEST_RULES)], capture_output=True, text=True, timeout=120)
    # the subprocess has no tests/conftest.py: 'tiny-test' has no registered reference there
    assert proc.returncode == 0, proc.stderr
    assert any("could not be built" in n for n in json.loads(proc.stdout)["notes"])


def test_docs_list_every_rule_and_the_schema_version():
    text = DOCS.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([A-Z]+-\d{3})` \|", text, re.M))
    assert documented == set(RULE_IDS)
    for rule in RULE_IDS.values():
        assert f"| `{rule.id}` | {rule.severity} |" in text
    assert "trainmark-check/1" in text


def test_the_finding_code_table_is_generated_from_the_catalogue():
    """docs/checker.md's table is `trainmark rules docs` output: stale means someone edited one side only."""
    from trainmark.checker.verdict import codes_docs as catalog_docs

    text = DOCS.read_text(encoding="utf-8")
    assert catalog_docs.updated(text) == text, "docs/checker.md is stale: run `trainmark rules docs`"


def test_modules_name_codes_through_the_catalogue_constants():
    """A code spelt as a string could hold a typo that raises only when its finding fires; a constant
    (``from trainmark.checker.read.json_file import LAYOUT_003``) is checked by the import and by ruff. The one
    place a code is spelt is its ``rule("LAYOUT-003", ...)`` declaration in the module that emits it."""
    import importlib

    for rule in RULE_IDS.values():
        assert getattr(importlib.import_module(rule.module), rule.id.replace("-", "_")) == rule.id
    root = Path(__file__).resolve().parents[1]
    literal, used = {}, set()
    for path in [*root.glob("checker/**/*.py"), *root.glob("report/**/*.py"), *root.glob("rules/**/*.py")]:
        text = re.sub(r"\brule\(\s*[\"'][A-Z]{2,12}-\d{3}[\"']", "rule(", path.read_text(encoding="utf-8"))
        used |= set(re.findall(r"\b([A-Z]{2,12}_\d{3})\b", text))
        for code in re.findall(r"[\"']([A-Z]{2,12}-\d{3})[\"']", text):
            literal.setdefault(code, path.name)
    assert literal == {}
    assert len(used) >= len(RULE_IDS) * 0.9  # the scan does see the constants in use


