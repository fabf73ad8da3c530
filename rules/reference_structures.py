"""The released reference models' structures, shipped beside the rule files.

The checker compares every trial's ``structure.json`` with the reference model's structure.
Rebuilding the reference for that means importing torch and torchvision (about 4.5 s of CPU
on a 2-core machine, most of a check's time), so the structures of a rules version are
generated once (``trainmark rules code-hashes``, which writes the released reference's code
hashes and these: ``trainmark.cli.rules.structure_table`` builds the models) into
``rules/<version>/reference-structures.json``; a test rebuilds them and fails when the file is
stale. This module only reads the file, which is ours (or the reviewer's ``--rules-dir``), never
a submission's.
"""
from __future__ import annotations

import json
from pathlib import Path

from trainmark.rules.ruleset import RULES_ROOT, BenchmarkRules

STRUCTURE_FILE = "reference-structures.json"
FORMAT = "trainmark-reference-structures/1"


def structure_file(version: str, rules_root: Path | None = None) -> Path:
    return Path(rules_root or RULES_ROOT) / version / STRUCTURE_FILE


def render(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def shipped(rules: BenchmarkRules) -> dict | None:
    """The shipped structure of ``rules``' benchmark, or None (no file, or not in it)."""
    path = rules.path.parent / STRUCTURE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    desc = (data.get("benchmarks") or {}).get(rules.name)
    return desc if isinstance(desc, dict) else None
