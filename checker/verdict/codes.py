"""The finding codes with no single emitting module: CHECKER-001 is emitted by ``checker/check.py`` around every
folder and by a check below it (which may not import check.py), so it is declared here, below both.

Every other code is declared in the module that emits it (``registry.rule``; docs/architecture.md,
"Where a new rule goes"); ``registry.load_all`` imports them all.
"""
from __future__ import annotations

from trainmark.checker.verdict.registry import ERROR, rule

# The checker itself
CHECKER_001 = rule(
    "CHECKER-001", ERROR, "the checker itself failed on this folder (a bug in trainmark)",
    fix="report it with the message; the folder was not fully checked",
    why="An exception in the checker is a bug in trainmark, not a verdict on the folder; the finding keeps the check "
    "going and fails it, so an unchecked folder never passes. It proves nothing about the folder.",
    bad="(any folder that makes a check raise)",
    good="(a checker that handles every input)", module=__name__)
