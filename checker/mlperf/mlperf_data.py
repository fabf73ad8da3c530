"""The rules mlperf-logging ships, read as data: never by running its checkers.

MLPerf's package checker keeps some of its rules as literals inside functions (the system
description's required fields, the availability values, the runs per benchmark its RCP
statistics assume). They are read here from the installed module's source with ``ast``
(``ast.literal_eval`` of the one assignment that names them), so a new mlperf-logging brings
its new fields without a copy in our code going stale; the reference convergence points are
its ``rcp_checker/training_<ruleset>/rcps_<benchmark>.json``, read as JSON.
"""
from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

from mlperf_logging import benchmark_meta

PACKAGE_DIR = Path(benchmark_meta.__file__).resolve().parent
SYSTEM_DESC_SOURCE = PACKAGE_DIR / "system_desc_checker" / "system_desc_checker.py"
RCP_SOURCE = PACKAGE_DIR / "rcp_checker" / "rcp_checker.py"
_PLAIN_NAME = re.compile(r"[a-z0-9_.]{1,64}")


class MissingData(Exception):
    """mlperf-logging's source no longer holds a literal we read (a new version changed its shape)."""


@functools.lru_cache(maxsize=None)
def _literal(source: Path, name: str):
    """The value of the first ``name = <literal>`` in ``source`` (at any depth), evaluated as a literal."""
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise MissingData(f"{source} has no literal assignment to {name!r}")


def system_required_fields() -> list[str]:
    """The fields every system description must hold (system_desc_checker's ``required_fields``)."""
    return list(_literal(SYSTEM_DESC_SOURCE, "required_fields"))


def system_status_values() -> list[str]:
    """The values ``status`` may take from Training v4.0 on (system_desc_checker's ``availability_options``)."""
    return list(_literal(SYSTEM_DESC_SOURCE, "availability_options"))


def rcp_submission_runs(benchmark: str) -> int | None:
    """The runs a submission has in the RCP checker's statistics (its ``submission_runs['training']``)."""
    return _literal(RCP_SOURCE, "submission_runs")["training"].get(benchmark)


def required_result_files(benchmark: str) -> int | None:
    """The number of result files the package checker requires (benchmark_meta, plain data)."""
    return benchmark_meta.get_result_file_counts("training").get(benchmark)


@functools.lru_cache(maxsize=None)
def rcp_file_records(ruleset: str, benchmark: str) -> dict | None:
    """The reference convergence points of ``benchmark`` under ``ruleset`` as shipped, or None when none are."""
    if not (_PLAIN_NAME.fullmatch(ruleset) and _PLAIN_NAME.fullmatch(benchmark)):  # names, never paths
        return None
    path = PACKAGE_DIR / "rcp_checker" / f"training_{ruleset}" / f"rcps_{benchmark}.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
