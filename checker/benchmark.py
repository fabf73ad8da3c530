"""Check one trainmark benchmark folder and recompute its scores.

The order: list the folder, read every result file (the rules version and division
come from the logs when the path does not give them), run each through the compliance
engine and the own checks, then the text log, the agreement of both logs, the
cross-trial rules, model conformity, and finally the scores.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from trainmark.checker.checks import conformity, curve, distinct, energy, evidence_work, ranks, work_time
from trainmark.checker.checks import mllog as mllog_check
from trainmark.checker.checks import trials as trials_check
from trainmark.checker.checks.agreement import check_agreement
from trainmark.checker.checks.epochs import check_epochs_log
from trainmark.checker.checks.spread import check_spread
from trainmark.checker.checks.trial_json import check_trial_json
from trainmark.checker.checks.trials import TRIAL_001
from trainmark.checker.mlperf import compliance_rules
from trainmark.checker.mlperf.compliance_configs import ALLOWLIST
from trainmark.checker.mlperf.engine import run_engine
from trainmark.checker.read.json_file import LAYOUT_003
from trainmark.checker.read.levels import DIVISIONS, LAYOUT_004, BenchmarkFolder, safe_entries
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.read.safefs import HOSTILE_007, LOG_CAP, Entry, Missing, SafeTree, UnsafeEntry
from trainmark.checker.read.trial_record import TrialRecord, extract_trial
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.checker.verdict.scoring import score_benchmark
from trainmark.format import layout, mllog
from trainmark.format.layout import RESULT_FILE, TRIAL_DIR, TRIAL_FILES
from trainmark.format.mllog_read import Event
from trainmark.rules import reference_work
from trainmark.rules.ruleset import BenchmarkRules

LAYOUT_006 = rule(
    "LAYOUT-006", ERROR, "a benchmark no rule file defines",
    fix="use a benchmark name from `trainmark rules list` (or pass the rules with --rules-dir)",
    why="A benchmark is judged by its rule file (target, trials, hyperparameters); without one nothing about the "
    "folder can be judged. It proves only that the name is unknown to these rules.",
    bad="results/sys/resnet-maxi/",
    good="results/sys/resnet-mini/ (a name `trainmark rules list` shows)", module=__name__)
HOSTILE_005 = rule(
    "HOSTILE-005", WARNING, "a file type that can carry code (never loaded)",
    fix="remove pickles, checkpoints and scripts from the result folder",
    why="Checkpoints, pickles and scripts can run code when opened by an unwary reviewer; the checker never loads them "
    "and warns so they are removed. It judges the file by its name (suffix) alone; nothing in it is opened.",
    bad="trial_1/checkpoint.pt",
    good="trial_1/ with model.safetensors only", module=__name__)
RULES_001 = rule(
    "RULES-001", ERROR, "the submission declares a rules version this checker does not know",
    fix="log trainmark_rules_version of a released rules version (`trainmark rules list`), or update trainmark",
    why="The rules version decides the target, the trial count and every bound; with an unknown version no rule "
    "applies, so nothing is judged against the right rules. It does not say which version was meant.",
    bad="trainmark_rules_version '9.9'",
    good="trainmark_rules_version '1.1' (from `trainmark rules list`)", module=__name__)
CONFORM_007 = rule(
    "CONFORM-007", WARNING, "the trials of a benchmark used different model structures",
    fix="train the same model in every trial",
    why="A benchmark's trials are repetitions of one training; a different model in some trials means the score mixes "
    "two systems. It compares structure fingerprints only, not whether either is the reference.",
    bad="trial 3's structure.json fingerprint differs from trials 1, 2, 4, 5",
    good="one fingerprint in every trial", module=__name__)

CODE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".bin", ".joblib", ".npy", ".npz", ".h5",
                 ".py", ".pyc", ".sh", ".so", ".exe", ".dll", ".onnx")


@dataclass
class TrainmarkContext:
    """What every benchmark check shares: rules, the reference models, generated rule files."""
    rules_for: Any                                  # (benchmark, version | None) -> BenchmarkRules | None
    references: conformity.ReferenceStructures
    compliance_dir: Path
    notes: list[str] = field(default_factory=list)
    _configs: dict = field(default_factory=dict)
    systems: dict = field(default_factory=dict)     # (submitter, system) -> its system description (or None)

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


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _classify(folder: BenchmarkFolder, findings: Findings) -> tuple[dict[int, str], dict[int, str], bool]:
    results: dict[int, str] = {}
    trial_dirs: dict[int, str] = {}
    has_epochs_log = False
    for e in folder.entries:
        rel = _join(folder.rel, e.name)
        if e.kind == "file" and e.name == layout.EPOCHS_LOG:
            has_epochs_log = True
        elif e.kind == "file" and e.name == layout.PROFILE_JSON:
            continue  # `trainmark profile`'s table: the report shows it, no score or check reads it
        elif e.kind == "file" and (m := RESULT_FILE.fullmatch(e.name)):
            if m[1] == "0":
                findings.add(TRIAL_001, rel, f"{layout.result_file(0)}: trials count from 1",
                             expected=f"{layout.result_file(1)} ...",
                             seen=e.name)
            else:
                results[int(m[1])] = e.name
        elif e.kind == "dir" and (m := TRIAL_DIR.fullmatch(e.name)) and m[1] != "0":
            trial_dirs[int(m[1])] = e.name
        elif e.kind == "dir" and e.name == layout.INTERRUPTED_DIR:
            pass  # attempts --resume archived: part of the format, read where a trial's MLLOG names them (TRIAL-004)
        else:
            _unexpected(rel, e, findings)
    return results, trial_dirs, has_epochs_log


def _unexpected(rel: str, e: Entry, findings: Findings) -> None:
    if e.kind == "file" and e.name.lower().endswith(CODE_SUFFIXES):
        findings.add(HOSTILE_005, rel, f"{rel} may carry code; it is never loaded", seen=e.name)
    else:
        findings.add(LAYOUT_004, rel, f"{rel} is not part of the format; ignored",
                     expected="epochs.log, result_<k>.txt, trial_<k>/", seen=e.name)


def _read(tree: SafeTree, rel: str, findings: Findings, missing_rule: str = LAYOUT_003) -> bytes | None:
    try:
        return tree.read_bytes(rel, LOG_CAP)
    except Missing:
        findings.add(missing_rule, rel, f"{rel} is missing", seen="missing")
    except UnsafeEntry as exc:
        findings.add(exc.rule, rel, exc.message, seen=exc.seen)
    return None


def _first_value(events_by_trial: dict[int, list[Event]], key: str) -> Any:
    """The value of the first ``key`` record, trials in order (None when no trial logs one)."""
    return mllog.first_value(chain.from_iterable(events_by_trial[k] for k in sorted(events_by_trial)), key)


def check_trainmark_benchmark(folder: BenchmarkFolder, tree: SafeTree, ctx: TrainmarkContext,
                              findings: Findings) -> BenchmarkResult:
    result = BenchmarkResult("trainmark", folder.rel, folder.benchmark, folder.division, folder.submitter,
                             folder.system)
    results, trial_dirs, has_epochs_log = _classify(folder, findings)
    events_by_trial = _read_result_files(folder, tree, results, findings)
    chosen = _rules_and_division(folder, events_by_trial, ctx, result, findings)
    if chosen is None:
        return result
    rules, division = chosen

    records = _check_result_files(folder, events_by_trial, rules, division, ctx, findings)
    ranks.check_ranks(events_by_trial, folder.rel, findings)  # world size, batch split, writers, nodes
    mllog_check.check_interrupted_attempts(records, tree, folder.rel, findings)  # TRIAL-004
    _check_text_log(folder, tree, has_epochs_log, rules, records, findings)
    ordered = [records[k] for k in sorted(records)]
    trials_check.check_numbering(sorted(results), folder.rel, rules, findings)
    _check_trial_dirs_without_results(folder, results, trial_dirs, rules, findings)
    trials_check.check_seeds(ordered, findings)
    trials_check.check_targets(ordered, folder.rel, rules, findings)
    trials_check.check_convergence(ordered, folder.rel, rules, division, findings)
    telemetry = energy.check_benchmark(folder.rel, tree, events_by_trial, trial_dirs, findings,  # ENERGY-, TELEMETRY-
                                       rules.max_init_seconds.get(division))
    trials_check.check_same_settings(ordered, folder.rel, rules, division, findings)
    trials_check.check_trial_outcomes(ordered, findings)
    curve.check_curves(ordered, rules, division, findings)
    other_load = _check_models(folder, tree, results, trial_dirs, records, rules, division, ctx, findings,
                               events_by_trial, telemetry)
    distinct.check_curves_distinct(ordered, findings)
    scoring = rules.scoring
    result.score = score_benchmark(ordered, int(scoring["drop_fastest_and_slowest"]),
                                   int(scoring["max_not_converged"])).to_dict()
    check_spread(ordered, result.score.get("cv_train_time"), other_load, folder.rel, rules, findings)
    result.trials = [trial_summary(r) for r in ordered]
    return result


def _read_result_files(folder: BenchmarkFolder, tree: SafeTree, results: dict[int, str],
                       findings: Findings) -> dict[int, list[Event]]:
    """The events of every readable result file, by trial."""
    events_by_trial: dict[int, list[Event]] = {}
    for k, name in sorted(results.items()):
        rel = _join(folder.rel, name)
        data = _read(tree, rel, findings)
        if data is not None:
            events_by_trial[k] = read_events(data, rel, findings, strict=True)
    return events_by_trial


def _rules_and_division(folder: BenchmarkFolder, events_by_trial: dict[int, list[Event]], ctx: TrainmarkContext,
                        result: BenchmarkResult, findings: Findings) -> tuple[BenchmarkRules, str] | None:
    """The rules the logs name (else the latest) and the division (the path's, else the logs'); None when
    there are no rules to judge by (RULES-001, LAYOUT-006)."""
    logged_version = _first_value(events_by_trial, mllog.RULES_VERSION)
    known = getattr(ctx.rules_for, "versions", None)
    if isinstance(logged_version, str) and known is not None and logged_version not in known:
        findings.add(RULES_001, folder.rel, f"the logs declare rules version {logged_version!r}, which this "
                     f"checker does not know", expected=f"one of {', '.join(known)}", seen=logged_version)
        return None
    rules = ctx.rules_for(folder.benchmark, logged_version if isinstance(logged_version, str) else None)
    if rules is None:
        findings.add(LAYOUT_006, folder.rel, f"no rules for benchmark {folder.benchmark!r}",
                     expected="a benchmark of `trainmark rules list`", seen=folder.benchmark)
        return None
    result.rules_version = rules.version
    division = folder.division
    if division is None:
        logged = _first_value(events_by_trial, mllog.SUBMISSION_DIVISION)
        division = logged if logged in DIVISIONS else "closed"
        ctx.notes.append(f"{folder.rel or '.'}: division taken from the logs: {division}")
        result.division = division
    return rules, division


def _check_text_log(folder: BenchmarkFolder, tree: SafeTree, has_epochs_log: bool, rules: BenchmarkRules,
                    records: dict[int, TrialRecord], findings: Findings) -> None:
    """The text log on its own, then its agreement with the MLLOG files (LAYOUT-003 when missing)."""
    if has_epochs_log:
        rel = _join(folder.rel, layout.EPOCHS_LOG)
        data = _read(tree, rel, findings)
        if data is not None:
            text_lines = check_epochs_log(data, rel, rules, findings)
            check_agreement(text_lines, rel, records, findings)
    else:
        findings.add(LAYOUT_003, _join(folder.rel, layout.EPOCHS_LOG), f"{layout.EPOCHS_LOG} is missing",
                     expected=layout.EPOCHS_LOG, seen="missing")


def _check_trial_dirs_without_results(folder: BenchmarkFolder, results: dict[int, str], trial_dirs: dict[int, str],
                                      rules: BenchmarkRules, findings: Findings) -> None:
    for k in sorted(trial_dirs.keys() - results.keys()):
        if k > max(max(results, default=0), int(rules.trials)):  # inside that range TRIAL-001 says it
            findings.add(LAYOUT_003, _join(folder.rel, layout.result_file(k)),
                         f"{layout.trial_dir(k)}/ has no {layout.result_file(k)}",
                         expected=layout.result_file(k), seen="missing")


def _check_result_files(folder: BenchmarkFolder, events_by_trial: dict[int, list[Event]], rules: BenchmarkRules,
                        division: str, ctx: TrainmarkContext, findings: Findings) -> dict[int, TrialRecord]:
    config = ctx.compliance_file(rules, division)
    key_rules = compliance_rules.key_rules(rules, division)
    names = {mllog.SUBMISSION_BENCHMARK: folder.benchmark, mllog.SUBMISSION_DIVISION: folder.division,
             mllog.SUBMISSION_ORG: folder.submitter, mllog.SUBMISSION_PLATFORM: folder.system}
    records = {}
    for k, events in sorted(events_by_trial.items()):
        rel = _join(folder.rel, layout.result_file(k))
        mllog_check.engine_findings(run_engine(events, config), events, rel, key_rules, findings)
        mllog_check.check_time_order(events, rel, findings)
        record = extract_trial(events, k, rel, rules)
        mllog_check.check_trial_number(record, findings)
        mllog_check.check_folder_names(record, names, findings)
        mllog_check.check_summary(record, findings)
        mllog_check.check_format_version(record, rules.version, findings)
        trials_check.check_hyperparameters(record, rules, division, findings)
        records[k] = record
    return records


def _check_models(folder: BenchmarkFolder, tree: SafeTree, results: dict[int, str], trial_dirs: dict[int, str],
                  records: dict[int, TrialRecord], rules: BenchmarkRules, division: str, ctx: TrainmarkContext,
                  findings: Findings, events_by_trial: dict[int, list[Event]],
                  telemetry: dict | None = None) -> dict[int, float | None]:
    """Conformity of every trial's model and trial.json, the work done in its windows (WORK-001..003) and
    its weights (WORK-004, WORK-005); returns each trial's recorded other CPU load."""
    reference, why = ctx.references.describe(rules)
    if reference is None and why not in ctx.notes:
        ctx.notes.append(why)
    other_load: dict[int, float | None] = {}
    baseline: tuple[int, str] | None = None  # the first trial's model
    digests: dict[int, tuple[str, str]] = {}
    for k in sorted(results):
        trial_rel = _join(folder.rel, layout.trial_dir(k))
        if k not in trial_dirs:
            findings.add(LAYOUT_003, trial_rel, f"trial {k} has {layout.result_file(k)} but no {layout.trial_dir(k)}/ "
                         "folder", expected=f"{layout.trial_dir(k)}/{layout.MODEL_FILE}, "
                         f"{layout.trial_dir(k)}/{layout.STRUCTURE_FILE}", seen="missing")
            continue
        _check_trial_entries(tree, trial_rel, findings)
        names = {"benchmark": folder.benchmark, "division": division, "submitter": folder.submitter,
                 "system_name": folder.system}
        summary = check_trial_json(tree, _join(trial_rel, layout.TRIAL_JSON), records.get(k), names, rules, findings)
        other_load[k] = summary.get("other_cpu_load_pct") if summary else None
        if records.get(k) is not None:
            derived = evidence_work.derive(records[k], events_by_trial.get(k, []), summary, _work(rules), division,
                                           _system(folder, ctx), findings)  # WORK-006/007/009
            work_time.check_trial(events_by_trial.get(k, []), records[k], summary, rules, findings,
                                  (telemetry or {}).get(k), derived)
        structure_rel = _join(trial_rel, layout.STRUCTURE_FILE)
        desc, text = conformity.read_structure(tree, structure_rel, findings)
        model_rel = _join(trial_rel, layout.MODEL_FILE)
        conformity.check_weights(tree, model_rel, desc, findings)
        digest = distinct.weights_digest(tree, model_rel, findings)
        if digest is not None:
            digests[k] = (model_rel, digest)
        if desc is None:
            continue
        record = records.get(k)
        if record is not None:
            conformity.check_logged_model(record, desc, structure_rel, findings)
        if reference is not None:
            conformity.check_reference(desc, text, reference, division, structure_rel, record, findings, rules)
        baseline = baseline or (k, desc["fingerprint"])
        if baseline[1] != desc["fingerprint"]:
            findings.add(CONFORM_007, structure_rel, f"trial {k}'s model differs from trial {baseline[0]}'s",
                         expected=baseline[1], seen=desc["fingerprint"])
    distinct.check_weights_distinct(digests, {k: r.value(mllog.SEED) for k, r in records.items()}, findings)
    return other_load


