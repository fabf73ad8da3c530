"""``trainmark check --format junit|sarif``: findings in the formats CI systems show inline.

JUnit XML (GitLab, Jenkins, GitHub test reporters): one test case per finding, an
``error`` finding is a failure, a warning or note is a *skipped* case (``<skipped
message=...>``: reporters show it apart, and a warning never counts as a passed test),
and one passing case says no error was found. SARIF 2.1.0 (GitHub code scanning, Azure
DevOps): one result per finding with the file and line, the catalog as the tool's rules;
for an archive the base URI is the archive's folder and every file is an artifact nested
in the archive (``parentIndex``), since a viewer cannot open a folder inside a tarball.
Both are built with the standard library's serialisers, never by string pasting, and
every submitted name in them is already escaped (``findings.printable``).
"""
from __future__ import annotations

import json
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

from trainmark import __version__
from trainmark.checker.verdict.findings import printable
from trainmark.checker.verdict.registry import ERROR, WARNING, load_all
from trainmark.checker.verdict.result import Report
from trainmark.format import layout

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {ERROR: "error", WARNING: "warning"}  # info -> "note"


def to_junit(report: Report) -> str:
    findings = list(report.findings)
    failures = sum(f.severity == ERROR for f in findings)
    skipped = len(findings) - failures
    tests = len(findings) + (failures == 0)
    suites = ET.Element("testsuites", name="trainmark check", tests=str(tests), failures=str(failures),
                        skipped=str(skipped))
    suite = ET.SubElement(suites, "testsuite", name=f"trainmark check {printable(report.path)}",
                          tests=str(tests), failures=str(failures), errors="0", skipped=str(skipped))
    if not failures:
        ET.SubElement(suite, "testcase", classname="trainmark.check", name="every rule holds" if not findings
                      else "no error finding")
    for f in findings:
        where = (f.file or ".") + (f":{f.line}" if f.line else "")
        case = ET.SubElement(suite, "testcase", classname=f.file or ".", name=f"{f.rule} {where}",
                             file=f.file or ".", **({"line": str(f.line)} if f.line else {}))
        text = f"{f.message}\nexpected: {f.expected}\nseen: {f.seen}\nfix: {f.fix}"
        if f.severity == ERROR:
            failure = ET.SubElement(case, "failure", message=f"{f.rule}: {f.message}", type=f.rule)
            failure.text = text
        else:  # a warning is not a passed test: skipped, with its severity in the message
            ET.SubElement(case, "skipped", message=f"{f.severity} {f.rule}: {f.message}").text = text
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def to_sarif(report: Report) -> str:
    findings = list(report.findings)
    used = sorted({f.rule for f in findings})
    index = {rule_id: i for i, rule_id in enumerate(used)}
    catalogue = load_all()  # every code a finding can carry, whichever module declares it
    rules = [{"id": r, "shortDescription": {"text": catalogue[r].title}, "help": {"text": catalogue[r].fix},
              "defaultConfiguration": {"level": _SARIF_LEVEL.get(catalogue[r].severity, "note")}} for r in used]
    results, artifacts, base = [], [], _file_uri(report.path)
    archive = layout.is_archive_name(Path(report.path)) and not Path(report.path).is_dir()  # a folder may end in .tar
    if archive:  # the archive is artifact 0, in its folder; each file an artifact nested in it
        base = _file_uri(str(Path(report.path).parent))
        artifacts.append({"location": {"uri": urllib.parse.quote(Path(report.path).name, errors="surrogateescape"),
                                       "uriBaseId": "CHECKED"}})
    nested: dict[str, int] = {}
    for f in findings:
        uri = urllib.parse.quote(f.file or ".", errors="surrogateescape")
        if archive:
            if uri not in nested:
                nested[uri] = len(artifacts)
                artifacts.append({"location": {"uri": uri}, "parentIndex": 0})
            location = {"artifactLocation": {"uri": uri, "index": nested[uri]}}
        else:
            location = {"artifactLocation": {"uri": uri, "uriBaseId": "CHECKED"}}
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
            "originalUriBaseIds": {"CHECKED": {"uri": base}},
            **({"artifacts": artifacts} if artifacts else {}),
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2) + "\n"


def _file_uri(path: str) -> str:
    # the bytes of the name, %-encoded (a name that is not UTF-8 keeps its bytes)
    return "file://" + urllib.parse.quote(path.rstrip("/") + "/", errors="surrogateescape")
