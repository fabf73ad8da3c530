"""The finding codes: every rule the checker enforces, by stable code.

Three things are easily confused: *benchmark rules* (``rules/<version>/*.yaml``: targets,
trials, hyperparameters), *finding codes* (this catalogue: what a check reports), and the
*MLPerf compliance config* that ``trainmark.checker.mlperf.compliance_rules`` generates for mlperf-logging's
engine. Codes never change meaning once released: reviewers quote them and scripts filter
on them. docs/checker.md's table is generated from this list (``trainmark rules docs``; a
test fails when stale), and a test fails when a module names a code that is not here. The
severity decides the exit status: any ``error`` makes the check fail.
"""
from __future__ import annotations

from trainmark.checker.verdict.registry import ERROR, INFO, REGISTRY, WARNING, Rule, rule

__all__ = ["ERROR", "INFO", "WARNING", "Rule", "RULES"]


def _code(id: str, severity: str, title: str, fix: str) -> str:
    """Catalogue one code; modules name it through the constant this returns (``catalog.LAYOUT_003``).

    Being moved: each code goes to the module that emits it, declared there with ``registry.rule``
    (why, fix, bad/good example).
    """
    return rule(id, severity, title, fix=fix, module=__name__)


# Layout of the folder tree
LAYOUT_001 = _code(
    "LAYOUT-001", ERROR, "a required folder is missing or empty",
    "create <submitter>/systems/ and <submitter>/results/ as docs/result-format.md describes")
LAYOUT_002 = _code(
    "LAYOUT-002", ERROR, "a system in results/ has no systems/<system>.json",
    "add the system description the harness wrote, or remove the results of the unknown system")
LAYOUT_003 = _code(
    "LAYOUT-003", ERROR, "a required file of a benchmark folder is missing",
    "copy the complete folder the harness wrote (epochs.log, result_<k>.txt, trial_<k>/)")
LAYOUT_004 = _code(
    "LAYOUT-004", WARNING, "an entry the format does not define (ignored)",
    "remove it: the checker reads only the files docs/result-format.md defines")
LAYOUT_005 = _code(
    "LAYOUT-005", ERROR, "a folder name the format does not allow",
    "divisions are 'closed' or 'open'; system and benchmark names use only [A-Za-z0-9._-]")
LAYOUT_006 = _code(
    "LAYOUT-006", ERROR, "a benchmark no rule file defines",
    "use a benchmark name from `trainmark rules list` (or pass the rules with --rules-dir)")
# Hostile content
HOSTILE_001 = _code(
    "HOSTILE-001", ERROR, "a symbolic link (never followed)",
    "replace the link by the file itself")
HOSTILE_002 = _code(
    "HOSTILE-002", ERROR, "a file larger than the checker reads",
    "a harness-written file stays far below the cap; remove padding or unrelated data")
HOSTILE_003 = _code(
    "HOSTILE-003", ERROR, "an entry that is neither a regular file nor a folder",
    "remove FIFOs, sockets and device files")
HOSTILE_004 = _code(
    "HOSTILE-004", ERROR, "a pickle or torch.save archive where safetensors is required (never loaded)",
    "save weights with safetensors.torch.save_file; pickles can run code and are never accepted")
HOSTILE_005 = _code(
    "HOSTILE-005", WARNING, "a file type that can carry code (never loaded)",
    "remove pickles, checkpoints and scripts from the result folder")
HOSTILE_006 = _code(
    "HOSTILE-006", ERROR, "a folder with more entries than the checker lists",
    "keep only the files the format defines")
HOSTILE_007 = _code(
    "HOSTILE-007", ERROR, "a file or folder that cannot be read",
    "make it readable (permissions) or remove it")
# Archives
ARCHIVE_001 = _code(
    'ARCHIVE-001', ERROR, 'the archive cannot be read as a tar archive (plain, gzip, bzip2 or xz)',
    'write it with `trainmark package FOLDER -o NAME.tar.gz`')
