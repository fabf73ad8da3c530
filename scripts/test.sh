#!/usr/bin/env bash
# The test command (README, .ci/run): install what the tests need (scripts/install.sh: .venv), then run them.
# INSTALL=0 skips the install; arguments go to pytest (bash scripts/test.sh tests/test_run_output.py -x).
# Two test processes (pytest-xdist; an idle one takes tests from the other's queue) with the cores split between
# them (torch's and TensorFlow's thread pools): the tests' small models gain little from a second thread, so two
# processes of one thread finish sooner than one of two (docs/performance.md, "The test suite").
# TEST_WORKERS=N for another count, TEST_WORKERS=0 for one process with every core.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$TRAINMARK_ROOT"
if [ "${INSTALL:-1}" != 0 ]; then bash scripts/install.sh; resolve_python; fi
require_python
py -m ruff check .          # lint first: settings in pyproject.toml
py scripts/lint_imports.py  # the layers' import contracts (pyproject.toml, docs/architecture.md)
workers=${TEST_WORKERS:-2}
case $workers in ''|*[!0-9]*) echo "scripts/test.sh: TEST_WORKERS must be a whole number, not '$workers'" >&2; exit 2;; esac
if [ "$workers" -gt 1 ]; then
  threads=$(( $(nproc) / workers )); [ "$threads" -ge 1 ] || threads=1
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$threads} TF_NUM_INTRAOP_THREADS=${TF_NUM_INTRAOP_THREADS:-$threads}
fi
py -m pytest -q -n "$workers" --dist worksteal "$@"
