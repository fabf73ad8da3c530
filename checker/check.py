"""``check_path``: the whole check of one folder, as a ``Report``.

Input errors that make the check itself impossible (no such folder, not a result
tree, unusable rules) raise ``UserError`` (exit 2); everything wrong inside the folder
becomes a finding.
"""
from __future__ import annotations

import contextlib
import functools
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

from trainmark.checker.benchmark import LAYOUT_006, BenchmarkResult, TrainmarkContext, check_trainmark_benchmark
from trainmark.checker.checks import reeval
from trainmark.checker.checks.code import check_code
from trainmark.checker.checks.conformity import ReferenceBuilder, ReferenceStructures
from trainmark.checker.checks.system_desc import check_system_file, load_schema
from trainmark.checker.mlperf.results import (
    choose_ruleset,
    in_ruleset,
    is_mlperf_benchmark,
    known_rulesets,
    ruleset_from_path,
    score_mlperf_benchmark,
)
from trainmark.checker.mlperf.system_desc import check_mlperf_systems
from trainmark.checker.read import archive
from trainmark.checker.read.evidence import read_raw
from trainmark.checker.read.levels import walk
from trainmark.checker.read.record import read_record
from trainmark.checker.read.safefs import JSON_CAP, SafeTree
from trainmark.checker.read.weights import read_weights_bytes
from trainmark.checker.verdict.codes import CHECKER_001
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.checker.verdict.result import Report
from trainmark.errors import UserError
from trainmark.format.layout import DIVISIONS, is_archive_name
from trainmark.interrupts import signals_interrupt
from trainmark.rules.ruleset import (
    LATEST_VERSION,
    RULES_ROOT,
    BenchmarkRules,
    benchmark_names,
    known_versions,
    load_ruleset,
)

MLPERF_006 = rule(
    "MLPERF-006", ERROR, "an MLPerf benchmark folder that is not part of the ruleset in force",
    fix="check the round's folders with that round's ruleset (--mlperf-ruleset X.Y.Z, or a path naming the round)",
    why="Each MLPerf round has its own benchmarks and rules; a folder of a benchmark the ruleset does not hold cannot "
    "be scored under it. It proves the ruleset and the folder disagree, not which is wrong.",
    bad="a v4.0 folder with bert/ checked under ruleset 3.0.0",
    good="the same folder checked with --mlperf-ruleset 4.0.0", module=__name__)


@dataclass
class CheckOptions:
    rules_root: Path | None = None               # a folder of rules/<version>/*.yaml (default: the shipped rules)
    reference_builder: ReferenceBuilder | None = None   # default: trainmark.reference.registry
    system_schema: Path | None = None            # default: trainmark/format/schema/system.schema.json
    mlperf_ruleset: str | None = None            # default: from the path ('...v4.0...') or the benchmarks present
    progress: Callable[[int, int, str], None] | None = None  # (done, total, folder): checker/progress.py
    reevaluate: reeval.Reevaluate | None = None  # which trials' weights to score again, and the evaluator (none)


class RulesProvider:
    """The rules of a benchmark for the version its logs name (else the latest)."""

    def __init__(self, rules_root: Path | None):
        self.root = Path(rules_root) if rules_root else None
        try:
            self.versions = known_versions(self.root or RULES_ROOT)
        except OSError as exc:
            raise UserError(f"cannot read the rules folder {self.root}: {exc}") from None
        if not self.versions:
            raise UserError(f"no rules versions (folders like 1.0/) in {self.root or RULES_ROOT}")
        self._sets: dict[str, dict[str, BenchmarkRules]] = {}

    def ruleset(self, version: str) -> dict[str, BenchmarkRules]:
        if version not in self._sets:
            self._sets[version] = load_ruleset(version, self.root)
        return self._sets[version]

    def names(self) -> set[str]:
        return {name for v in self.versions
                for name in (self._sets[v] if v in self._sets else benchmark_names(v, self.root))}

    def __call__(self, benchmark: str, version: str | None) -> BenchmarkRules | None:
        default = LATEST_VERSION if LATEST_VERSION in self.versions else self.versions[-1]
        chosen = version if version in self.versions else default
        return self.ruleset(chosen).get(benchmark)