ARCHIVE_002 = _code(
    'ARCHIVE-002', ERROR, "an archive member has an absolute path or leaves the archive's folder ('..')",
    'archive the folder with relative member names (`trainmark package`)')
ARCHIVE_003 = _code(
    'ARCHIVE-003', ERROR, 'an archive member is a symbolic or hard link',
    'archive the files themselves, not links')
ARCHIVE_004 = _code(
    'ARCHIVE-004', ERROR, 'an archive member is a device, FIFO or other special file',
    'archive only regular files and folders')
ARCHIVE_005 = _code(
    'ARCHIVE-005', ERROR, 'an archive member is larger than the checker unpacks',
    'a result file stays far below the cap; remove unrelated data')
ARCHIVE_006 = _code(
    'ARCHIVE-006', ERROR, 'the archive holds more members or more bytes than the checker unpacks',
    'archive only the submission folder')
ARCHIVE_007 = _code(
    'ARCHIVE-007', ERROR, 'an archive member name occurs twice',
    'archive each file once (`trainmark package`)')
ARCHIVE_008 = _code(
    'ARCHIVE-008', ERROR, 'an archive member, or the whole archive, expands more than 100:1 (a decompression bomb)',
    'archive the result folder as `trainmark package` does; padding files of zeros have no place in a submission')
# Values that would choose code to run
SECURITY_001 = _code(
    "SECURITY-001", ERROR, "a logged value would make the compliance engine load a file that is not a shipped "
    "config (refused, never opened; the file is not run through the engine)",
    "log the division ('closed'/'open'), the benchmark and other names as plain names: "
    "a value never names a file")
# Bounded output and input
LIMIT_001 = _code(
    "LIMIT-001", INFO, "more findings of one rule in one file than the checker lists",
    "fix the listed ones first: the others are usually the same problem repeated")
LIMIT_002 = _code(
    "LIMIT-002", ERROR, "an MLLOG file too large in total for the compliance engine (not evaluated)",
    "submit the file the harness wrote: its records are a few hundred characters each")
# System description
SYSTEM_001 = _code(
    "SYSTEM-001", ERROR, "the system description is not a readable JSON object",
    "write systems/<system>.json as UTF-8 JSON, one object")
SYSTEM_002 = _code(
    "SYSTEM-002", ERROR, "the system description breaks the system JSON Schema",
    "fix the named field (schema: trainmark/format/schema/system.schema.json)")
# The code that ran (implementation record)
CODE_001 = _code(
    'CODE-001', ERROR, 'a benchmark of result format 2 has no implementation record (the code that ran)',
    'submit <submitter>/benchmarks/<benchmark>/implementations/<system>/ as trainmark run wrote it')
CODE_002 = _code(
    'CODE-002', ERROR, "the implementation's MANIFEST.sha256 is missing or has a malformed line",
    "keep MANIFEST.sha256 as trainmark run wrote it: '<sha256>  <relative path>' per file")
CODE_003 = _code(
    'CODE-003', ERROR, 'a file listed in MANIFEST.sha256 is missing',
    'submit every file of the implementation record')
CODE_004 = _code(
    'CODE-004', ERROR, "a file's SHA-256 differs from MANIFEST.sha256",
    'do not edit the implementation record; rerun to record changed code')
CODE_005 = _code(
    'CODE-005', ERROR, 'a file of the implementation record is not listed in MANIFEST.sha256',
    'remove files added after the run, or rerun')
CODE_006 = _code(
    'CODE-006', ERROR, 'implementation.json, environment.json or command.json is missing or malformed',
    'submit the implementation record trainmark run wrote, unchanged')
CODE_007 = _code(
    'CODE-007', ERROR,
    'closed division: the reference code differs from the released reference of the rules version',
    'run the released trainmark of that rules version unmodified '
    '(its hashes: rules/<version>/reference-code.json)')
CODE_008 = _code(
    'CODE-008', WARNING, 'closed division: no released reference hashes for the rules version (code not compared)',
    'check with the rules that ship rules/<version>/reference-code.json (`trainmark rules code-hashes`)')
