#!/usr/bin/env bash
# The test command (README, .ci/run): install what the tests need, then run them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
"${PYTHON:-python3}" -m ruff check .          # lint first: settings in pyproject.toml
"${PYTHON:-python3}" scripts/lint_imports.py  # the layers' import contracts (pyproject.toml, docs/architecture.md)
exec "${PYTHON:-python3}" -m pytest -q "$@"
