"""Check ``systems/<system>.json`` against the system JSON Schema the harness ships.

The schema is trainmark's own (``trainmark/format/schema/system.schema.json``); MLPerf system
descriptions are only required to be JSON objects. Without a schema the check says so
in a note instead of inventing rules.
"""
from __future__ import annotations

import json
from pathlib import Path

from trainmark.checker.read.evidence import RawFile
from trainmark.checker.read.levels import LAYOUT_002, SystemFile
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import schema

SYSTEM_001 = rule(
    "SYSTEM-001", ERROR, "the system description is not a readable JSON object",
    fix="write systems/<system>.json as UTF-8 JSON, one object",
    why="The system description is read as one UTF-8 JSON object; anything else cannot be validated or compared. It "
    "proves only the file is unreadable.",
    bad="systems/box.json holding a JSON list",
    good="systems/box.json holding one JSON object", module=__name__)
SYSTEM_002 = rule(
    "SYSTEM-002", ERROR, "the system description breaks the system JSON Schema",
    fix="fix the named field (schema: trainmark/format/schema/system.schema.json)",
    why="The schema names the fields a result's reader needs (accelerators, counts, framework); a description that "
    "breaks it leaves them unknown or mistyped. Valid does not mean true: the checker cannot see the hardware.",
    bad="\"accelerators_per_node\": \"eight\"",
    good="\"accelerators_per_node\": 8", module=__name__)


def default_schema_path() -> Path:
    """The result format's system schema (``trainmark/format/schema/`` is package data)."""
    return schema.path(schema.SYSTEM)


def load_schema(path: Path | None) -> tuple[dict | None, str]:
    """The schema, or ``None`` and a note saying why the system check is skipped."""
    path = Path(path) if path else default_schema_path()
    if not path.is_file():
        return None, f"system schema {path} not found: system descriptions checked as JSON objects only"
    try:
        return json.loads(path.read_text(encoding="utf-8")), ""
    except (OSError, ValueError) as exc:
        from trainmark.errors import UserError
        raise UserError(f"system schema {path} is unreadable: {exc}") from None


def check_system_file(file: RawFile, system: SystemFile, schema: dict | None, findings: Findings) -> dict | None:
    """The system description (``file``: ``system``'s, read with ``read_raw``), validated; ``None`` when it cannot
    be read."""
    rel, raw = system.rel, file.data
    if file.missing:
        findings.add(LAYOUT_002, rel, f"{rel} is missing", expected=rel, seen="missing")
        return None
    if raw is None:
        file.problems.replay(findings)
        return None
    try:
        desc = json.loads(raw.decode("utf-8"))
    except RecursionError:
        findings.add(SYSTEM_001, rel, f"{rel}: JSON nested too deeply", expected="a JSON object")
        return None
    except (UnicodeDecodeError, ValueError) as exc:
        findings.add(SYSTEM_001, rel, f"{rel} is not UTF-8 JSON: {exc}", line=getattr(exc, "lineno", None),
                     expected="a JSON object", seen=raw[:80])
        return None
    if not isinstance(desc, dict):
        findings.add(SYSTEM_001, rel, f"{rel} holds a JSON {type(desc).__name__}, not an object",
                     expected="a JSON object", seen=type(desc).__name__)
        return None
    if schema is not None and system.division is not None:
        _validate(desc, schema, rel, findings)
    return desc


def _validate(desc: dict, schema: dict, rel: str, findings: Findings) -> None:
    import jsonschema

    validator_class = jsonschema.validators.validator_for(schema)
    for error in sorted(validator_class(schema).iter_errors(desc),
                        key=lambda e: [str(p) for p in e.absolute_path])[:20]:
        where = "/".join(str(p) for p in error.absolute_path) or "<top level>"
        seen = "absent" if error.validator == "required" else error.instance
        findings.add(SYSTEM_002, rel, f"{rel}: field '{where}': {error.message}",
                     expected=f"{error.validator}: {error.validator_value!r}", seen=seen)