CODE_009 = _code(
    'CODE-009', ERROR, 'open division: the source of the model behind --model is missing',
    'submit the implementation record with its model/ folder, as trainmark run --model wrote it')
CODE_010 = _code(
    'CODE-010', ERROR,
    'the implementation record names another benchmark, system, division or rules version than its results',
    "submit each system's record under benchmarks/<benchmark>/implementations/<system>/, unchanged")
CODE_011 = _code(
    'CODE-011', ERROR, "the implementation record's framework is not one the rules version's released code knows",
    'run the released trainmark unmodified: implementation.json names the framework that ran (pytorch, tensorflow)')
CODE_012 = _code(
    'CODE-012', ERROR, "the implementation record's framework differs from the framework the MLLOG logs",
    "submit the record the run of these results wrote: each system's results beside that system's own code")
CODE_013 = _code(
    'CODE-013', ERROR, 'no implementation record under a rules version whose release carries code hashes '
    '(whatever format version trial.json claims)',
    'submit <submitter>/benchmarks/<benchmark>/implementations/<system>/ as trainmark run wrote it')
# MLLOG files
MLLOG_001 = _code(
    "MLLOG-001", ERROR, "a line is not a valid MLLOG record",
    "every line is ':::MLLOG {json}' with time_ms, key, value and metadata, as mlperf_logging.mllog writes it")
MLLOG_002 = _code(
    "MLLOG-002", ERROR, "a key occurs too few or too many times",
    "log each key as often as the compliance rules require (see the message)")
MLLOG_003 = _code(
    "MLLOG-003", ERROR, "a compliance check on a logged event failed",
    "log the event with the value, metadata and order the compliance rules require (see the failed test)")
MLLOG_004 = _code(
    "MLLOG-004", ERROR, "trainmark_trial disagrees with the file's trial number",
    "result_<k>.txt must log trainmark_trial = k; each trial has one file")
MLLOG_005 = _code(
    "MLLOG-005", ERROR, "event times go back",
    "take time_ms of every event from one monotonic clock")
MLLOG_006 = _code(
    "MLLOG-006", ERROR, "submission_* values disagree with the folder",
    "submission_benchmark, _division, _org and _platform must name the benchmark, division, submitter "
    "and system folders the file lies in")
MLLOG_007 = _code(
    "MLLOG-007", ERROR, "trainmark_trial_result disagrees with the figures recomputed from the events",
    "do not edit result files; the summary must agree with the event times (0.05 s per trial)")
MLLOG_008 = _code(
    "MLLOG-008", WARNING, "the logged energy summary disagrees with the meter readings",
    "train_energy_j must equal (E[run_stop] - E[run_start]) - sum(E[eval_stop] - E[eval_start]), "
    "E being the trainmark_energy_j readings")
MLLOG_009 = _code(
    "MLLOG-009", ERROR, "the compliance engine could not evaluate the file",
    "fix the lines reported with it; the file is treated as failing compliance")
MLLOG_010 = _code(
    "MLLOG-010", ERROR, "an MLLOG record is longer than the checker accepts (not evaluated)",
    "log values of the size the harness writes; long records make mlperf-logging's parser quadratic")
MLLOG_011 = _code(
    "MLLOG-011", ERROR, "an MLLOG record repeats a JSON key",
    "write each record with mlperf_logging.mllog: one value per key")
MLLOG_012 = _code(
    "MLLOG-012", WARNING, "an MLLOG line ends with CR LF",
    "write the file with '\\n' line ends, as mlperf_logging.mllog does")
MLLOG_013 = _code(
    "MLLOG-013", ERROR, "trainmark_format_version is missing (rules 1.1 and later) or not a result format the "
    "checker knows", "log the result format version as trainmark run does; trial.json's format_version must agree")
# Numbers out of range
NUMBER_001 = _code(
    "NUMBER-001", ERROR, "a number outside the range the checker accepts (record not evaluated)",
    "log time_ms as milliseconds since the epoch and integers within 64 bits")
