#!/usr/bin/env bash
# Install trainmark into a virtual environment and the data the mini suite trains on (Debian/Ubuntu). Safe to
# run twice: an existing .venv is reused, and pip runs again only when pyproject.toml changed.
#
#   bash scripts/install.sh                          # makes .venv with python3, installs into it
#   PYTHON=/usr/bin/python3.12 bash scripts/install.sh   # another Python makes .venv
#   PYTHON=~/env/bin/python bash scripts/install.sh      # or installs into that environment (scripts/env.sh)
#   EXTRAS=test bash scripts/install.sh              # without TensorFlow (default: test,tensorflow)
#
# As root or with sudo it installs what is missing with apt-get: python3-venv (a Debian system Python cannot
# make a virtual environment without it), the dataset packages and Chromium for the report's browser test.
# Without either it says which packages to ask for and how to point trainmark at a copy of the data instead.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$TRAINMARK_ROOT"
EXTRAS=${EXTRAS:-test,tensorflow}

if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then SUDO="sudo";
else SUDO="none"; fi

# apt_install PACKAGE...: installs them as root or through sudo; false when neither is possible.
apt_install() {
  if [ "$SUDO" = none ] || ! command -v apt-get >/dev/null; then return 1; fi
  echo "install.sh: apt-get install $*" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}

make_venv() {
  local base=$TRAINMARK_BASE_PYTHON
  if ! command -v "$base" >/dev/null; then
    echo "install.sh: no $base: install Python >= 3.10 (Debian/Ubuntu: apt-get install python3 python3-venv)," \
         "or set PYTHON to an interpreter" >&2
    exit 1
  fi
  echo "install.sh: making the virtual environment $TRAINMARK_VENV with $base" >&2
  if "$base" -m venv "$TRAINMARK_VENV" 2>/dev/null; then return; fi
  rm -rf "$TRAINMARK_VENV"  # half made: no pip in it (Debian without python3-venv)
  local version packages="python3-venv"
  version=$("$base" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if command -v apt-cache >/dev/null && apt-cache show "python$version-venv" >/dev/null 2>&1; then
    packages="$packages python$version-venv"
  fi
  if ! apt_install $packages; then
    echo "install.sh: $base cannot make a virtual environment: ask an administrator for the packages" \
         "$packages (sudo apt-get install $packages), then run this script again" >&2
    exit 1
  fi
  "$base" -m venv "$TRAINMARK_VENV"
}

if [ -z "$PY" ]; then
  make_venv
  resolve_python
fi
if ! "$PY" -m pip --version >/dev/null 2>&1; then  # an interpreter without pip
  "$PY" -m ensurepip --upgrade >/dev/null 2>&1 || apt_install python3-pip || {
    echo "install.sh: $PY has no pip: install python3-pip (sudo apt-get install python3-pip)" >&2; exit 1; }
fi

# The data: Fashion-MNIST IDX files; the King James Bible (lstm-mini); KJV + WEB sword modules
# (transformer-mini); headless Chromium and its driver for the report's browser test (tests/test_report_browser.py)
DEB_PACKAGES="dataset-fashion-mnist bible-kjv diatheke sword-text-kjv sword-text-web chromium chromium-driver"
missing=""
if command -v dpkg >/dev/null; then
  for p in $DEB_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
fi
if [ -n "$missing" ] && ! apt_install $missing; then
  cat >&2 <<EOF
install.sh: not installed (no root, no sudo):$missing
  Ask for them (sudo apt-get install$missing), or point trainmark at copies of the data:
    trainmark run resnet-mini --data-dir DIR          # DIR holding Fashion-MNIST's four IDX files
    DATA_DIR=DIR bash scripts/mini_suite.sh           # DIR/fashion-mnist, DIR/lstm-mini, DIR/transformer-mini, DIR/ds2-mini
    TRAINMARK_FSDD=DIR bash scripts/mini_suite.sh     # ds2-mini's recordings (a clone of Jakobovski/free-spoken-digit-dataset)
  The tests that need these packages are skipped, not failed.
EOF
fi

stamp_value=$( { cat pyproject.toml; echo "$EXTRAS $TRAINMARK_ROOT $PY"; } | sha256sum | cut -d' ' -f1)
prefix=$("$PY" -c 'import sys; print(sys.prefix)')   # the environment pip installs into
stamp=$prefix/trainmark-install.stamp
if [ "$(cat "$stamp" 2>/dev/null)" = "$stamp_value" ] && py -c "import trainmark" 2>/dev/null; then
  echo "install.sh: trainmark already installed in $prefix (pyproject.toml unchanged; rm $stamp to reinstall)" >&2
else
  # Room first: a new environment takes about 8 GiB (8.1 GiB measured in .venv, 2026-12-07: torch's CUDA build
  # with its NVIDIA libraries about 5.3, TensorFlow 1.9), with pip's unpacking beside it; TensorFlow alone about 2
  # of it; an update of a few packages, far less.
  need_gib=1
  if ! py -c "import torch" 2>/dev/null; then need_gib=10
  elif [[ ",$EXTRAS," == *,tensorflow,* ]] && ! py -c "import tensorflow" 2>/dev/null; then need_gib=3; fi
  require_room "$prefix" "$need_gib" "pip install -e .[$EXTRAS]"
  echo "install.sh: pip install -e .[$EXTRAS] into $prefix (TensorFlow and torch: several minutes the first" \
       "time)" >&2
  "$PY" -m pip install -q -e ".[$EXTRAS]"  # TensorFlow: --framework tensorflow (docs/frameworks.md)
  echo "$stamp_value" > "$stamp" 2>/dev/null || true
fi

bin=$(dirname "$PY")
cat >&2 <<EOF
install.sh: done. Call trainmark as
  $bin/trainmark check submissions/          # or: source $bin/activate, then trainmark ...
  bash scripts/mini_suite.sh                 # the mini suite (scripts use this interpreter themselves)
EOF
