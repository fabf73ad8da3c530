"""Check one trainmark benchmark folder and recompute its scores.

The order: list the folder, read every result file (the rules version and division
come from the logs when the path does not give them), run each through the compliance
engine and the own checks, then the text log, the agreement of both logs, the
cross-trial rules, model conformity, and finally the scores.
"""
from __future__ import annotations

from itertools import chain
from typing import Any

from trainmark.checker.checks import (
    conformity,
    curve,
    distinct,
    energy,
    evidence_format,
    evidence_work,
    ranks,
    work_time,
)
from trainmark.checker.checks import mllog as mllog_check
from trainmark.checker.checks import trials as trials_check
from trainmark.checker.checks.agreement import check_agreement
from trainmark.checker.checks.code import code_claims
from trainmark.checker.checks.epochs import check_epochs_log
from trainmark.checker.checks.judgement import BenchmarkResult, Check, Judgement, TrainmarkContext, TrialCheck
from trainmark.checker.checks.reeval import trial_claims
from trainmark.checker.checks.spread import check_spread
from trainmark.checker.checks.trial_json import check_trial_json
from trainmark.checker.checks.trials import TRIAL_001
from trainmark.checker.mlperf import compliance_rules
from trainmark.checker.mlperf.engine import run_engine
from trainmark.checker.read.evidence import BenchmarkEvidence, TrialFolder, read_benchmark
from trainmark.checker.read.json_file import LAYOUT_003
from trainmark.checker.read.levels import DIVISIONS, LAYOUT_004, BenchmarkFolder
from trainmark.checker.read.safefs import Entry, SafeTree
from trainmark.checker.read.trial_record import TrialRecord, extract_trial
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.checker.verdict.scoring import score_benchmark
from trainmark.format import layout, mllog
from trainmark.format.layout import RESULT_FILE, TRIAL_FILES
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


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def check_trainmark_benchmark(folder: BenchmarkFolder, tree: SafeTree, ctx: TrainmarkContext,
                              findings: Findings) -> BenchmarkResult:
    """The folder read once (``read/evidence.py``), then every check of ``CHECKS`` in order."""
    evidence = read_benchmark(folder, tree)
    ctx.code_claims[folder.rel] = code_claims(evidence)  # for check_code, which runs after every benchmark
    ctx.trial_claims[folder.rel] = trial_claims(evidence)  # for re-evaluation, which runs after the checks
    judged = Judgement(ctx, BenchmarkResult("trainmark", folder.rel, folder.benchmark, folder.division,
                                            folder.submitter, folder.system))
    for check in CHECKS:
        check(evidence, judged, findings)
        if judged.done:
            break
    return judged.result