# The per-epoch text log
EPOCHLOG_001 = _code(
    "EPOCHLOG-001", ERROR, "a line of epochs.log is malformed",
    "each line is '[yyyy:MM:dd HH:mm:ss] \u2013 [trial] \u2013 [epoch] \u2013 [metric]', UTF-8, '\\n' ends; "
    "write it with trainmark.format.epochlog.format_line")
EPOCHLOG_002 = _code(
    "EPOCHLOG-002", ERROR, "trial numbers are not positive, contiguous and in order",
    "log trials 1, 2, 3, ... one after the other, each trial's lines together")
EPOCHLOG_003 = _code(
    "EPOCHLOG-003", ERROR, "epoch numbers within a trial are not 1, 2, 3, ...",
    "log every evaluated epoch once, counting from 1")
EPOCHLOG_004 = _code(
    "EPOCHLOG-004", ERROR, "a timestamp goes back within a trial",
    "log each line when its evaluation finished, from one UTC clock")
EPOCHLOG_005 = _code(
    "EPOCHLOG-005", ERROR, "a metric is not a finite number in the metric's range",
    "log the metric the rules name, as a finite number inside its range")
EPOCHLOG_006 = _code(
    "EPOCHLOG-006", ERROR, "epochs.log is empty or truncated",
    "copy the complete file; every line ends with '\\n'")
EPOCHLOG_007 = _code(
    "EPOCHLOG-007", ERROR, "epochs.log has more lines, or more malformed lines, than the checker reads "
    "(the rest is not read)",
    "submit the file the harness wrote: one line per evaluated epoch, a few hundred lines at most")
# Agreement of the two logs
AGREE_001 = _code(
    "AGREE-001", ERROR, "a trial is in one log but not in the other",
    "epochs.log and result_<k>.txt must describe the same trials")
AGREE_002 = _code(
    "AGREE-002", ERROR, "a trial's evaluated epochs differ between the logs",
    "epochs.log must have one line for each eval_accuracy of the MLLOG")
AGREE_003 = _code(
    "AGREE-003", ERROR, "a metric value differs between the logs (4 decimals)",
    "log the same evaluation result in both files; never edit a log")
AGREE_004 = _code(
    "AGREE-004", ERROR, "a timestamp differs from the MLLOG eval_stop by more than the tolerance",
    "stamp each epochs.log line in UTC when its evaluation finished")
# Trials
TRIAL_001 = _code(
    "TRIAL-001", ERROR, "a trial is missing",
    "submit trials 1..n without gaps, each with result_<k>.txt and trial_<k>/")
TRIAL_002 = _code(
    "TRIAL-002", ERROR, "more trials than the rules ask for (a missing trial is TRIAL-001 alone)",
    "submit exactly the number of trials the rules' 'trials' field asks for")
TRIAL_003 = _code(
    "TRIAL-003", ERROR, "a crashed or interrupted trial in the set of trials (never an allowed miss)",
    "rerun it: `trainmark run --resume` archives the failed trial under interrupted/ and trains it again")
TRIAL_004 = _code(
    "TRIAL-004", ERROR, "an interrupted attempt the MLLOG names (trainmark_interrupted_attempts) is missing from "
    "interrupted/", "submit the benchmark folder's interrupted/ as `trainmark run --resume` left it: every "
    "started trial stays visible")
# trial.json, the harness's summary
TRIALJSON_001 = _code(
    "TRIALJSON-001", ERROR, "trial.json is not a readable JSON object (size, depth, encoding)",
    "copy the trial.json the harness wrote; it is a small, flat UTF-8 JSON object")
TRIALJSON_002 = _code(
    "TRIALJSON-002", ERROR, "trial.json breaks its JSON Schema",
    "copy the trial.json the harness wrote (schema: trainmark/format/schema/trial.schema.json)")
TRIALJSON_003 = _code(
    "TRIALJSON-003", ERROR, "trial.json disagrees with the figures recomputed from the MLLOG",
    "never edit trial.json: it must state what result_<k>.txt shows (times within 0.05 s)")
