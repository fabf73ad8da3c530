"""The finding codes: every rule the checker enforces, by stable code.

Three things are easily confused: *benchmark rules* (``rules/<version>/*.yaml``: targets,
trials, hyperparameters), *finding codes* (this catalogue: what a check reports), and the
*MLPerf compliance config* that ``trainmark.rules.compliance`` generates for mlperf-logging's
engine. Codes never change meaning once released: reviewers quote them and scripts filter
on them. docs/checker.md's table is generated from this list (``trainmark rules docs``; a
test fails when stale), and a test fails when a module names a code that is not here. The
severity decides the exit status: any ``error`` makes the check fail.
"""
from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"


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
    # Archives
    Rule('ARCHIVE-001', ERROR, 'the archive cannot be read as a tar archive (plain, gzip, bzip2 or xz)',
         'write it with `trainmark package FOLDER -o NAME.tar.gz`'),
    Rule('ARCHIVE-002', ERROR, "an archive member has an absolute path or leaves the archive's folder ('..')",
         'archive the folder with relative member names (`trainmark package`)'),
    Rule('ARCHIVE-003', ERROR, 'an archive member is a symbolic or hard link',
         'archive the files themselves, not links'),
    Rule('ARCHIVE-004', ERROR, 'an archive member is a device, FIFO or other special file',
         'archive only regular files and folders'),
    Rule('ARCHIVE-005', ERROR, 'an archive member is larger than the checker unpacks',
         'a result file stays far below the cap; remove unrelated data'),
    Rule('ARCHIVE-006', ERROR, 'the archive holds more members or more bytes than the checker unpacks',
         'archive only the submission folder'),
    Rule('ARCHIVE-007', ERROR, 'an archive member name occurs twice',
         'archive each file once (`trainmark package`)'),
    # Values that would choose code to run
    Rule("SECURITY-001", ERROR, "a logged value would make the compliance engine load a file that is not a shipped "
         "config (refused, never opened; the file is not run through the engine)",
         "log the division ('closed'/'open'), the benchmark and other names as plain names: "
         "a value never names a file"),
    # Bounded output and input
    Rule("LIMIT-001", INFO, "more findings of one rule in one file than the checker lists",
         "fix the listed ones first: the others are usually the same problem repeated"),
    Rule("LIMIT-002", ERROR, "an MLLOG file too large in total for the compliance engine (not evaluated)",
         "submit the file the harness wrote: its records are a few hundred characters each"),
    # System description
    Rule("SYSTEM-001", ERROR, "the system description is not a readable JSON object",
         "write systems/<system>.json as UTF-8 JSON, one object"),
    Rule("SYSTEM-002", ERROR, "the system description breaks the system JSON Schema",
         "fix the named field (schema: trainmark/format/schema/system.schema.json)"),
    # The code that ran (implementation record)
    Rule('CODE-001', ERROR, 'a benchmark of result format 2 has no implementation record (the code that ran)',
         'submit <submitter>/benchmarks/<benchmark>/implementations/<system>/ as trainmark run wrote it'),
    Rule('CODE-002', ERROR, "the implementation's MANIFEST.sha256 is missing or has a malformed line",
         "keep MANIFEST.sha256 as trainmark run wrote it: '<sha256>  <relative path>' per file"),
    Rule('CODE-003', ERROR, 'a file listed in MANIFEST.sha256 is missing',
         'submit every file of the implementation record'),
    Rule('CODE-004', ERROR, "a file's SHA-256 differs from MANIFEST.sha256",
         'do not edit the implementation record; rerun to record changed code'),
    Rule('CODE-005', ERROR, 'a file of the implementation record is not listed in MANIFEST.sha256',
         'remove files added after the run, or rerun'),
    Rule('CODE-006', ERROR, 'implementation.json, environment.json or command.json is missing or malformed',
         'submit the implementation record trainmark run wrote, unchanged'),
    Rule('CODE-007', ERROR,
         'closed division: the reference code differs from the released reference of the rules version',
         'run the released trainmark of that rules version unmodified '
         '(its hashes: rules/<version>/reference-code.json)'),
    Rule('CODE-008', WARNING, 'closed division: no released reference hashes for the rules version (code not compared)',
         'check with the rules that ship rules/<version>/reference-code.json (`trainmark rules code-hashes`)'),
    Rule('CODE-009', ERROR, 'open division: the source of the model behind --model is missing',
         'submit the implementation record with its model/ folder, as trainmark run --model wrote it'),
    Rule('CODE-010', ERROR,
         'the implementation record names another benchmark, system, division or rules version than its results',
         "submit each system's record under benchmarks/<benchmark>/implementations/<system>/, unchanged"),
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
    Rule("MLLOG-010", ERROR, "an MLLOG record is longer than the checker accepts (not evaluated)",
         "log values of the size the harness writes; long records make mlperf-logging's parser quadratic"),
    Rule("MLLOG-011", ERROR, "an MLLOG record repeats a JSON key",
         "write each record with mlperf_logging.mllog: one value per key"),
    Rule("MLLOG-012", WARNING, "an MLLOG line ends with CR LF",
         "write the file with '\\n' line ends, as mlperf_logging.mllog does"),
    # Numbers out of range
    Rule("NUMBER-001", ERROR, "a number outside the range the checker accepts (record not evaluated)",
         "log time_ms as milliseconds since the epoch and integers within 64 bits"),
    # The per-epoch text log
    Rule("EPOCHLOG-001", ERROR, "a line of epochs.log is malformed",
         "each line is '[yyyy:MM:dd HH:mm:ss] \u2013 [trial] \u2013 [epoch] \u2013 [metric]', UTF-8, '\\n' ends; "
         "write it with trainmark.format.epochlog.format_line"),
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
    # Agreement of the two logs
    Rule("AGREE-001", ERROR, "a trial is in one log but not in the other",
         "epochs.log and result_<k>.txt must describe the same trials"),
    Rule("AGREE-002", ERROR, "a trial's evaluated epochs differ between the logs",
         "epochs.log must have one line for each eval_accuracy of the MLLOG"),
    Rule("AGREE-003", ERROR, "a metric value differs between the logs (4 decimals)",
         "log the same evaluation result in both files; never edit a log"),
    Rule("AGREE-004", ERROR, "a timestamp differs from the MLLOG eval_stop by more than the tolerance",
         "stamp each epochs.log line in UTC when its evaluation finished"),
    # Trials
    Rule("TRIAL-001", ERROR, "a trial is missing",
         "submit trials 1..n without gaps, each with result_<k>.txt and trial_<k>/"),
    Rule("TRIAL-002", ERROR, "the number of trials differs from the rules",
         "submit exactly the number of trials the rules' 'trials' field asks for"),
    Rule("TRIAL-003", ERROR, "a crashed or interrupted trial in the set of trials (never an allowed miss)",
         "rerun it: `trainmark run --resume` archives the failed trial under interrupted/ and trains it again"),
    # trial.json, the harness's summary
    Rule("TRIALJSON-001", ERROR, "trial.json is not a readable JSON object (size, depth, encoding)",
         "copy the trial.json the harness wrote; it is a small, flat UTF-8 JSON object"),
    Rule("TRIALJSON-002", ERROR, "trial.json breaks its JSON Schema",
         "copy the trial.json the harness wrote (schema: trainmark/format/schema/trial.schema.json)"),
    Rule("TRIALJSON-003", ERROR, "trial.json disagrees with the figures recomputed from the MLLOG",
         "never edit trial.json: it must state what result_<k>.txt shows (times within 0.05 s)"),
    # Seeds
    Rule("SEED-001", ERROR, "a trial's seed is missing, repeated or not an integer",
         "log one 'seed' event per trial with an integer value"),
    Rule("SEED-002", ERROR, "two trials used the same seed",
         "draw a distinct seed for every trial"),
    # Quality target
    Rule("TARGET-001", ERROR, "run_stop's status disagrees with the last metric and the target",
         "status is 'success' exactly when the last evaluation reached the target"),
    Rule("TARGET-002", WARNING, "a trial did not reach the quality target",
         "none needed if within scoring.max_not_converged: it is scored as the slowest trial"),
    Rule("TARGET-003", ERROR, "more trials missed the target than the rules allow: no score",
         "rerun the benchmark; at most scoring.max_not_converged trials may miss the target"),
    Rule("TARGET-004", ERROR, "a trial ran more epochs than the rules' max_epochs",
         "stop a trial at max_epochs"),
    Rule("TARGET-005", WARNING, "a trial went on after reaching the target",
         "stop the clock at the first evaluation that reaches the target"),
    # Rules version
    Rule("RULES-001", ERROR, "the submission declares a rules version this checker does not know",
         "log trainmark_rules_version of a released rules version (`trainmark rules list`), or update trainmark"),
    # Convergence against the reference
    Rule("CONVERGE-001", ERROR, "closed division: epochs to target faster than the reference convergence allows",
         "train with the reference recipe within the closed division's limits; the rules' convergence points "
         "come from reference runs (see rules/<version>/<benchmark>.yaml, convergence)"),
    Rule("CONVERGE-002", WARNING, "no reference convergence points at this global batch size: not verified",
         "use a batch size the rules measured, or ask for reference runs at yours"),
    # Accuracy curve against the reference band
    Rule("CURVE-001", WARNING, "a trial's metric leaves the reference band of the calibration trials by more than "
         "the rules' tolerance", "train the reference recipe unchanged; the band (rules' curve_band) comes from the "
         "calibration trials in docs/calibration.md"),
    Rule("CURVE-002", ERROR, "a trial's metric leaves the reference band by more than the tolerance (the rules "
         "enforce the band)", "train the reference recipe unchanged; the rules' curve_band says severity: error"),
    # Agreement of repeated trials
    Rule("SPREAD-001", WARNING, "the trials' train times vary more than the rules' max_train_time_cv (the score ranks "
         "systems poorly)", "rerun on a quiet machine (the finding names other load seen during the trials) or ask for "
         "a recipe whose epochs-to-target agree across seeds"),
    # Hyperparameters and precision
    Rule("HPARAM-001", ERROR, "a hyperparameter value is not allowed in the division",
         "use a value the rules allow (`trainmark rules show <benchmark>`)"),
    Rule("HPARAM-002", ERROR, "a hyperparameter of the rules is not logged, or logged with several values",
         "log every hyperparameter the rules name, once"),
    Rule("HPARAM-003", ERROR, "the precision is not one the rules allow",
         "use a precision the rules list (fp32, amp-bf16 or amp-fp16 where 'amp' is allowed)"),
    Rule("HPARAM-004", ERROR, "closed division: the trials of a benchmark differ in hyperparameters or precision",
         "run every trial with the same settings; only the seed differs (`--resume` refuses other settings)"),
    Rule("HPARAM-005", WARNING, "open division: the trials of a benchmark differ in hyperparameters or precision",
         "run every trial with the same settings, or submit the settings as separate results"),
    # Model conformity
    Rule("CONFORM-001", ERROR, "structure.json is malformed or its fingerprint does not match its content",
         "copy the structure.json the harness wrote (trainmark.format.structure.describe)"),
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
    # Several ranks and nodes
    Rule('RANK-001', ERROR, 'the world size is not logged the same way in every trial',
         'log trainmark_world_size once per trial (the harness does) and run every trial of a benchmark '
         'on the same number of ranks'),
    Rule('RANK-002', ERROR, 'the global batch is not the per-rank batch times the world size',
         'log global_batch_size = trainmark_local_batch_size x trainmark_world_size, '
         'with ranks spread evenly over trainmark_nodes'),
    Rule('RANK-003', ERROR, 'more than one process wrote a result file',
         "only rank 0 writes the MLLOG (`trainmark run` under torchrun does); do not concatenate the ranks' logs"),
    Rule('RANK-004', ERROR, "the nodes' energy readings do not add up to the total",
         'trainmark_energy_j must equal the sum of trainmark_node_energy_j '
         '(one reading per node, null with a null total)'),
    Rule('RANK-005', ERROR, 'a multi-node run records its total energy without the per-node readings',
         "record trainmark_node_energy_j on run_start and run_stop, one reading per node "
         "(each node's local rank 0 meters it)"),
    # Energy by domain
    Rule("ENERGY-001", WARNING,
         "the per-epoch energies (training windows plus evaluations) do not add up to the run's total within 0.5%",
         "log each window's energy from the same meter readings as run_start and run_stop; "
         "keep work between windows short"),
    Rule("ENERGY-002", ERROR,
         "the energy domains of the total do not add up to it within 0.5%, or their readings are malformed",
         "log trainmark_energy_domains_j (joules per domain, or null) from the same read as trainmark_energy_j"),
    Rule("ENERGY-003", WARNING, "an energy domain stopped being measured during the run (its energy is null)",
         "see the harness's reason (trial.json energy_domains); fix the meter (driver, permissions, BMC) and rerun"),
    # Telemetry
    Rule("TELEMETRY-001", WARNING, "the accelerator was power- or thermally throttled during a timed window",
         "cool the system or lift the power cap; throttling makes the time depend on the room, not the system"),
    Rule("TELEMETRY-002", WARNING, "telemetry has a gap of more than 2 s during the run",
         "keep the machine responsive while training (the sampler runs at 1 Hz or faster); "
         "gaps are recorded, not filled"),
    Rule("TELEMETRY-003", ERROR,
         "trial_<k>/telemetry.csv is not the harness's CSV (header time_ms,..., numbers or empty cells)",
         "copy the telemetry.csv the harness wrote, unchanged (format: docs/energy.md)"),
    # MLPerf Training result folders
    Rule("MLPERF-001", WARNING, "an MLPerf result file fails MLPerf's compliance rules (run dropped)",
         "see the compliance message; a dropped run counts as one of the runs olympic scoring drops"),
    Rule("MLPERF-002", WARNING, "an MLPerf run has no run_start or no successful run_stop (run dropped)",
         "a run that did not converge counts as one of the runs olympic scoring drops"),
    Rule("MLPERF-003", ERROR, "more MLPerf runs dropped than allowed: no score",
         "MLPerf allows 1 dropped run (4 for unet3d)"),
    Rule("MLPERF-004", WARNING, "fewer MLPerf result files than MLPerf requires for the benchmark",
         "submit the number of runs MLPerf's rules require"),
    Rule("MLPERF-005", WARNING, "scaling.json is not a JSON object with a positive scaling_factor (ignored)",
         "scaling.json is written by MLPerf's review: {\"scaling_factor\": <number>}"),
    # The checker itself
    Rule("CHECKER-001", ERROR, "the checker itself failed on this folder (a bug in trainmark)",
         "report it with the message; the folder was not fully checked"),
]

RULES: dict[str, Rule] = {r.id: r for r in _RULES}
