"""The MLLOG event sequence of one trial (``result_<k>.txt``): its keys and a typed writer.

The sequence (docs/result-format.md, "MLLOG"): the submission header, ``init_start``, the trial's
settings, ``init_stop``, ``run_start``, then per epoch ``epoch_start``/``epoch_stop`` and, when it
evaluates, ``eval_start``, ``eval_accuracy``, ``eval_stop``; finally ``trainmark_trial_result`` and
``run_stop``. Every boundary after ``init`` carries the meter's cumulative joules
(``trainmark_energy_j``, ``None`` when unmeasured), so the checker recomputes energy exactly as it
recomputes time. The writer is the only code that spells these events for the harness and the
tests' fixture builder; the MLPerf compliance config (trainmark.checker.mlperf.compliance_rules) checks the same
keys. ``PREFIX`` is the one spelling of the ``:::MLLOG `` marker. The hardened reader of submitted
(hostile) files is trainmark.format.mllog_read, which the checker, the report and the scale tools
use; ``read`` here is that same reader over a file this process or a test just wrote.

Written with ``mlperf_logging.mllog``: its module-level logger is a shared singleton whose
``config(filename=)`` adds a handler each call, so each file gets a private ``MLLogger`` over its
own ``logging.Logger`` with exactly one file handler. Every event carries an explicit ``time_ms``.
"""
from __future__ import annotations

import itertools
import logging
import re
from pathlib import Path
from typing import Any, Iterable

from mlperf_logging.mllog import constants as c

PREFIX = ":::MLLOG "
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding harness/, rules/, checker/, trainmark/

# Keys (MLPerf's spelling where MLPerf has one).
SUBMISSION_BENCHMARK, SUBMISSION_DIVISION = c.SUBMISSION_BENCHMARK, c.SUBMISSION_DIVISION
SUBMISSION_ORG, SUBMISSION_PLATFORM, SUBMISSION_STATUS = c.SUBMISSION_ORG, c.SUBMISSION_PLATFORM, c.SUBMISSION_STATUS
RULES_VERSION, TRIAL = "trainmark_rules_version", "trainmark_trial"
CACHE_CLEAR = c.CACHE_CLEAR
INIT_START, INIT_STOP, RUN_START, RUN_STOP = c.INIT_START, c.INIT_STOP, c.RUN_START, c.RUN_STOP
EPOCH_START, EPOCH_STOP, EVAL_START, EVAL_STOP = c.EPOCH_START, c.EPOCH_STOP, c.EVAL_START, c.EVAL_STOP
EVAL_ACCURACY = c.EVAL_ACCURACY
BLOCK_START, BLOCK_STOP = c.BLOCK_START, c.BLOCK_STOP  # MLPerf's blocks of epochs (read back, never written)
SEED, TRAIN_SAMPLES, EVAL_SAMPLES = c.SEED, c.TRAIN_SAMPLES, c.EVAL_SAMPLES
GRADIENT_ACCUMULATION_STEPS = c.GRADIENT_ACCUMULATION_STEPS
PRECISION, MODEL_FINGERPRINT = "trainmark_precision", "trainmark_model_fingerprint"
PARAMETER_COUNT, FLOPS_PER_STEP = "trainmark_parameter_count", "trainmark_flops_per_step"
ENERGY_METHOD, ENERGY_SCOPE = "trainmark_energy_method", "trainmark_energy_scope"
ENERGY_DOMAINS = "trainmark_energy_domains"
TELEMETRY, TRIAL_RESULT = "trainmark_telemetry", "trainmark_trial_result"
FRAMEWORK = "trainmark_framework"  # pytorch or tensorflow (absent: pytorch, the only one before rules 1.0's TF)
FORMAT_VERSION = "trainmark_format_version"  # the result format version trial.json claims, logged beside it
FORMAT_VERSION_SINCE_RULES = "1.1"  # rules versions from this one on require it (1.0's results predate the key)
INTERRUPTED_ATTEMPTS = "trainmark_interrupted_attempts"  # earlier attempts of this trial, archived by --resume
# open division (docs/open-division.md): what --optimizer, --lr-schedule and --augment built, as they ran
OPEN_OPTIMIZER, OPEN_LR_SCHEDULE = "trainmark_open_optimizer", "trainmark_open_lr_schedule"
OPEN_AUGMENT = "trainmark_open_augment"

# Metadata fields.
EPOCH_NUM, STATUS = c.EPOCH_NUM, "status"
ENERGY_J = "trainmark_energy_j"                  # the meter's cumulative joules at this boundary
DOMAINS_J = "trainmark_energy_domains_j"         # the same per energy domain (meters with domains)
TRAIN_ENERGY_J, EVAL_ENERGY_J = "trainmark_train_energy_j", "trainmark_eval_energy_j"
SAMPLES = "trainmark_samples"