# Seeds
SEED_001 = _code(
    "SEED-001", ERROR, "a trial's seed is missing, repeated or not an integer",
    "log one 'seed' event per trial with an integer value")
SEED_002 = _code(
    "SEED-002", ERROR, "two trials used the same seed",
    "draw a distinct seed for every trial")
# Quality target
TARGET_001 = _code(
    "TARGET-001", ERROR, "run_stop's status disagrees with the last metric and the target",
    "status is 'success' exactly when the last evaluation reached the target")
TARGET_002 = _code(
    "TARGET-002", WARNING, "a trial did not reach the quality target",
    "none needed if within scoring.max_not_converged: it is scored as the slowest trial")
TARGET_003 = _code(
    "TARGET-003", ERROR, "more trials missed the target than the rules allow: no score",
    "rerun the benchmark; at most scoring.max_not_converged trials may miss the target")
TARGET_004 = _code(
    "TARGET-004", ERROR, "a trial ran more epochs than the rules' max_epochs",
    "stop a trial at max_epochs")
TARGET_005 = _code(
    "TARGET-005", WARNING, "a trial went on after reaching the target",
    "stop the clock at the first evaluation that reaches the target")
# Rules version
RULES_001 = _code(
    "RULES-001", ERROR, "the submission declares a rules version this checker does not know",
    "log trainmark_rules_version of a released rules version (`trainmark rules list`), or update trainmark")
# Convergence against the reference
CONVERGE_001 = _code(
    "CONVERGE-001", ERROR, "closed division: epochs to target faster than the reference convergence allows",
    "train with the reference recipe within the closed division's limits; the rules' convergence points "
    "come from reference runs (see rules/<version>/<benchmark>.yaml, convergence)")
CONVERGE_002 = _code(
    "CONVERGE-002", WARNING, "no reference convergence points at this global batch size: not verified",
    "use a batch size the rules measured, or ask for reference runs at yours")
CONVERGE_003 = _code(
    "CONVERGE-003", ERROR, "closed division: a global batch size or implementation the rules have no reference "
    "convergence points for, outside the calibrated range: epochs to target cannot be judged",
    "use a batch size between the rules' calibrated ones (`trainmark rules show <benchmark>`, convergence), or "
    "submit to the open division; new points come from `trainmark calibrate` runs added to the rules")
CONVERGE_004 = _code(
    "CONVERGE-004", INFO, "the reference at this batch size is interpolated between two calibrated batch sizes "
    "(as MLPerf's RCP checker does)", "nothing to do: the finding says which points were interpolated")
# Accuracy curve against the reference band
CURVE_001 = _code(
    "CURVE-001", WARNING, "a trial's metric leaves the reference band of the calibration trials by more than "
    "the rules' tolerance", "train the reference recipe unchanged; the band (rules' curve_band) comes from the "
    "calibration trials in docs/calibration.md")
CURVE_002 = _code(
    "CURVE-002", ERROR, "a trial's metric leaves the reference band by more than the tolerance (the rules "
    "enforce the band)", "train the reference recipe unchanged; the rules' curve_band says severity: error")
# Work and time agree (issue 30: evidence, not the submitter's summaries)
WORK_001 = _code(
    "WORK-001", ERROR, "an evaluation window took far longer per evaluated sample than training took per trained "
    "sample: the window logged as evaluation held training time",
    "log eval_start/eval_stop around the evaluation only (the harness does); the bound is the rules' "
    "evaluation.max_eval_time_ratio")
WORK_002 = _code(
    "WORK-002", ERROR, "an epoch's logged work (FLOPs per step x steps) over its logged time exceeds the "
    "system's peak: the time is not physically possible",
    "log the real epoch times; if the peak is wrong, declare the right one in the system description")
WORK_003 = _code(
    "WORK-003", ERROR, "an epoch trained more than twice as fast as the trial's median epoch",
    "log the real epoch windows (an epoch whose time was cut is not a measured epoch)")
WORK_004 = _code(
    "WORK-004", ERROR, "two trials are not distinct: identical weights, or identical metric curves under "
    "different seeds",
    "run every trial; a copy of another trial is not a trial")