def _is_mlperf(folder, names: set[str]) -> bool:
    return folder.benchmark not in names and folder.division is None and is_mlperf_benchmark(folder.benchmark)


def _check_benchmark(folder, tree: SafeTree, ctx: TrainmarkContext, names: set[str], divisions: dict,
                     ruleset: str | None, findings: Findings) -> BenchmarkResult | None:
    if folder.benchmark in names:
        return check_trainmark_benchmark(folder, tree, ctx, findings)
    if ruleset is not None and _is_mlperf(folder, names):
        if not in_ruleset(folder.benchmark, ruleset):
            findings.add(MLPERF_006, folder.rel, f"{folder.benchmark} is not a benchmark of MLPerf Training "
                         f"{ruleset}: not scored", expected=f"a benchmark of MLPerf Training {ruleset}",
                         seen=folder.benchmark)
            return None
        result = BenchmarkResult("mlperf", folder.rel, folder.benchmark,
                                 divisions.get((folder.submitter, folder.system)),
                                 folder.submitter, folder.system, rules_version=f"mlperf-training-{ruleset}")
        score = score_mlperf_benchmark(folder, tree, ruleset, findings, result.division)
        result.score = score.to_dict()
        result.trials = [vars(r) for r in score.runs]
        return result
    findings.add(LAYOUT_006, folder.rel, f"no rules for benchmark {folder.benchmark!r}",
                 expected=f"one of {', '.join(sorted(names))}", seen=folder.benchmark)
    return None


def check_path(path: Path | str, options: CheckOptions | None = None) -> Report:
    """The check of a folder or an archive (unpacked into a temporary folder, removed before returning)."""
    with checked(path, options) as (report, _folder):
        return report


@contextlib.contextmanager
def checked(path: Path | str, options: CheckOptions | None = None) -> Iterator[tuple[Report, Path | None]]:
    """The check of ``path`` and the folder it read, which exists until the block ends: ``path`` itself, or an
    archive's content unpacked safely into a temporary folder (None when the archive was refused)."""
    options = options or CheckOptions()
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path} does not exist")
    if path.is_file() and is_archive_name(path):
        with _unpacked(path, options) as checked_archive:
            yield checked_archive
        return
    report = _check_folder(path, options)
    yield report, Path(report.path)  # resolved: the user's own path may be a link


@contextlib.contextmanager
def _unpacked(path: Path, options: CheckOptions) -> Iterator[tuple[Report, Path | None]]:
    """The check of an archive's content, unpacked into a temporary folder removed afterwards (also on
    SIGTERM and SIGHUP)."""
    if options.mlperf_ruleset is None and (named := ruleset_from_path(path)):  # the archive's name
        options = replace(options, mlperf_ruleset=named[0])
    findings = Findings()
    with signals_interrupt(), tempfile.TemporaryDirectory(prefix="trainmark-archive-") as tmp:
        root = Path(tmp) / "unpacked"
        root.mkdir()
        if not archive.unpack(path, root, findings):
            report = Report(str(path.resolve()), "archive", findings)
            report.notes.append(f"{path}: refused; nothing was unpacked")
            yield report, None
            return
        entries = list(root.iterdir())
        if len(entries) == 1 and entries[0].is_dir() and entries[0].name not in DIVISIONS:
            root = entries[0]  # one top folder (e.g. training_results_v4.0/): its name carries meaning
        if not entries:
            raise UserError(f"{path} is an empty archive")
        report = _check_folder(root, options)
        report.notes.append(f"checked the content of {path}, unpacked into a temporary folder (removed)")
        report.path = str(path.resolve())
        yield report, root.resolve()


