"""``trainmark check --format junit|sarif``: findings in the formats CI systems show inline.

JUnit XML (GitLab, Jenkins, GitHub test reporters): one test case per finding, an
``error`` finding is a failure, warnings and notes pass with their text in
``system-out``; a clean check is one passing case. SARIF 2.1.0 (GitHub code scanning,
Azure DevOps): one result per finding with the file and line, the catalog as the tool's
rules. Both are built with the standard library's serialisers, never by string pasting,
and every submitted name in them is already escaped (``findings.printable``).
"""
from __future__ import annotations

import json
import urllib.parse
import xml.etree.ElementTree as ET

from trainmark import __version__
from trainmark.checker.verdict.codes import ERROR, RULES, WARNING
from trainmark.checker.verdict.findings import printable
from trainmark.checker.verdict.result import Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {ERROR: "error", WARNING: "warning"}  # info -> "note"


def to_junit(report: Report) -> str:
    findings = list(report.findings)
    failures = sum(f.severity == ERROR for f in findings)
    suites = ET.Element("testsuites", name="trainmark check", tests=str(max(len(findings), 1)),
                        failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name=f"trainmark check {printable(report.path)}",
                          tests=str(max(len(findings), 1)), failures=str(failures), errors="0")
    if not findings:
        ET.SubElement(suite, "testcase", classname="trainmark.check", name="every rule holds")
    for f in findings:
        where = (f.file or ".") + (f":{f.line}" if f.line else "")
        case = ET.SubElement(suite, "testcase", classname=f.file or ".", name=f"{f.rule} {where}",
                             file=f.file or ".", **({"line": str(f.line)} if f.line else {}))
        text = f"{f.message}\nexpected: {f.expected}\nseen: {f.seen}\nfix: {f.fix}"
        if f.severity == ERROR:
            failure = ET.SubElement(case, "failure", message=f"{f.rule}: {f.message}", type=f.rule)
            failure.text = text
        else:
            ET.SubElement(case, "system-out").text = f"{f.severity}: {text}"
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def to_sarif(report: Report) -> str:
    findings = list(report.findings)
    used = sorted({f.rule for f in findings})
    index = {rule_id: i for i, rule_id in enumerate(used)}
    rules = [{"id": r, "shortDescription": {"text": RULES[r].title}, "help": {"text": RULES[r].fix},
              "defaultConfiguration": {"level": _SARIF_LEVEL.get(RULES[r].severity, "note")}} for r in used]
    results = []
    for f in findings:
        location = {"artifactLocation": {"uri": urllib.parse.quote(f.file or "."), "uriBaseId": "CHECKED"}}
        if f.line:
            location["region"] = {"startLine": f.line}
        results.append({
            "ruleId": f.rule, "ruleIndex": index[f.rule], "level": _SARIF_LEVEL.get(f.severity, "note"),
            "message": {"text": f"{f.message} (expected: {f.expected}; seen: {f.seen}; fix: {f.fix})"},
            "locations": [{"physicalLocation": location}],
        })
    sarif = {
        "version": "2.1.0", "$schema": SARIF_SCHEMA,
        "runs": [{
            "tool": {"driver": {"name": "trainmark", "version": __version__, "rules": rules}},
            "originalUriBaseIds": {"CHECKED": {"uri": _file_uri(report.path)}},
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2) + "\n"


def _file_uri(path: str) -> str:
    # the bytes of the name, %-encoded (a name that is not UTF-8 keeps its bytes)
    return "file://" + urllib.parse.quote(path.rstrip("/") + "/", errors="surrogateescape")