WORK_005 = _code(
    "WORK-005", ERROR, "a trained weight matrix or kernel is constant (every value the same): these are not the "
    "weights that were evaluated", "submit the model.safetensors the harness wrote at the end of the trial")
# Agreement of repeated trials
SPREAD_001 = _code(
    "SPREAD-001", WARNING, "the trials' train times vary more than the rules' max_train_time_cv (the score ranks "
    "systems poorly)", "rerun on a quiet machine (the finding names other load seen during the trials) or ask for "
    "a recipe whose epochs-to-target agree across seeds")
# Hyperparameters and precision
HPARAM_001 = _code(
    "HPARAM-001", ERROR, "a hyperparameter value is not allowed in the division",
    "use a value the rules allow (`trainmark rules show <benchmark>`)")
HPARAM_002 = _code(
    "HPARAM-002", ERROR, "a hyperparameter of the rules is not logged, or logged with several values",
    "log every hyperparameter the rules name, once")
HPARAM_003 = _code(
    "HPARAM-003", ERROR, "the precision is not one the rules allow",
    "use a precision the rules list (fp32, amp-bf16 or amp-fp16 where 'amp' is allowed)")
HPARAM_004 = _code(
    "HPARAM-004", ERROR, "closed division: the trials of a benchmark differ in hyperparameters or precision",
    "run every trial with the same settings; only the seed differs (`--resume` refuses other settings)")
HPARAM_005 = _code(
    "HPARAM-005", WARNING, "open division: the trials of a benchmark differ in hyperparameters or precision",
    "run every trial with the same settings, or submit the settings as separate results")
# Model conformity
CONFORM_001 = _code(
    "CONFORM-001", ERROR, "structure.json is malformed or its fingerprint does not match its content",
    "copy the structure.json the harness wrote (trainmark.format.structure.describe)")
CONFORM_002 = _code(
    "CONFORM-002", ERROR, "the model structure differs from the reference (closed division)",
    "train the reference model unchanged, or submit to the open division")
CONFORM_003 = _code(
    "CONFORM-003", INFO, "the model differs from the reference (open division: reported)",
    "none needed in the open division")
CONFORM_004 = _code(
    "CONFORM-004", ERROR, "model.safetensors is not a valid safetensors file",
    "save the state_dict with safetensors.torch.save_file")
CONFORM_005 = _code(
    "CONFORM-005", ERROR, "the weights' names, dtypes or shapes disagree with structure.json",
    "save the weights of the model structure.json describes")
CONFORM_006 = _code(
    "CONFORM-006", ERROR, "the MLLOG's fingerprint or parameter count disagrees with structure.json",
    "log trainmark_model_fingerprint and trainmark_parameter_count of the model trained")
CONFORM_007 = _code(
    "CONFORM-007", WARNING, "the trials of a benchmark used different model structures",
    "train the same model in every trial")
# Several ranks and nodes
RANK_001 = _code(
    'RANK-001', ERROR, 'the world size is not logged the same way in every trial',
    'log trainmark_world_size once per trial (the harness does) and run every trial of a benchmark '
    'on the same number of ranks')
RANK_002 = _code(
    'RANK-002', ERROR, 'the global batch is not the per-rank batch times the world size',
    'log global_batch_size = trainmark_local_batch_size x trainmark_world_size, '
    'with ranks spread evenly over trainmark_nodes')
RANK_003 = _code(
    'RANK-003', ERROR, 'more than one process wrote a result file',
    "only rank 0 writes the MLLOG (`trainmark run` under torchrun does); do not concatenate the ranks' logs")
RANK_004 = _code(
    'RANK-004', ERROR, "the nodes' energy readings do not add up to the total",
    'trainmark_energy_j must equal the sum of trainmark_node_energy_j '
    '(one reading per node, null with a null total)')
RANK_005 = _code(
    'RANK-005', ERROR, 'a multi-node run records its total energy without the per-node readings',
    "record trainmark_node_energy_j on run_start and run_stop, one reading per node "
    "(each node's local rank 0 meters it)")
