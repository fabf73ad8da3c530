"""The rule registry: every finding code declared once, with why it exists and how to fix it.

In the style of ruff's rules: a code is declared in the module that emits it, by one call to
``rule(...)``, which returns the code string that module then passes to ``Findings.add``. The
declaration carries what a reviewer needs to read a finding without the source: the severity,
a one-line title, *why* (what the rule proves and what it cannot), the *fix*, and a bad/good
example. ``trainmark check --explain CODE`` prints it; docs/checker.md's table is generated
from it (a test fails when they drift).

The registry is complete only once every emitting module is imported; ``load_all`` imports
the fixed list ``EMITTING_MODULES`` (never a name read from a submission).
"""
from __future__ import annotations

import difflib
import importlib
import textwrap
from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(frozen=True)
class Rule:
    code: str
    severity: str
    title: str
    why: str
    fix: str
    example: str      # "bad: ...\ngood: ..." (what a folder that breaks it holds, and one that keeps it)
    module: str       # the module that declares and emits it

    @property
    def id(self) -> str:  # the name the finding list has always used
        return self.code

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("module")
        return d

    def explained(self, width: int = 100) -> str:
        """``trainmark check --explain CODE``: each field on its own labelled, wrapped lines."""
        fields = [("code", self.code), ("severity", self.severity), ("title", self.title), ("why", self.why),
                  ("fix", self.fix), ("example", self.example)]
        lines = []
        for label, text in fields:
            for i, part in enumerate(text.splitlines() or [""]):
                lines += textwrap.wrap(part, width, initial_indent=f"{label + ':' if i == 0 else '':<10}",
                                       subsequent_indent=" " * 12 if label == "example" else " " * 10,
                                       break_long_words=False, break_on_hyphens=False) or [f"{label}:"]
        return "\n".join(lines)


REGISTRY: dict[str, Rule] = {}

# Every module that declares codes, in the order of docs/checker.md's table; load_all imports them.
EMITTING_MODULES: list[str] = [
    "trainmark.checker.verdict.codes",
    "trainmark.checker.read.safefs",
    "trainmark.checker.read.levels",
    "trainmark.checker.read.json_file",
    "trainmark.checker.read.safetensors_header",
    "trainmark.checker.read.archive",
    "trainmark.checker.read.mllog_read",
    "trainmark.checker.verdict.findings",
    "trainmark.checker.benchmark",
    "trainmark.checker.check",
    "trainmark.checker.checks.system_desc",
    "trainmark.checker.checks.code",
    "trainmark.checker.checks.mllog",
    "trainmark.checker.checks.epochs",
    "trainmark.checker.checks.agreement",
    "trainmark.checker.checks.trials",
    "trainmark.checker.checks.trial_json",
    "trainmark.checker.mlperf.compliance_rules",
    "trainmark.checker.mlperf.compliance_configs",
    "trainmark.checker.checks.curve",
    "trainmark.checker.checks.work_time",
    "trainmark.checker.checks.distinct",
    "trainmark.checker.checks.spread",
    "trainmark.checker.checks.conformity",
    "trainmark.checker.checks.ranks",
    "trainmark.checker.checks.energy",
    "trainmark.checker.checks.telemetry",
    "trainmark.checker.mlperf.results",
    "trainmark.checker.mlperf.system_desc",
    "trainmark.checker.checks.reeval",
    "trainmark.checker.checks.evidence_interference",
    "trainmark.checker.mlperf.division",
    "trainmark.checker.checks.evidence_timeline",
    "trainmark.checker.checks.evidence_energy",
    "trainmark.checker.checks.evidence_work",
    "trainmark.checker.checks.evidence_format",
]


def rule(code: str, severity: str, title: str, *, fix: str, why: str = "", bad: str = "", good: str = "",
         module: str | None = None) -> str:
    """Declare ``code`` once; returns it, so a module writes ``LAYOUT_003 = rule("LAYOUT-003", ...)``."""
    if severity not in SEVERITIES:
        raise ValueError(f"{code}: severity {severity!r} is not one of {SEVERITIES}")
    if code in REGISTRY:
        raise ValueError(f"{code} is declared twice ({REGISTRY[code].module} and {module})")
    example = "\n".join(part for part in (f"bad: {bad}" if bad else "", f"good: {good}" if good else "") if part)
    REGISTRY[code] = Rule(code, severity, title, why or title, fix, example, module or "")
    return code


def load_all() -> dict[str, Rule]:
    """Import every emitting module so the registry holds every code; returns it."""
    for name in EMITTING_MODULES:
        importlib.import_module(name)
    return REGISTRY


def lookup(code: str) -> Rule:
    """The rule of ``code`` (case-insensitive); KeyError with "did you mean" when there is none."""
    rules = load_all()
    key = code.strip().upper()
    if key in rules:
        return rules[key]
    close = difflib.get_close_matches(key, list(rules), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"no finding code {code!r}{hint}")


def ordered() -> list[Rule]:
    """Every rule, by prefix then number (the order of docs/checker.md)."""
    def key(r: Rule) -> tuple[str, int]:
        prefix, _, number = r.code.rpartition("-")
        return prefix, int(number) if number.isdigit() else 0
    return sorted(load_all().values(), key=key)


def catalogue() -> list[dict]:
    """``trainmark check --explain all --json``: [{code, severity, title, why, fix, example}]."""
    return [r.to_dict() for r in ordered()]