def _work(rules: BenchmarkRules) -> dict | None:
    """The benchmark's entry of its rules version's reference-work.json (None: that rules folder has none)."""
    table = reference_work.load(rules.version, rules.path.parent.parent)
    return table.get(rules.name) if table else None


def _system(folder: BenchmarkFolder, ctx: TrainmarkContext) -> dict | None:
    desc = ctx.systems.get((folder.submitter, folder.system))
    if not isinstance(desc, dict):
        note = "WORK-002 (a time above the peak) not judged: the system description lies outside the checked " \
               "folder or is unreadable; check the submitter folder"
        if note not in ctx.notes:
            ctx.notes.append(note)
        return None
    return desc


def _check_trial_entries(tree: SafeTree, trial_rel: str, findings: Findings) -> None:
    try:
        entries = tree.list_dir(trial_rel)
    except (UnsafeEntry, Missing) as exc:
        findings.add(getattr(exc, "rule", HOSTILE_007), trial_rel, getattr(exc, "message", str(exc)))
        return
    for e in safe_entries(trial_rel, entries, findings):
        if e.name not in TRIAL_FILES or e.kind != "file":
            _unexpected(_join(trial_rel, e.name), e, findings)


def trial_summary(r: TrialRecord) -> dict[str, Any]:
    """The recomputed figures of one trial, as the report shows them."""
    return {
        "trial": r.trial, "file": r.rel, "status": r.status, "converged": r.converged,
        "seed": r.value(mllog.SEED) if type(r.value(mllog.SEED)) is int else None, "epochs": r.epochs_trained,
        "evaluations": r.evaluations,
        "final_metric": r.final_metric, "train_time_s": r.train_time_s, "total_time_s": r.total_time_s,
        "eval_time_s": r.eval_time_s, "init_time_s": r.init_time_s, "time_reason": r.time_reason,
        "train_energy_j": r.train_energy_j, "total_energy_j": r.total_energy_j,
        "energy_method": r.value(mllog.ENERGY_METHOD) if isinstance(r.value(mllog.ENERGY_METHOD), str)
        else None, "energy_reason": r.energy_reason,
    }