# Window name -> (start key, stop key): the windows the harness times (docs/result-format.md).
WINDOWS = {"init": (INIT_START, INIT_STOP), "run": (RUN_START, RUN_STOP),
           "epoch": (EPOCH_START, EPOCH_STOP), "eval": (EVAL_START, EVAL_STOP)}
# The fields of ``trainmark_trial_result`` every trial must log (the compliance config requires them).
TRIAL_RESULT_FIELDS = ["status", "epochs", "train_time_s", "total_time_s", "eval_time_s", "init_time_s",
                       "train_energy_j", "total_energy_j", "energy_method", "final_metric"]

_counter = itertools.count()


class TrialLogWriter:
    """Writes one trial's MLLOG events in their order; ``path=None`` (ranks other than 0) writes nothing.

    ``stack_offset`` makes each event's metadata ``file``/``lineno`` name the code that called the
    writer, relative to the package (a submitter's checkout path is theirs, not the log's).
    """

    def __init__(self, path: Path | None, mode: str = "a"):
        self.path = path
        self._logger = None
        if path is None:
            return
        from mlperf_logging.mllog.mllog import MLLogger

        pylogger = logging.getLogger(f"trainmark.mllog.{next(_counter)}")
        pylogger.propagate = False
        pylogger.setLevel(logging.INFO)
        self._handler = logging.FileHandler(path, mode=mode, encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        pylogger.addHandler(self._handler)
        self._pylogger = pylogger
        self._logger = MLLogger(logger=pylogger, default_stack_offset=3, root_dir=re.escape(str(PACKAGE_ROOT)))

    def _emit(self, kind: str, key: str, value: Any, time_ms: int, metadata: dict | None) -> None:
        if self._logger is None:
            return
        getattr(self._logger, kind)(key=key, value=value, metadata=metadata or None, time_ms=time_ms)
        self._handler.flush()

    # -- one event -------------------------------------------------------------------------
    def event(self, key: str, value: Any, time_ms: int, **metadata) -> None:
        """A point event (a setting, a telemetry summary, a rank fact)."""
        self._emit("event", key, value, time_ms, metadata)

    def settings(self, pairs: Iterable[tuple[str, Any]], time_ms: int) -> None:
        for key, value in pairs:
            self._emit("event", key, value, time_ms, None)

    # -- the sequence ----------------------------------------------------------------------
    def header(self, time_ms: int, *, benchmark: str, division: str, org: str, platform: str,
               rules_version: str, trial: int) -> None:
        """The submission's identity, first in every file."""
        for key, value in ((SUBMISSION_BENCHMARK, benchmark), (SUBMISSION_DIVISION, division),
                           (SUBMISSION_ORG, org), (SUBMISSION_PLATFORM, platform),
                           (SUBMISSION_STATUS, "onprem"), (RULES_VERSION, rules_version),
                           (TRIAL, trial), (CACHE_CLEAR, True)):
            self._emit("event", key, value, time_ms, None)

    def boundary(self, key: str, time_ms: int, *, epoch: int | None = None, status: str | None = None,
                 metered: bool = True, energy_j: float | None = None, fields: dict | None = None,
                 domains_j: dict | None = None, nodes: dict | None = None) -> None:
        """A window boundary (``*_start``/``*_stop``): metadata in the order the format documents:
        ``epoch_num`` or ``status``, ``trainmark_energy_j`` (``metered``), the window's own
        ``fields``, per-domain joules where the meter has domains, then the per-node fields."""
        meta: dict[str, Any] = {}
        if epoch is not None:
            meta[EPOCH_NUM] = epoch
        if status is not None:
            meta[STATUS] = status
        if metered:
            meta[ENERGY_J] = energy_j
        meta.update(fields or {})
        if domains_j is not None:
            meta[DOMAINS_J] = domains_j
        meta.update(nodes or {})
        self._emit("start" if key.endswith("_start") else "end", key, None, time_ms, meta)

    def eval_accuracy(self, time_ms: int, epoch: int, value: float) -> None:
        self._emit("event", EVAL_ACCURACY, value, time_ms, {EPOCH_NUM: epoch})

    def trial_result(self, time_ms: int, summary: dict[str, Any]) -> None:
        self._emit("event", TRIAL_RESULT, summary, time_ms, None)

    def close(self) -> None:
        if self._logger is not None:
            self._handler.close()
            self._pylogger.removeHandler(self._handler)
            self._logger = None


def read(path: Path) -> list:
    """Every record of an MLLOG file we wrote, in order (``mllog_read.Event``), through the one hardened reader;
    a line that is not a record is skipped."""
    from trainmark.format.mllog_read import read_records  # it imports this module's PREFIX

    return read_records(Path(path).read_bytes(), strict=False)


def first_value(records: Iterable, key: str, default: Any = None) -> Any:
    """The value of the first record named ``key`` (records of either reader: anything with .key and .value)."""
    return next((r.value for r in records if r.key == key), default)