def check_listing(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """TRIAL-001 for a result_0.txt, HOSTILE-005 or LAYOUT-004 for an entry the format does not define."""
    for e in ev.listing.unexpected:
        rel = _join(ev.folder.rel, e.name)
        if e.kind == "file" and RESULT_FILE.fullmatch(e.name):
            findings.add(TRIAL_001, rel, f"{layout.result_file(0)}: trials count from 1",
                         expected=f"{layout.result_file(1)} ...", seen=e.name)
        else:
            _unexpected(rel, e, findings)


def _unexpected(rel: str, e: Entry, findings: Findings) -> None:
    if e.kind == "file" and e.name.lower().endswith(CODE_SUFFIXES):
        findings.add(HOSTILE_005, rel, f"{rel} may carry code; it is never loaded", seen=e.name)
    else:
        findings.add(LAYOUT_004, rel, f"{rel} is not part of the format; ignored",
                     expected="epochs.log, result_<k>.txt, trial_<k>/", seen=e.name)




def check_result_reading(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """What reading each result file met: LAYOUT-003 or a link, the lines that are not MLLOG records."""
    for k in sorted(ev.results):
        ev.results[k].problems.replay(findings)


def _first_value(events_by_trial: dict[int, list[Event]], key: str) -> Any:
    """The value of the first ``key`` record, trials in order (None when no trial logs one)."""
    return mllog.first_value(chain.from_iterable(events_by_trial[k] for k in sorted(events_by_trial)), key)




def choose_rules(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """The rules the logs name (else the latest) and the division (the path's, else the logs'); without rules
    to judge by (RULES-001, LAYOUT-006) the checks end here."""
    folder, ctx, events_by_trial = ev.folder, judged.ctx, ev.events_by_trial()
    logged_version = _first_value(events_by_trial, mllog.RULES_VERSION)
    known = getattr(ctx.rules_for, "versions", None)
    if isinstance(logged_version, str) and known is not None and logged_version not in known:
        findings.add(RULES_001, folder.rel, f"the logs declare rules version {logged_version!r}, which this "
                     f"checker does not know", expected=f"one of {', '.join(known)}", seen=logged_version)
        judged.done = True
        return
    rules = ctx.rules_for(folder.benchmark, logged_version if isinstance(logged_version, str) else None)
    if rules is None:
        findings.add(LAYOUT_006, folder.rel, f"no rules for benchmark {folder.benchmark!r}",
                     expected="a benchmark of `trainmark rules list`", seen=folder.benchmark)
        judged.done = True
        return
    judged.result.rules_version = rules.version
    division = folder.division
    if division is None:
        logged = _first_value(events_by_trial, mllog.SUBMISSION_DIVISION)
        division = logged if logged in DIVISIONS else "closed"
        ctx.notes.append(f"{folder.rel or '.'}: division taken from the logs: {division}")
        judged.result.division = division
    judged.rules, judged.division = rules, division


def check_result_files(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """Each result file through the compliance engine and the MLLOG checks; its trial recomputed."""
    folder, rules, division = ev.folder, judged.rules, judged.division
    config = judged.ctx.compliance_file(rules, division)
    key_rules = compliance_rules.key_rules(rules, division)
    judged.folder_names = {mllog.SUBMISSION_BENCHMARK: folder.benchmark, mllog.SUBMISSION_DIVISION: folder.division,
                           mllog.SUBMISSION_ORG: folder.submitter, mllog.SUBMISSION_PLATFORM: folder.system}
    for k, events in ev.events_by_trial().items():
        rel = _join(folder.rel, layout.result_file(k))
        mllog_check.engine_findings(run_engine(events, config), events, rel, key_rules, findings)
        mllog_check.check_time_order(events, rel, findings)
        record = extract_trial(events, k, rel, rules)
        for check in TRIAL_CHECKS:
            check(record, judged, findings)
        judged.records[k] = record
    judged.ordered = [judged.records[k] for k in sorted(judged.records)]


def check_ranks(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    ranks.check_ranks(ev.events_by_trial(), ev.folder.rel, findings)  # world size, batch split, writers, nodes


def check_text_log(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """The text log on its own, then its agreement with the MLLOG files (LAYOUT-003 when missing)."""
    if ev.epochs_log is None:
        findings.add(LAYOUT_003, _join(ev.folder.rel, layout.EPOCHS_LOG), f"{layout.EPOCHS_LOG} is missing",
                     expected=layout.EPOCHS_LOG, seen="missing")
        return
    ev.epochs_log.problems.replay(findings)
    if ev.epochs_log.data is not None:
        unreadable: list[int] = []
        text_lines = check_epochs_log(ev.epochs_log.data, ev.epochs_log.rel, judged.rules, findings, unreadable)
        check_agreement(text_lines, ev.epochs_log.rel, judged.records, findings, unreadable)


def check_trial_dirs_without_results(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    results = ev.listing.results
    for k in sorted(ev.listing.trial_dirs.keys() - results.keys()):
        if k > max(max(results, default=0), int(judged.rules.trials)):  # inside that range TRIAL-001 says it
            findings.add(LAYOUT_003, _join(ev.folder.rel, layout.result_file(k)),
                         f"{layout.trial_dir(k)}/ has no {layout.result_file(k)}",
                         expected=layout.result_file(k), seen="missing")


def check_energy(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """ENERGY-* and TELEMETRY-* of every trial; keeps the telemetry series for the time checks."""
    judged.telemetry = energy.check_benchmark(ev.folder.rel, ev.events_by_trial(), ev.trials, findings,
                                              judged.rules.max_init_seconds.get(judged.division),
                                              evidence_format.expected_format(judged.rules))


def check_trial_folders(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """Each trial folder: its entries, trial.json, the work in its windows (WORK-001..003, 006, 007, 009), its
    structure and weights against the reference and each other (CONFORM-*, WORK-005), then WORK-004 by weights."""
    reference, why = judged.ctx.references.describe(judged.rules)
    if reference is None and why not in judged.ctx.notes:
        judged.ctx.notes.append(why)
    baseline: tuple[int, str] | None = None  # the first trial's model
    for k in sorted(ev.listing.results):
        if k not in ev.trials:
            trial_rel = _join(ev.folder.rel, layout.trial_dir(k))
            findings.add(LAYOUT_003, trial_rel, f"trial {k} has {layout.result_file(k)} but no {layout.trial_dir(k)}/ "
                         "folder", expected=f"{layout.trial_dir(k)}/{layout.MODEL_FILE}, "
                         f"{layout.trial_dir(k)}/{layout.STRUCTURE_FILE}", seen="missing")
            continue
        desc = _check_trial_folder(ev, ev.trials[k], judged, reference, findings)
        if desc is None:
            continue
        baseline = baseline or (k, desc["fingerprint"])
        if baseline[1] != desc["fingerprint"]:
            findings.add(CONFORM_007, ev.trials[k].structure.rel, f"trial {k}'s model differs from trial "
                         f"{baseline[0]}'s", expected=baseline[1], seen=desc["fingerprint"])
    samples = {k: (t.weights.rel, t.weights.sample) for k, t in ev.trials.items() if t.weights.sample is not None}
    distinct.check_weights_distinct(samples, {k: r.value(mllog.SEED) for k, r in judged.records.items()}, findings)


def _check_trial_folder(ev: BenchmarkEvidence, trial: TrialFolder, judged: Judgement, reference: dict | None,
                        findings: Findings) -> dict | None:
    """One trial folder's checks; its validated structure description (None when there is none)."""
    k, rules, division = trial.trial, judged.rules, judged.division
    trial.problems.replay(findings)
    for e in trial.entries:
        if e.name not in TRIAL_FILES or e.kind != "file":
            _unexpected(_join(trial.rel, e.name), e, findings)
    names = {"benchmark": ev.folder.benchmark, "division": division, "submitter": ev.folder.submitter,
             "system_name": ev.folder.system}
    record = judged.records.get(k)
    summary = check_trial_json(trial.trial_json, record, names, rules, findings)
    judged.other_load[k] = summary.get("other_cpu_load_pct") if summary else None
    if record is not None:
        events = ev.events_by_trial().get(k, [])
        derived = evidence_work.derive(record, events, summary, _work(rules), division, _system(ev.folder, judged.ctx),
                                       findings)  # WORK-006/007/009
        work_time.check_trial(events, record, summary, rules, findings, judged.telemetry.get(k), derived)
    desc, text = conformity.check_structure(trial.structure, findings)
    conformity.check_weights(trial.weights, desc, findings)
    distinct.check_constant(trial.weights.sample, findings)
    if desc is None:
        return None
    if record is not None:
        conformity.check_logged_model(record, desc, trial.structure.rel, findings)
    if reference is not None:
        conformity.check_reference(desc, text, reference, division, trial.structure.rel, record, findings, rules)
    return desc


def score(ev: BenchmarkEvidence, judged: Judgement, findings: Findings) -> None:
    """The scores (verdict/scoring.py), SPREAD-001 on them, and each trial's recomputed figures."""
    scoring, result = judged.rules.scoring, judged.result
    result.score = score_benchmark(judged.ordered, int(scoring["drop_fastest_and_slowest"]),
                                   int(scoring["max_not_converged"])).to_dict()
    check_spread(judged.ordered, result.score.get("cv_train_time"), judged.other_load, ev.folder.rel, judged.rules,
                 findings)
    result.trials = [trial_summary(r) for r in judged.ordered]


# Each recomputed trial's checks, in the order they run (inside check_result_files, trial by trial).
TRIAL_CHECKS: list[TrialCheck] = [
    mllog_check.check_trial_number,             # MLLOG-*: the logged trial number
    mllog_check.check_folder_names,             # the submission_* keys against the folder names
    mllog_check.check_summary,                  # trainmark_trial_result against the recomputed figures
    mllog_check.check_format_version,           # MLLOG-013
    trials_check.check_hyperparameters,         # HPARAM-*, CONVERGE-003
]

# Every check of a trainmark benchmark folder, in the order they run (the order of the findings). A new check
# takes (evidence, judgement, findings) and goes where what it reads of the judgement is established.
CHECKS: list[Check] = [
    check_listing,                              # TRIAL-001 (result_0.txt), HOSTILE-005, LAYOUT-004
    check_result_reading,                       # LAYOUT-003, MLLOG-001.. met reading each result file
    choose_rules,                               # RULES-001, LAYOUT-006: without rules the checks end here
    check_result_files,                         # the compliance engine and MLLOG-*, each trial recomputed
    check_ranks,                                # RANK-*
    mllog_check.check_interrupted_attempts,     # TRIAL-004
    check_text_log,                             # EPOCHLOG-*, AGREE-*
    trials_check.check_numbering,               # TRIAL-001, TRIAL-002
    check_trial_dirs_without_results,           # LAYOUT-003
    trials_check.check_seeds,                   # SEED-*
    trials_check.check_targets,                 # TARGET-*
    trials_check.check_convergence,             # CONVERGE-*
    check_energy,                               # ENERGY-*, TELEMETRY-*, TRIALJSON-004
    trials_check.check_same_settings,           # HPARAM-*, the trials' settings
    trials_check.check_trial_outcomes,          # TRIAL-003
    curve.check_curves,                         # CURVE-*
    check_trial_folders,                        # trial folders: TRIALJSON-*, WORK-*, CONFORM-*
    distinct.check_curves_distinct,             # WORK-004 by curves
    score,                                      # the scores, SPREAD-001, the trial summaries
]


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