def _check_folder(path: Path, options: CheckOptions) -> Report:
    """The check of one folder (not an archive)."""
    if not path.is_dir():
        raise UserError(f"{path} is not a folder: pass a submission, division, submitter, system or benchmark folder")
    if options.mlperf_ruleset is not None and options.mlperf_ruleset not in known_rulesets():
        raise UserError(f"unknown MLPerf training ruleset {options.mlperf_ruleset!r} "
                        f"(known: {', '.join(known_rulesets())})")
    root = path.resolve()  # the user's own path may be a link; nothing inside it is followed
    tree = SafeTree(root)
    findings = Findings()
    layout = walk(root, tree, findings)
    report = Report(str(root), layout.level, findings)
    rules = RulesProvider(options.rules_root)
    schema, note = load_schema(options.system_schema)
    if note and any(s.division for s in layout.systems):
        report.notes.append(note)
    divisions, descs = {}, {}
    for system in layout.systems:
        desc = descs[system.rel] = check_system_file(read_raw(tree, system.rel, JSON_CAP), system, schema, findings)
        division = system.division or (desc.get("division") if isinstance(desc, dict) else None)
        divisions[(system.submitter, system.system)] = division if isinstance(division, str) else None
        report.systems.append({"file": system.rel, "system": system.system, "division": divisions[
            (system.submitter, system.system)]})
    names = rules.names()
    mlperf = {f.benchmark for f in layout.benchmarks if _is_mlperf(f, names)}
    ruleset, ruleset_note = choose_ruleset(root, options.mlperf_ruleset, mlperf) if mlperf else (None, None)
    check_mlperf_systems(layout.systems, descs, ruleset, findings)
    with tempfile.TemporaryDirectory(prefix="trainmark-check-") as compliance_dir:
        ctx = TrainmarkContext(rules, ReferenceStructures(options.reference_builder), Path(compliance_dir),
                               report.notes)
        ctx.systems.update({(s.submitter, s.system): descs.get(s.rel) for s in layout.systems})
        for done, folder in enumerate(layout.benchmarks):
            if options.progress is not None:
                options.progress(done, len(layout.benchmarks), folder.rel or ".")
            try:
                result = _check_benchmark(folder, tree, ctx, names, divisions, ruleset, findings)
            except UserError:
                raise
            except Exception as exc:  # noqa: BLE001 - a checker bug must not hide the other folders
                findings.add(CHECKER_001, folder.rel, f"checking {folder.rel or '.'} failed: "
                             f"{type(exc).__name__}: {exc}", expected="a complete check", seen=type(exc).__name__)
                continue
            if result is not None:
                report.benchmarks.append(result)
                _reevaluate(result, tree, ctx, options, findings, report.notes)
        check_code(report.benchmarks, functools.partial(read_record, tree), ctx.code_claims, rules.root or RULES_ROOT,
                   findings, report.notes)
    unknown = sorted({r.path or "." for r in report.benchmarks if r.format == "mlperf" and r.division is None})
    if unknown:
        report.notes.append(_unknown_division_note(unknown))
    if ruleset_note:
        report.notes.insert(0, ruleset_note)
    return report


def _reevaluate(result: BenchmarkResult, tree: SafeTree, ctx: TrainmarkContext, options: CheckOptions,
                findings: Findings, notes: list[str]) -> None:
    """The trials of a checked trainmark folder that ``options.reevaluate`` selects, scored again."""
    chosen = ctx.rules_for(result.benchmark, result.rules_version) if result.format == "trainmark" else None
    if options.reevaluate is not None and chosen is not None:
        reeval.check_benchmark(result, chosen, ctx.trial_claims.get(result.path, {}),
                               functools.partial(read_weights_bytes, tree), options.reevaluate, findings, notes)


def _unknown_division_note(folders: list[str]) -> str:
    """A benchmark or system folder holds no systems/<system>.json, so its division is unknown: say that the
    closed-division checks (seeds, RCP) ran, which an open-division result does not need."""
    shown = ", ".join(folders[:3]) + (f" and {len(folders) - 3} more" if len(folders) > 3 else "")
    return (f"division unknown for {shown} (systems/<system>.json lies outside the checked folder): the "
            "closed-division checks (seeds, RCP) ran; check the submitter folder to judge an open result as open")
