"""Folder and file names of a result folder (docs/result-format.md, "Layout").

``<out>/<division>/<submitter>/systems/<system>.json`` and
``<out>/<division>/<submitter>/results/<system>/<benchmark>/`` holding ``epochs.log``,
``result_<k>.txt`` and ``trial_<k>/`` per trial. The harness builds paths with the functions,
the checker recognises names with the patterns; both come from here.
"""
from __future__ import annotations

import re

DIVISIONS = ("closed", "open")
SYSTEMS_DIR = "systems"
RESULTS_DIR = "results"
BENCHMARKS_DIR = "benchmarks"          # beside results/: benchmarks/<benchmark>/implementations/<system>/
INTERRUPTED_DIR = "interrupted"        # an archived, unfinished trial (``--resume``)

EPOCHS_LOG = "epochs.log"
MODEL_FILE = "model.safetensors"
STRUCTURE_FILE = "structure.json"
TRIAL_JSON = "trial.json"              # written last: its presence marks a finished trial
TELEMETRY_FILE = "telemetry.csv"
TRIAL_FILES = (MODEL_FILE, STRUCTURE_FILE, TRIAL_JSON, TELEMETRY_FILE)

NAME = re.compile(r"[A-Za-z0-9._-]+")                          # a division, submitter, system or benchmark
RESULT_FILE = re.compile(r"result_(0|[1-9][0-9]{0,5})\.txt")   # group 1: the trial number
TRIAL_DIR = re.compile(r"trial_(0|[1-9][0-9]{0,5})")


def result_file(k: int) -> str:
    """The MLLOG file of trial ``k`` (counted from 1)."""
    return f"result_{k}.txt"


def trial_dir(k: int) -> str:
    """The folder of trial ``k``'s weights, structure, summary and telemetry."""
    return f"trial_{k}"


def system_file(system: str) -> str:
    return f"{system}.json"


def trial_of(name: str) -> int | None:
    """The trial number a ``result_<k>.txt`` or ``trial_<k>`` name carries, else None."""
    m = RESULT_FILE.fullmatch(name) or TRIAL_DIR.fullmatch(name)
    return int(m[1]) if m else None
