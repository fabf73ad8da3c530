"""Read one small JSON object from a submitted folder: capped, depth-bounded, every failure a finding."""
from __future__ import annotations

from pathlib import Path

from trainmark.checker.read.safefs import JSON_CAP, Missing, SafeTree, UnsafeEntry
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import schema
from trainmark.format.mllog_read import STRICT_JSON, BadNumber, DuplicateKey

LAYOUT_003 = rule(
    "LAYOUT-003", ERROR, "a required file of a benchmark folder is missing",
    fix="copy the complete folder the harness wrote (epochs.log, result_<k>.txt, trial_<k>/)",
    why="Each benchmark folder holds a fixed set of files; without one of them a part of the evidence (the text log, a "
    "trial's MLLOG, its weights or summary) is missing and that part cannot be checked. It says nothing about the "
    "files that are there.",
    bad="resnet-mini/ without trial_2/",
    good="epochs.log, result_1..5.txt and trial_1..5/ as the harness wrote them", module=__name__)

MAX_DEPTH = 64  # a harness-written JSON file nests a few levels; Python's parser would recurse ~1000 deep


def nesting_depth(raw: bytes) -> int:
    """The deepest ``[``/``{`` nesting outside strings, in one linear pass."""
    depth = deepest = 0
    in_string = escaped = False
    for b in raw:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:      # backslash
                escaped = True
            elif b == 0x22:      # quote
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth -= 1
    return deepest


def read_json_object(tree: SafeTree, rel: str, findings: Findings, rule: str, *,
                     missing_rule: str = LAYOUT_003, cap: int = JSON_CAP) -> dict | None:
    """The JSON object at ``rel``, or None after one finding (``rule`` for bad content)."""
    try:
        raw = tree.read_bytes(rel, cap)
    except Missing:
        findings.add(missing_rule, rel, f"{rel} is missing", expected=Path(rel).name, seen="missing")
        return None
    except UnsafeEntry as exc:
        findings.add(exc.rule, rel, exc.message, seen=exc.seen)
        return None
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        findings.add(rule, rel, f"{rel}: JSON nested {depth} levels deep", expected=f"at most {MAX_DEPTH} levels",
                     seen=depth)
        return None
    try:  # repeated keys and integers beyond 64 bits are refused, as in MLLOG records
        value = STRICT_JSON.decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, BadNumber, DuplicateKey) as exc:
        findings.add(rule, rel, f"{rel} is not UTF-8 JSON: {exc}", line=getattr(exc, "lineno", None),
                     expected="a JSON object", seen=raw[:80])
        return None
    if not isinstance(value, dict):
        findings.add(rule, rel, f"{rel} holds a JSON {type(value).__name__}, not an object",
                     expected="a JSON object", seen=type(value).__name__)
        return None
    return value


def schema_findings(value: dict, schema: dict, rel: str, rule: str, findings: Findings, limit: int = 20) -> bool:
    """One finding per schema violation (the first ``limit``); True when the value is valid."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors[:limit]:
        where = "/".join(str(p) for p in error.absolute_path) or "<top level>"
        seen = "absent" if error.validator == "required" else error.instance
        findings.add(rule, rel, f"{rel}: field '{where}': {error.message}",
                     expected=f"{error.validator}: {error.validator_value!r}", seen=seen)
    return not errors


def harness_schema(name: str) -> dict:
    """A JSON Schema of the result format (``trainmark/format/schema/``, never from a submission)."""
    return schema.load(name)
