# Sourced by every script (install.sh, test.sh, mini_suite.sh, .ci/run): which Python runs trainmark.
#
# The interpreter, in this order: $PYTHON, else the active virtual environment ($VIRTUAL_ENV), else the
# project's .venv. An interpreter that pip may not install into (a system Python marked EXTERNALLY-MANAGED,
# PEP 668: Debian 12, Ubuntu 23.04+, Homebrew) is not used directly: it only makes .venv (install.sh).
# Every call runs with -P (Python 3.11+): the current folder is never on the import path, so the checkout's
# own folders (harness/, rules/, checker/ ...) are never imported by accident instead of the installed package.
#
# After sourcing: TRAINMARK_ROOT (the checkout), PY (the interpreter; empty until install.sh made .venv),
# TRAINMARK_BASE_PYTHON (what makes .venv), and the functions py (python -P) and tm (python -P -m trainmark).

TRAINMARK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TRAINMARK_VENV="$TRAINMARK_ROOT/.venv"

# usable_python EXE: true when pip may install into EXE (a virtual environment, or a Python not marked
# externally managed), false for a PEP 668 system Python or an executable that is not there.
usable_python() {
  "$1" -c 'import os, sys, sysconfig
in_venv = sys.prefix != sys.base_prefix
managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
sys.exit(0 if in_venv or not managed else 1)' 2>/dev/null
}

# resolve_python: sets PY and TRAINMARK_BASE_PYTHON from $PYTHON, $VIRTUAL_ENV and .venv.
resolve_python() {
  local wanted=${PYTHON:-}
  if [ -z "$wanted" ] && [ -n "${VIRTUAL_ENV:-}" ]; then wanted="$VIRTUAL_ENV/bin/python"; fi
  PY=""
  TRAINMARK_BASE_PYTHON=${wanted:-python3}
  if [ -n "$wanted" ] && usable_python "$wanted"; then
    PY=$wanted
  elif [ -x "$TRAINMARK_VENV/bin/python" ]; then
    PY="$TRAINMARK_VENV/bin/python"
  fi
  PY_FLAGS=""
  if [ -n "$PY" ] && "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    PY_FLAGS="-P"
  fi
}

py() { "$PY" $PY_FLAGS "$@"; }
tm() { "$PY" $PY_FLAGS -m trainmark "$@"; }

# require_python: stop with what to do when no interpreter has trainmark yet.
require_python() {
  if [ -z "$PY" ]; then
    echo "${0##*/}: no Python with trainmark: run 'bash scripts/install.sh' first (it makes .venv)," \
         "or set PYTHON to an interpreter that has it" >&2
    exit 2
  fi
}

# require_room DIR GIB WHAT: stop, naming DIR, when its file system has less than GIB GiB free. pip that runs out
# of disk stops half way ("[Errno 28] No space left on device") and leaves a half-installed environment behind.
# A df that cannot answer (no df, an odd file system) is said and passed over: the check only helps.
require_room() {
  local dir=$1 need_gib=$2 what=$3 free_kib
  free_kib=$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 {print $4}')
  case $free_kib in
    ''|*[!0-9]*) echo "${0##*/}: cannot read the free space of $dir with df; going on without the check" >&2; return 0;;
  esac
  if [ "$free_kib" -lt $(( need_gib * 1024 * 1024 )) ]; then
    echo "${0##*/}: $what needs about $need_gib GiB free in $dir; its file system has $(( free_kib / 1024 )) MiB" \
         "free. Make room (old virtual environments or clones, ~/.cache/pip, ${TMPDIR:-/tmp}/pytest-of-$(id -un))" \
         "and run this again" >&2
    exit 1
  fi
}

resolve_python
