"""The JSON Schemas of the result's JSON files: ``systems/<system>.json`` and ``trial_<k>/trial.json``.

Shipped as package data in ``trainmark/format/schema/``; the harness validates what it writes
against them and the checker what it reads (never a schema that came with a submission).
"""
from __future__ import annotations

import json
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
SYSTEM = "system.schema.json"
TRIAL = "trial.schema.json"


def path(name: str) -> Path:
    return SCHEMA_DIR / name


def load(name: str) -> dict:
    return json.loads(path(name).read_text(encoding="utf-8"))