# Energy by domain
ENERGY_001 = _code(
    "ENERGY-001", WARNING,
    "the per-epoch energies (training windows plus evaluations) do not add up to the run's total within 0.5%",
    "log each window's energy from the same meter readings as run_start and run_stop; "
    "keep work between windows short")
ENERGY_002 = _code(
    "ENERGY-002", ERROR,
    "the energy domains of the total do not add up to it within 0.5%, or their readings are malformed",
    "log trainmark_energy_domains_j (joules per domain, or null) from the same read as trainmark_energy_j")
ENERGY_003 = _code(
    "ENERGY-003", WARNING, "an energy domain stopped being measured during the run (its energy is null)",
    "see the harness's reason (trial.json energy_domains); fix the meter (driver, permissions, BMC) and rerun")
ENERGY_004 = _code(
    "ENERGY-004", ERROR,
    "a trial's energy figures disagree (the meter readings, a window's logged energy, trainmark_trial_result, "
    "trial.json) beyond the meter's resolution",
    "never edit an energy figure: every one is computed from the same cumulative meter readings")
ENERGY_005 = _code(
    "ENERGY-005", ERROR, "a cumulative energy reading goes back in time (the total or a domain)",
    "log trainmark_energy_j and trainmark_energy_domains_j as the meter read them: they only grow")
ENERGY_006 = _code(
    "ENERGY-006", ERROR,
    "the power in telemetry.csv, integrated over the run or its timed windows, disagrees with the logged energy",
    "submit the telemetry.csv and the logs of the same trial, unedited (tolerance: docs/energy.md)")
# Telemetry
TELEMETRY_001 = _code(
    "TELEMETRY-001", WARNING, "the accelerator was power- or thermally throttled during a timed window",
    "cool the system or lift the power cap; throttling makes the time depend on the room, not the system")
TELEMETRY_002 = _code(
    "TELEMETRY-002", WARNING, "telemetry has a gap of more than 2 s during the run",
    "keep the machine responsive while training (the sampler runs at 1 Hz or faster); "
    "gaps are recorded, not filled")
TELEMETRY_003 = _code(
    "TELEMETRY-003", ERROR,
    "trial_<k>/telemetry.csv is not the harness's CSV (header time_ms,..., numbers or empty cells)",
    "copy the telemetry.csv the harness wrote, unchanged (format: docs/energy.md)")
TELEMETRY_004 = _code(
    "TELEMETRY-004", ERROR, "a trial of result format 2 or later has no trial_<k>/telemetry.csv",
    "run with telemetry on (--telemetry-hz 1 or more; 0 is for experiments, not results) and submit the file")
TELEMETRY_005 = _code(
    "TELEMETRY-005", ERROR,
    "the telemetry timeline contradicts the windows: the run worked harder in its evaluations than in training",
    "submit the logs and telemetry.csv of the same trial, unedited (the bound: docs/energy.md)")
TELEMETRY_006 = _code(
    "TELEMETRY-006", ERROR,
    "the telemetry rows do not span the run as the sampler writes them (start, end, or more rows than its period "
    "allows)",
    "submit the telemetry.csv of the same trial, unedited: its rows run from before run_start to run_stop")
# MLPerf Training result folders
MLPERF_001 = _code(
    "MLPERF-001", WARNING, "an MLPerf result file fails MLPerf's compliance rules (run dropped)",
    "see the compliance message; a dropped run counts as one of the runs olympic scoring drops")
MLPERF_002 = _code(
    "MLPERF-002", WARNING, "an MLPerf run has no run_start or no successful run_stop (run dropped)",
    "a run that did not converge counts as one of the runs olympic scoring drops")
MLPERF_003 = _code(
    "MLPERF-003", ERROR, "more MLPerf runs dropped than allowed: no score",
    "MLPerf allows 1 dropped run (4 for unet3d)")
