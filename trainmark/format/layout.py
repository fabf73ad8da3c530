"""Folder and file names of a result folder (docs/result-format.md, "Layout").

``<out>/<division>/<submitter>/systems/<system>.json`` and
``<out>/<division>/<submitter>/results/<system>/<benchmark>/`` holding ``epochs.log``,
``result_<k>.txt`` and ``trial_<k>/`` per trial. The harness builds paths with the functions,
the checker recognises names with the patterns; both come from here.

Beside ``results/``, ``benchmarks/<benchmark>/implementations/<system>/`` holds the implementation
record (``implementation.json``, ``environment.json``, ``command.json``, ``code/``, ``model/``,
``MANIFEST.sha256``): the harness writes it, the checker verifies it. The folder-name rule
(``NAME``, ``name_refusal``) is the one the checker (LAYOUT-005), ``trainmark run`` and the
command line apply.
"""
from __future__ import annotations

import re
from pathlib import Path

DIVISIONS = ("closed", "open")
SYSTEMS_DIR = "systems"
RESULTS_DIR = "results"
BENCHMARKS_DIR = "benchmarks"          # beside results/: benchmarks/<benchmark>/implementations/<system>/
SYSTEM_SUFFIX = ".json"                # systems/<system>.json
INTERRUPTED_DIR = "interrupted"        # an archived, unfinished trial (``--resume``)

EPOCHS_LOG = "epochs.log"
MODEL_FILE = "model.safetensors"
STRUCTURE_FILE = "structure.json"
TRIAL_JSON = "trial.json"              # written last: its presence marks a finished trial
TELEMETRY_FILE = "telemetry.csv"
TRIAL_FILES = (MODEL_FILE, STRUCTURE_FILE, TRIAL_JSON, TELEMETRY_FILE)
PROFILE_JSON = "profile.json"          # beside epochs.log: `trainmark profile --json`, shown by the report

# The implementation record (trainmark.harness.code_record writes it, trainmark.checker.checks.code reads it)
IMPLEMENTATIONS_DIR = "implementations"
IMPLEMENTATION_JSON = "implementation.json"   # what ran
ENVIRONMENT_JSON = "environment.json"         # installed distributions, Python, CUDA, driver
COMMAND_JSON = "command.json"                 # the command line and the resolved options
MANIFEST = "MANIFEST.sha256"                  # SHA-256 of every other file of the record
CODE_DIR = "code"                             # the reference modules and the rule file used
MODEL_DIR = "model"                           # open division with --model: the model's source
IMPLEMENTATION_FORMAT = "trainmark-implementation/1"

# Beside the rule files of a version (rules/<version>/), not in a result folder
RELEASED_CODE_FILE = "reference-code.json"    # the released reference's hashes (CODE-007)
# An MLPerf benchmark folder: the review's scaling factor (MLPERF-005)
SCALING_JSON = "scaling.json"

RESULT_PREFIX, RESULT_SUFFIX = "result_", ".txt"
TRIAL_PREFIX = "trial_"
RESULT_GLOB = f"{RESULT_PREFIX}*{RESULT_SUFFIX}"   # any trial's or MLPerf run's log, loosely

NAME_CHARS = "A-Za-z0-9._-"
NAME = re.compile(f"[{NAME_CHARS}]+")                          # a division, submitter, system or benchmark
RESULT_FILE = re.compile(r"result_(0|[1-9][0-9]{0,5})\.txt")   # group 1: the trial number
TRIAL_DIR = re.compile(r"trial_(0|[1-9][0-9]{0,5})")
ANY_TRIAL_NAME = re.compile(r"(?:result_(\d+)\.txt|trial_(\d+))")  # any number: what a rerun must not leave behind
CLI_NAME_MAX = 128   # --submitter, --system-name on the command line
RUN_NAME_MAX = 100   # trainmark run's own check, and the longest default system name


def name_refusal(name: str, *, max_len: int | None = None, dots: bool = True) -> str | None:
    """Why ``name`` cannot name a division, submitter, system or benchmark folder; None when it can.

    Every caller refuses characters outside ``[A-Za-z0-9._-]`` and the empty name (the checker's
    LAYOUT-005); ``max_len`` also refuses longer names, ``dots=False`` names of dots only ('.', '..').
    """
    if not NAME.fullmatch(name):
        return f"characters outside [{NAME_CHARS}]" if name else "an empty name"
    if max_len is not None and len(name) > max_len:
        return f"longer than {max_len} characters"
    if not dots and set(name) == {"."}:
        return "dots only ('.' and '..' are not folders of their own)"
    return None


def to_name(text: str, max_len: int = RUN_NAME_MAX) -> str:
    """``text`` made a folder name: every run of other characters becomes '-', at most ``max_len`` long."""
    return re.sub(f"[^{NAME_CHARS}]+", "-", text).strip("-")[:max_len]


def result_file(k: int) -> str:
    """The MLLOG file of trial ``k`` (counted from 1)."""
    return f"result_{k}.txt"


def trial_dir(k: int) -> str:
    """The folder of trial ``k``'s weights, structure, summary and telemetry."""
    return f"trial_{k}"


def system_file(system: str) -> str:
    return f"{system}{SYSTEM_SUFFIX}"


def system_of(name: str) -> str | None:
    """The system a ``systems/`` file name describes (``<system>.json``), else None."""
    return name[:-len(SYSTEM_SUFFIX)] if name.endswith(SYSTEM_SUFFIX) else None


def record_parts(benchmark: str, system: str) -> tuple[str, str, str, str]:
    """The implementation record's folder below ``<division>/<submitter>/``."""
    return (BENCHMARKS_DIR, benchmark, IMPLEMENTATIONS_DIR, system)


ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")  # what check reads


def is_archive_name(path: Path | str) -> bool:
    """A name ``trainmark check`` unpacks as an archive (tar forms; ``package`` writes .tar.gz)."""
    return Path(path).name.lower().endswith(ARCHIVE_SUFFIXES)


def is_result_name(name: str) -> bool:
    """Loosely a result file (``result_*.txt``, MLPerf's too): what makes a folder a benchmark folder."""
    return name.startswith(RESULT_PREFIX) and name.endswith(RESULT_SUFFIX)


def trial_of(name: str) -> int | None:
    """The trial number a ``result_<k>.txt`` or ``trial_<k>`` name carries, else None."""
    m = RESULT_FILE.fullmatch(name) or TRIAL_DIR.fullmatch(name)
    return int(m[1]) if m else None
