"""Issue 42: every finding code is a rule declared once, in the module that emits it, and explains itself.

The package's source is read as syntax trees (nothing is run): each ``rule("CODE", ...)`` declaration is
counted, and every string that spells a code (a message, a docstring, a compliance-config tag such as
``# TARGET-005``) must name a registered rule. ``trainmark check --explain`` and docs/checker.md's table
are checked against the registry.
"""
from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from trainmark.checker.verdict import codes_docs, registry
from trainmark.checker.verdict.findings import Findings
from trainmark.cli import main

ROOT = Path(__file__).resolve().parents[1]
# pyproject.toml's package-dir: the folders of the package and the import path each one is
PACKAGE_DIRS = {"trainmark": "trainmark", "checker": "trainmark.checker", "harness": "trainmark.harness",
                "reference": "trainmark.reference", "rules": "trainmark.rules", "report": "trainmark.report"}
CODE = re.compile(r"\b([A-Z]{2,12}-\d{3})\b")
NOT_CODES = {"SHA-256", "AVX-512", "LSTM-256"}  # hashes, instruction sets, layer names spelt like a code


def sources() -> list[tuple[str, ast.Module]]:
    """(module import path, syntax tree) of every source file of the package."""
    out = []
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join([package, *parts]).removesuffix(".__init__")
            out.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return out


SOURCES = sources()


def declarations() -> list[tuple[str, str]]:
    """(code, module) of every ``rule("CODE", ...)`` call in the package's source."""
    found = []
    for module, tree in SOURCES:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "rule"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.append((node.args[0].value, module))
    return found


def spelt_codes() -> dict[str, str]:
    """Every code spelt in a string of the package's source -> the first module that spells it."""
    spelt: dict[str, str] = {}
    for module, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for code in CODE.findall(node.value):
                    spelt.setdefault(code, module)
    return {code: module for code, module in spelt.items() if code not in NOT_CODES}


def test_every_code_is_declared_exactly_once_by_a_module_the_registry_loads():
    declared = declarations()
    counts = Counter(code for code, _ in declared)
    assert {code: n for code, n in counts.items() if n != 1} == {}
    rules = registry.load_all()
    assert set(counts) == set(rules)
    for code, module in declared:
        assert rules[code].module == module, code
    assert {module for _, module in declared} <= set(registry.EMITTING_MODULES)
    assert len(registry.EMITTING_MODULES) == len(set(registry.EMITTING_MODULES))


def test_every_code_the_package_spells_is_a_registered_rule():
    """A message, docstring or compliance-config tag naming a code that does not exist is a typo."""
    rules = registry.load_all()
    spelt = spelt_codes()
    assert {code: module for code, module in spelt.items() if code not in rules} == {}
    assert {"TARGET-001", "TARGET-004", "TARGET-005"} <= set(spelt)  # the generated configs' tags are seen


def test_the_compliance_tags_are_rules_declared_where_the_configs_are_generated():
    rules = registry.load_all()
    for code in ("TARGET-001", "TARGET-004", "TARGET-005"):
        assert rules[code].module == "trainmark.checker.mlperf.compliance_rules"


def test_every_rule_says_why_how_to_fix_and_shows_an_example():
    for rule in registry.load_all().values():
        assert rule.severity in registry.SEVERITIES, rule.code
        assert rule.title.strip() and rule.fix.strip(), rule.code
        assert rule.why.strip() and rule.why != rule.title, rule.code  # a why of its own, not the title again
        bad, _, good = rule.example.partition("\n")
        assert bad.startswith("bad: ") and len(bad) > 5 and good.startswith("good: ") and len(good) > 6, rule.code


def test_a_code_declared_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        registry.rule("LAYOUT-001", registry.ERROR, "again", fix="none", module="tests")


def test_findings_take_the_severity_and_fix_from_the_registry():
    rules = registry.load_all()
    findings = Findings()
    for code in ("WORK-003", "SPREAD-001", "CONVERGE-004", "TARGET-005"):
        findings.add(code, "a/b", "message")
    assert [(f.rule, f.severity, f.fix) for f in findings] == [
        (code, rules[code].severity, rules[code].fix) for code in ("WORK-003", "SPREAD-001", "CONVERGE-004",
                                                                   "TARGET-005")]
    with pytest.raises(KeyError):
        Findings().add("WORK-999", "a/b", "no such rule")


def test_explain_prints_one_code(capsys):
    assert main(["check", "--explain", "work-003"]) == 0
    out = capsys.readouterr().out
    rule = registry.lookup("WORK-003")
    assert out.startswith("code:     WORK-003\nseverity: error\ntitle:    ")
    flat = " ".join(out.split())
    for text in (rule.title, rule.why, rule.fix, "example:  bad: ", "good: "):
        assert " ".join(text.split()) in flat


def test_explain_of_an_unknown_code_exits_2_with_a_suggestion(capsys):
    assert main(["check", "--explain", "WORK-03"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no finding code 'WORK-03'" in captured.err and "did you mean WORK-003" in captured.err


def test_explain_does_not_check_a_folder(capsys, tmp_path):
    assert main(["check", "--explain", "WORK-003", str(tmp_path)]) == 2
    assert "--explain prints rules and checks nothing" in capsys.readouterr().err


def test_explain_all_json_is_the_whole_catalogue(capsys):
    assert main(["check", "--explain", "all", "--json"]) == 0
    catalogue = json.loads(capsys.readouterr().out)
    rules = registry.ordered()
    assert [entry["code"] for entry in catalogue] == [r.code for r in rules]
    assert all(set(entry) == {"code", "severity", "title", "why", "fix", "example"} for entry in catalogue)
    assert catalogue == registry.catalogue()


def test_explain_all_prints_every_rule(capsys):
    assert main(["check", "--explain", "all"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^code:     (\S+)$", out, re.M) == [r.code for r in registry.ordered()]


def test_the_docs_table_is_the_registry_and_a_stale_one_is_found():
    text = codes_docs.default_path().read_text(encoding="utf-8")
    assert codes_docs.updated(text) == text, "docs/checker.md is stale: run `trainmark rules docs`"
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([A-Z]+-\d{3})` \|.*$", text, re.M)}
    assert set(rows) == set(registry.load_all())
    rule = registry.lookup("WORK-004")
    assert f"| {rule.why} |" in rows["WORK-004"]
    stale = text.replace(rows["WORK-004"], rows["WORK-004"].replace(rule.why, "an older why"))
    assert stale != text and codes_docs.updated(stale) == text