MLPERF_004 = _code(
    "MLPERF-004", ERROR, "fewer MLPerf result files than MLPerf requires for the benchmark (MLPerf: \"Incorrect "
    "number of files\", an error)",
    "submit the number of runs MLPerf's rules require (mlperf-logging's benchmark_meta)")
MLPERF_005 = _code(
    "MLPERF-005", WARNING, "scaling.json is not a JSON object with a positive scaling_factor (ignored: the "
    "factor is computed from MLPerf's reference convergence points)",
    "delete it, or submit the one MLPerf's package checker wrote: {\"scaling_factor\": <number>}")
MLPERF_006 = _code(
    "MLPERF-006", ERROR, "an MLPerf benchmark folder that is not part of the ruleset in force",
    "check the round's folders with that round's ruleset (--mlperf-ruleset X.Y.Z, or a path naming the round)")
MLPERF_007 = _code(
    "MLPERF-007", ERROR, "more MLPerf result files than MLPerf requires for the benchmark (MLPerf requires the "
    "exact number)",
    "submit exactly the number of runs MLPerf's rules require; a run may not be chosen from more")
MLPERF_008 = _code(
    "MLPERF-008", ERROR, "an MLPerf system description lacks a field MLPerf's system description checker "
    "requires for the ruleset",
    "add the field (the list is mlperf-logging's system_desc_checker for the round)")
MLPERF_009 = _code(
    "MLPERF-009", ERROR, "an MLPerf system description field has a value or type MLPerf does not accept "
    "(status, division, the fields of its summary line)",
    "use one of the values the message names; the summary fields are strings")
MLPERF_010 = _code(
    "MLPERF-010", ERROR, "closed-division MLPerf runs break MLPerf's seed rules (no seed, a seed that is not an "
    "integer with its source file and line, or the same seed from the same line in two runs)",
    "seed every run differently and log it with mllog (key 'seed', metadata file and lineno)")
MLPERF_011 = _code(
    "MLPERF-011", INFO, "an MLPerf run logs more than one seed (one per rank is common)",
    "nothing to fix when each seed is logged by mllog; MLPerf's seed checker notes it too (a Python warning)")
MLPERF_012 = _code(
    "MLPERF-012", ERROR, "closed-division MLPerf runs fail MLPerf's RCP check (convergence against the reference "
    "convergence points mlperf-logging ships for the ruleset)",
    "converge no faster than the reference allows at your batch size, or ask MLPerf for an RCP at that size")
MLPERF_013 = _code(
    "MLPERF-013", WARNING, "an MLPerf check fails but the folder's package_checker_params bypasses it "
    "(MLPerf accepts it for the submission committee's review)",
    "be ready to have the bypass reviewed by MLPerf's submission committee")
MLPERF_014 = _code(
    "MLPERF-014", ERROR, "a submitted scaling.json differs from the scaling factor computed from MLPerf's reference "
    "convergence points (the computed one is used)",
    "delete scaling.json or submit the one MLPerf's package checker wrote; a score is never scaled by a "
    "submitted factor")
MLPERF_015 = _code(
    "MLPERF-015", WARNING, "an MLPerf run's power results are not as MLPerf's power checker requires (the run "
    "counts as non-compliant)",
    "submit power/<result>/node_<i>.txt (and sw_<i>.txt) for every run, numbered from 0, as many for every run")
MLPERF_016 = _code(
    "MLPERF-016", ERROR, "more MLPerf runs fail compliance or the power rules than olympic scoring accepts",
    "MLPerf accepts 1 non-compliant run (4 for unet3d)")
MLPERF_017 = _code(
    "MLPERF-017", WARNING, "a submitted scaling.json is larger than the factor computed from MLPerf's reference "
    "convergence points: it would only slow the score (older RCP checkers computed such factors; the computed one "
    "is used)", "delete scaling.json or submit the one today's package checker writes")
# The checker itself
CHECKER_001 = _code(
    "CHECKER-001", ERROR, "the checker itself failed on this folder (a bug in trainmark)",
    "report it with the message; the folder was not fully checked")

RULES: dict[str, Rule] = REGISTRY  # the registry itself: codes declared elsewhere are in it too
