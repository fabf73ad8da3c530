#!/usr/bin/env bash
# The test command (README, .ci/run): install what the tests need (scripts/install.sh: .venv), then run them.
# INSTALL=0 skips the install; arguments go to pytest (bash scripts/test.sh tests/test_run_output.py -x).
# Two test processes (pytest-xdist), each taking whole files so that a module's fixtures are built once: the
# trainings use both cores, the rest (subprocesses, imports, the checker) mostly one. TEST_WORKERS=N for another
# count, TEST_WORKERS=0 for one process.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$TRAINMARK_ROOT"
if [ "${INSTALL:-1}" != 0 ]; then bash scripts/install.sh; resolve_python; fi
require_python
py -m ruff check .          # lint first: settings in pyproject.toml
py scripts/lint_imports.py  # the layers' import contracts (pyproject.toml, docs/architecture.md)
py -m pytest -q -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
