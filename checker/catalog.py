"""Every rule the checker enforces, by stable id.

Ids never change meaning once released: reviewers quote them in discussions and
scripts filter on them. ``docs/checker.md`` lists the same table (a test keeps both in
step). The severity decides the exit status: any ``error`` makes the check fail.
"""
from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    title: str
    fix: str


_RULES = [
    # Layout of the folder tree
    Rule("LAYOUT-001", ERROR, "a required folder is missing or empty",
         "create <submitter>/systems/ and <submitter>/results/ as docs/result-format.md describes"),
    Rule("LAYOUT-002", ERROR, "a system in results/ has no systems/<system>.json",
         "add the system description the harness wrote, or remove the results of the unknown system"),
    Rule("LAYOUT-003", ERROR, "a required file of a benchmark folder is missing",
         "copy the complete folder the harness wrote (epochs.log, result_<k>.txt, trial_<k>/)"),
    Rule("LAYOUT-004", WARNING, "an entry the format does not define (ignored)",
         "remove it: the checker reads only the files docs/result-format.md defines"),
    Rule("LAYOUT-005", ERROR, "a folder name the format does not allow",
         "divisions are 'closed' or 'open'; system and benchmark names use only [A-Za-z0-9._-]"),
    Rule("LAYOUT-006", ERROR, "a benchmark no rule file defines",
         "use a benchmark name from `trainmark rules list` (or pass the rules with --rules-dir)"),
    # System description
    Rule("SYSTEM-001", ERROR, "the system description is not a readable JSON object",
         "write systems/<system>.json as UTF-8 JSON, one object"),
    Rule("SYSTEM-002", ERROR, "the system description breaks the system JSON Schema",
         "fix the named field (schema: harness/schema/system.schema.json)"),
    # The per-epoch text log
    Rule("EPOCHLOG-001", ERROR, "a line of epochs.log is malformed",
         "each line is '[yyyy:MM:dd HH:mm:ss] \u2013 [trial] \u2013 [epoch] \u2013 [metric]', UTF-8, '\\n' ends; "
         "write it with trainmark.harness.epochlog.format_line"),
    Rule("EPOCHLOG-002", ERROR, "trial numbers are not positive, contiguous and in order",
         "log trials 1, 2, 3, ... one after the other, each trial's lines together"),
    Rule("EPOCHLOG-003", ERROR, "epoch numbers within a trial are not 1, 2, 3, ...",
         "log every evaluated epoch once, counting from 1"),
    Rule("EPOCHLOG-004", ERROR, "a timestamp goes back within a trial",
         "log each line when its evaluation finished, from one UTC clock"),
    Rule("EPOCHLOG-005", ERROR, "a metric is not a finite number in the metric's range",
         "log the metric the rules name, as a finite number inside its range"),
    Rule("EPOCHLOG-006", ERROR, "epochs.log is empty or truncated",
         "copy the complete file; every line ends with '\\n'"),
    # MLLOG files
    Rule("MLLOG-001", ERROR, "a line is not a valid MLLOG record",
         "every line is ':::MLLOG {json}' with time_ms, key, value and metadata, as mlperf_logging.mllog writes it"),
    Rule("MLLOG-002", ERROR, "a key occurs too few or too many times",
         "log each key as often as the compliance rules require (see the message)"),
    Rule("MLLOG-003", ERROR, "a compliance check on a logged event failed",
         "log the event with the value, metadata and order the compliance rules require (see the failed test)"),
    Rule("MLLOG-004", ERROR, "trainmark_trial disagrees with the file's trial number",
         "result_<k>.txt must log trainmark_trial = k; each trial has one file"),
    Rule("MLLOG-005", ERROR, "event times go back",
         "take time_ms of every event from one monotonic clock"),
    Rule("MLLOG-006", ERROR, "submission_* values disagree with the folder",
         "submission_benchmark, _division, _org and _platform must name the benchmark, division, submitter "
         "and system folders the file lies in"),
    Rule("MLLOG-007", ERROR, "trainmark_trial_result disagrees with the figures recomputed from the events",
         "do not edit result files; the summary must agree with the event times (0.05 s per trial)"),
    Rule("MLLOG-008", WARNING, "the logged energy summary disagrees with the meter readings",
         "train_energy_j must equal (E[run_stop] - E[run_start]) - sum(E[eval_stop] - E[eval_start]), "
         "E being the trainmark_energy_j readings"),
    Rule("MLLOG-009", ERROR, "the compliance engine could not evaluate the file",
         "fix the lines reported with it; the file is treated as failing compliance"),
    # Agreement of the two logs
    Rule("AGREE-001", ERROR, "a trial is in one log but not in the other",
         "epochs.log and result_<k>.txt must describe the same trials"),
    Rule("AGREE-002", ERROR, "a trial's evaluated epochs differ between the logs",
         "epochs.log must have one line for each eval_accuracy of the MLLOG"),
    Rule("AGREE-003", ERROR, "a metric value differs between the logs (4 decimals)",
         "log the same evaluation result in both files; never edit a log"),
    Rule("AGREE-004", ERROR, "a timestamp differs from the MLLOG eval_stop by more than the tolerance",
         "stamp each epochs.log line in UTC when its evaluation finished"),
    # Quality target and trials
    Rule("TARGET-001", ERROR, "run_stop's status disagrees with the last metric and the target",
         "status is 'success' exactly when the last evaluation reached the target"),
    Rule("TARGET-002", WARNING, "a trial did not reach the quality target",
         "none needed if within scoring.max_not_converged: it is scored as the slowest trial"),
    Rule("TARGET-003", ERROR, "more trials missed the target than the rules allow: no score",
         "rerun the benchmark; at most scoring.max_not_converged trials may miss the target"),
    Rule("TARGET-004", ERROR, "a trial ran more epochs than the rules' max_epochs",
         "stop a trial at max_epochs"),
    Rule("RULES-001", ERROR, "the submission declares a rules version this checker does not know",
         "log trainmark_rules_version of a released rules version (`trainmark rules list`), or update trainmark"),
    Rule("CONVERGE-001", ERROR, "closed division: epochs to target faster than the reference convergence allows",
         "train with the reference recipe within the closed division's limits; the rules' convergence points "
         "come from reference runs (see rules/<version>/<benchmark>.yaml, convergence)"),
    Rule("CONVERGE-002", WARNING, "no reference convergence points at this global batch size: not verified",
         "use a batch size the rules measured, or ask for reference runs at yours"),
    Rule("TARGET-005", WARNING, "a trial went on after reaching the target",
         "stop the clock at the first evaluation that reaches the target"),
    Rule("TRIAL-001", ERROR, "a trial is missing",
         "submit trials 1..n without gaps, each with result_<k>.txt and trial_<k>/"),
    Rule("TRIAL-002", ERROR, "the number of trials differs from the rules",
         "submit exactly the number of trials the rules' 'trials' field asks for"),
    Rule("SEED-001", ERROR, "a trial's seed is missing, repeated or not an integer",
         "log one 'seed' event per trial with an integer value"),
    Rule("SEED-002", ERROR, "two trials used the same seed",
         "draw a distinct seed for every trial"),
    # Model conformity
    Rule("CONFORM-001", ERROR, "structure.json is malformed or its fingerprint does not match its content",
         "copy the structure.json the harness wrote (trainmark.harness.structure.describe)"),
    Rule("CONFORM-002", ERROR, "the model structure differs from the reference (closed division)",
         "train the reference model unchanged, or submit to the open division"),
    Rule("CONFORM-003", INFO, "the model differs from the reference (open division: reported)",
         "none needed in the open division"),
    Rule("CONFORM-004", ERROR, "model.safetensors is not a valid safetensors file",
         "save the state_dict with safetensors.torch.save_file"),
    Rule("CONFORM-005", ERROR, "the weights' names, dtypes or shapes disagree with structure.json",
         "save the weights of the model structure.json describes"),
    Rule("CONFORM-006", ERROR, "the MLLOG's fingerprint or parameter count disagrees with structure.json",
         "log trainmark_model_fingerprint and trainmark_parameter_count of the model trained"),
    Rule("CONFORM-007", WARNING, "the trials of a benchmark used different model structures",
         "train the same model in every trial"),
    # Hyperparameters
    Rule("HPARAM-001", ERROR, "a hyperparameter value is not allowed in the division",
         "use a value the rules allow (`trainmark rules show <benchmark>`)"),
    Rule("HPARAM-002", ERROR, "a hyperparameter of the rules is not logged, or logged with several values",
         "log every hyperparameter the rules name, once"),
    Rule("HPARAM-003", ERROR, "the precision is not one the rules allow",
         "use a precision the rules list (fp32, amp-bf16 or amp-fp16 where 'amp' is allowed)"),
    # Hostile content
    Rule("HOSTILE-001", ERROR, "a symbolic link (never followed)",
         "replace the link by the file itself"),
    Rule("HOSTILE-002", ERROR, "a file larger than the checker reads",
         "a harness-written file stays far below the cap; remove padding or unrelated data"),
    Rule("HOSTILE-003", ERROR, "an entry that is neither a regular file nor a folder",
         "remove FIFOs, sockets and device files"),
    Rule("HOSTILE-004", ERROR, "a pickle or torch.save archive where safetensors is required (never loaded)",
         "save weights with safetensors.torch.save_file; pickles can run code and are never accepted"),
    Rule("HOSTILE-005", WARNING, "a file type that can carry code (never loaded)",
         "remove pickles, checkpoints and scripts from the result folder"),
    Rule("HOSTILE-006", ERROR, "a folder with more entries than the checker lists",
         "keep only the files the format defines"),
    Rule("HOSTILE-007", ERROR, "a file or folder that cannot be read",
         "make it readable (permissions) or remove it"),
    # MLPerf Training result folders
    Rule("MLPERF-001", WARNING, "an MLPerf result file fails MLPerf's compliance rules (run dropped)",
         "see the compliance message; a dropped run counts as one of the runs olympic scoring drops"),
    Rule("MLPERF-002", WARNING, "an MLPerf run has no run_start or no successful run_stop (run dropped)",
         "a run that did not converge counts as one of the runs olympic scoring drops"),
    Rule("MLPERF-003", ERROR, "more MLPerf runs dropped than allowed: no score",
         "MLPerf allows 1 dropped run (4 for unet3d)"),
    Rule("MLPERF-004", WARNING, "fewer MLPerf result files than MLPerf requires for the benchmark",
         "submit the number of runs MLPerf's rules require"),
    Rule("CHECKER-001", ERROR, "the checker itself failed on this folder (a bug in trainmark)",
         "report it with the message; the folder was not fully checked"),
    Rule("MLPERF-005", WARNING, "scaling.json is not a JSON object with a positive scaling_factor (ignored)",
         "scaling.json is written by MLPerf's review: {\"scaling_factor\": <number>}"),
]

RULES: dict[str, Rule] = {r.id: r for r in _RULES}


def rule(rule_id: str) -> Rule:
    return RULES[rule_id]
