#!/usr/bin/env bash
# Install trainmark and the data the mini suite trains on (Debian/Ubuntu). Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
# Fashion-MNIST IDX files; the King James Bible (lstm-mini); KJV + WEB sword modules (transformer-mini);
# headless Chromium and its driver for the report's browser test (tests/test_report_browser.py)
DEB_PACKAGES="dataset-fashion-mnist bible-kjv diatheke sword-text-kjv sword-text-web chromium chromium-driver"
missing=""
for p in $DEB_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else SUDO="none"; fi
  if [ "$SUDO" = none ] || ! command -v apt-get >/dev/null; then
    echo "install.sh: please install the Debian packages:$missing (or pass --data-dir to trainmark run)" >&2
  else
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
  fi
fi
"$PY" -m pip install -q -e ".[test,tensorflow]"  # TensorFlow: --framework tensorflow (docs/frameworks.md)
