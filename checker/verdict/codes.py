"""The finding codes with no single emitting module: each is emitted from two layers that may not import
each other (checks and mlperf, or the top-level check and a check), so it is declared here, below both.

Every other code is declared in the module that emits it (``registry.rule``; docs/architecture.md,
"Where a new rule goes"); ``registry.load_all`` imports them all.
"""
from __future__ import annotations

from trainmark.checker.verdict.registry import ERROR, rule

# Values that would choose code to run
SECURITY_001 = rule(
    "SECURITY-001", ERROR, "a logged value would make the compliance engine load a file that is not a shipped config "
    "(refused, never opened; the file is not run through the engine)",
    fix="log the division ('closed'/'open'), the benchmark and other names as plain names: a value never names a file",
    why="mlperf-logging's engine loads config files named by logged values (division, benchmark); a value naming "
    "another file would make it read or run that file, so the checker refuses before the engine starts and the file is "
    "not evaluated. It proves only the value is not a plain name.",
    bad="submission_division '../../../tmp/evil'",
    good="submission_division 'closed'", module=__name__)
# Hyperparameters and precision
HPARAM_003 = rule(
    "HPARAM-003", ERROR, "the precision is not one the rules allow",
    fix="use a precision the rules list (fp32, amp-bf16 or amp-fp16 where 'amp' is allowed)",
    why="The rules list the precisions a benchmark may train in (fp32, or amp where allowed); another one changes the "
    "arithmetic the time is measured with. It checks the logged precision only.",
    bad="trainmark_precision 'fp8' under rules allowing fp32",
    good="trainmark_precision 'fp32'", module=__name__)
# The checker itself
CHECKER_001 = rule(
    "CHECKER-001", ERROR, "the checker itself failed on this folder (a bug in trainmark)",
    fix="report it with the message; the folder was not fully checked",
    why="An exception in the checker is a bug in trainmark, not a verdict on the folder; the finding keeps the check "
    "going and fails it, so an unchecked folder never passes. It proves nothing about the folder.",
    bad="(any folder that makes a check raise)",
    good="(a checker that handles every input)", module=__name__)
