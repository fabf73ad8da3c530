"""What the checks of one trainmark benchmark folder share: the check's context, its result, and the
``Judgement`` each check of ``checker/benchmark.py:CHECKS`` reads and adds to, with the one shape of a check."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trainmark.checker.checks.conformity import ReferenceStructures
from trainmark.checker.mlperf import compliance_rules
from trainmark.checker.mlperf.compliance_configs import ALLOWLIST
from trainmark.checker.read.evidence import BenchmarkEvidence
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.rules.ruleset import BenchmarkRules


@dataclass
class TrainmarkContext:
    """What every benchmark check shares: rules, the reference models, generated rule files."""
    rules_for: Any                                  # (benchmark, version | None) -> BenchmarkRules | None
    references: ReferenceStructures
    compliance_dir: Path
    notes: list[str] = field(default_factory=list)
    _configs: dict = field(default_factory=dict)
    systems: dict = field(default_factory=dict)     # (submitter, system) -> its system description (or None)
    code_claims: dict = field(default_factory=dict)  # benchmark folder -> its CodeClaims (checks/code.py)
    trial_claims: dict = field(default_factory=dict)  # benchmark folder -> {trial: claims} (checks/reeval.py)

    def compliance_file(self, rules: BenchmarkRules, division: str) -> str:
        key = (rules.name, rules.version, division, str(rules.path))
        if key not in self._configs:
            path = compliance_rules.write_compliance_file(rules, division, self.compliance_dir)
            ALLOWLIST.add_generated(path, compliance_rules.compliance_yaml(rules, division))
            self._configs[key] = str(path)
        return self._configs[key]


@dataclass
class BenchmarkResult:
    format: str
    path: str
    benchmark: str
    division: str | None
    submitter: str | None
    system: str | None
    rules_version: str | None = None
    trials: list[dict] = field(default_factory=list)
    score: dict = field(default_factory=dict)


@dataclass
class Judgement:
    """What the checks of one benchmark folder established so far; each check reads and adds to it."""
    ctx: TrainmarkContext
    result: BenchmarkResult
    rules: BenchmarkRules = None          # type: ignore[assignment]  # set by choose_rules before any check reads it
    division: str = "closed"
    done: bool = False                    # no rules to judge by: the checks after choose_rules do not run
    records: dict[int, TrialRecord] = field(default_factory=dict)    # recomputed trials, by number
    ordered: list[TrialRecord] = field(default_factory=list)         # the same, in trial order
    telemetry: dict = field(default_factory=dict)                    # trial -> its readable telemetry series
    other_load: dict[int, float | None] = field(default_factory=dict)  # trial -> other CPU load in trial.json
    folder_names: dict[str, str | None] = field(default_factory=dict)  # submission_* key -> its folder's name


Check = Callable[[BenchmarkEvidence, Judgement, Findings], None]
TrialCheck = Callable[[TrialRecord, Judgement, Findings], None]  # one recomputed trial's check
