#!/usr/bin/env bash
# The main job: install, run the calibrated mini benchmarks (the rules' trials each), check the submission
# folder, and write the reports (report.html to open in a browser, report.md, and the checker's table on
# screen with CSV and JSON copies beside it).
#
# Settings (environment):
#   BENCHMARKS="resnet-mini lstm-mini"  a subset (default: every calibrated mini; 'trainmark list' names them)
#   DEVICE=auto|cpu|cuda|cuda:1         passed as --device (default: auto, the accelerator the framework sees)
#   PRECISION=auto|fp32|amp             passed as --precision (default: auto: amp for a mini whose rules carry an
#                                       amp-bf16 calibration, where the device computes bf16 in its own units,
#                                       such as a CPU with AVX512-BF16 or AMX; fp32 otherwise; each run's banner
#                                       says which and why; docs/calibration.md)
#   DATA_DIR=DIR                        the data under DIR, one folder per dataset: DIR/fashion-mnist,
#                                       DIR/lstm-mini, DIR/transformer-mini, DIR/ds2-mini (passed as --data-dir)
#   TRAINMARK_FSDD=DIR                  ds2-mini's FSDD recordings (else ../shared/datasets/fsdd, else a clone)
#   INSTALL=0                           skip scripts/install.sh (already installed)
#   OUT=runs/mini-suite  SUBMITTER=NAME  RESUME=1 (continue an interrupted suite)  PYTHON (scripts/env.sh)
#   SYSTEM_NAME=NAME                    the system folder (default: derived from the hardware)
#   SEED=N                              base seed of every mini: trial k uses N + k - 1 (default: random, logged)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$TRAINMARK_ROOT"
JOB_START=$(date +%s)
hms() { printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }
COUNT=""   # the file counting the suite's finished trials (suite_lines)
PER_MINI=""  # "name h:mm:ss" of each mini's trainmark run so far (mini_done), printed at the end
mini_done() {  # mini_done NAME START_SECONDS: one mini's run time, for the suite's last lines
  PER_MINI="${PER_MINI:+$PER_MINI, }$1 $(hms $(( $(date +%s) - $2 )))"
}
finish() {
  local rc=$?
  [ -z "$COUNT" ] || rm -f "$COUNT"
  [ -z "$PER_MINI" ] || echo "mini suite: each mini's trainmark run (h:mm:ss): $PER_MINI" >&2
  local how="install included"; [ "${INSTALL:-1}" = 0 ] && how="no install"
  echo "mini suite: wall time $(hms $(( $(date +%s) - JOB_START ))) (h:mm:ss, $how), exit status $rc" >&2
}
trap finish EXIT

if [ "${INSTALL:-1}" != 0 ]; then bash scripts/install.sh; resolve_python; fi
require_python
OUT=${OUT:-runs/mini-suite}   # the submission goes to $OUT/submission, the reports beside it
SUBMITTER=${SUBMITTER:-$(hostname -s | tr -c 'A-Za-z0-9._\n-' '-')}
DEVICE=${DEVICE:-auto}
PRECISION=${PRECISION:-auto}
case "$PRECISION" in auto|fp32|amp) ;; *) echo "mini suite: PRECISION=$PRECISION: use auto, fp32 or amp" >&2; exit 2 ;; esac
run_args=()   # the settings every mini's trainmark run shares
[ -z "${SYSTEM_NAME:-}" ] || run_args+=(--system-name "$SYSTEM_NAME")
[ -z "${SEED:-}" ] || run_args+=(--seed "$SEED")

# The calibrated minis (their rules carry reference convergence points): "name trials dataset-folder weight"
# lines; the weight is the calibration's mean train seconds per trial (convergence.spread), which the ETA scales
CALIBRATED=$(py -c "
from pathlib import Path
from trainmark.rules import load_ruleset
for n, r in load_ruleset().items():
    if r.data.get('size') == 'mini' and r.convergence['points']:
        t = (r.convergence.get('spread') or {}).get('train_time_s') or [60]
        print(n, r.trials, Path(r.dataset['default_dir']).name, max(1, round(sum(t) / len(t))))")
ALL=$(echo "$CALIBRATED" | cut -d' ' -f1 | tr '\n' ' ')
BENCHES=${BENCHMARKS:-$ALL}
TOTAL=0; TOTAL_W=0   # trials, and their calibrated seconds
for bench in $BENCHES; do
  line=$(echo "$CALIBRATED" | awk -v b="$bench" '$1 == b')
  if [ -z "$line" ]; then
    echo "mini suite: BENCHMARKS: $bench is not a calibrated mini benchmark; choose from: $ALL" >&2
    exit 2
  fi
  read -r _ trials _ weight <<< "$line"
  TOTAL=$((TOTAL + trials)); TOTAL_W=$((TOTAL_W + trials * weight))
done
echo "mini suite: $BENCHES($TOTAL trials, device $DEVICE, into $OUT/submission)" >&2
# What to expect before the first trial ends: the calibrations' training time (fp32, on the 2-vCPU machine that
# each rules file's convergence.spread names); a slower CPU takes longer, a CPU with bf16 units less
echo "mini suite: about $(( (TOTAL_W + 30) / 60 )) min of training as the rules calibrated these trials (fp32, 2" \
  "vCPUs), evaluation and the check on top; after each trial the suite's ETA is this machine's" >&2
[ "$PRECISION" != auto ] || echo "mini suite: precision auto: amp (bf16 autocast) for a mini whose rules calibrate it" \
  "where this device computes bf16 in its own units, fp32 for the others (each run's banner says which and why)" >&2

# ds2-mini's recordings: $TRAINMARK_FSDD, else ../shared/datasets/fsdd, else a clone of FSDD's repository
FSDD=${TRAINMARK_FSDD:-../shared/datasets/fsdd}
FSDD_URL=https://github.com/Jakobovski/free-spoken-digit-dataset
COUNT=$(mktemp); echo 0 0 > "$COUNT"   # trials done, and their calibrated seconds
SUITE_START=$(date +%s)

# suite_lines W: passes a run's messages on, and after each finished trial ("trial k of N: ...") prints the
# suite's line with its ETA: the time so far, scaled by the calibrated seconds of the trials left against those
# of the trials done (W: this mini's per trial), so that a long mini run first does not inflate the rest.
# Ctrl-C leaves it reading until the run has printed its --resume line.
suite_lines() {
  trap '' INT
  local line n w elapsed
  while IFS= read -r line || [ -n "$line" ]; do
    printf '%s\n' "$line" >&2
    if [[ $line =~ ^trial\ [0-9]+\ of\ [0-9]+:\  ]]; then
      read -r n w < "$COUNT"; n=$((n + 1)); w=$((w + $1)); echo "$n $w" > "$COUNT"
      elapsed=$(( $(date +%s) - SUITE_START ))
      echo "mini suite: $n of $TOTAL trials done, $(hms $elapsed) running, ETA $(hms $(( elapsed * (TOTAL_W - w) / w )))" >&2
    fi
  done
}

runs_failed=""
for bench in $BENCHES; do
  read -r _ _ folder weight <<< "$(echo "$CALIBRATED" | awk -v b="$bench" '$1 == b')"
  data_args=()
  [ -z "${DATA_DIR:-}" ] || data_args=(--data-dir "$DATA_DIR/$folder")
  # minis built from a source (KJV, FSDD, sword modules) are prepared once, untimed, and verified
  if ! tm data verify "$bench" "${data_args[@]}" >/dev/null 2>&1; then
    if [ "$bench" = ds2-mini ]; then
      if [ ! -d "$FSDD" ]; then
        FSDD=data/fsdd-source
        [ -d "$FSDD" ] || git clone -q --depth 1 "$FSDD_URL" "$FSDD" \
          || { echo "mini suite: skipping ds2-mini: no FSDD (set TRAINMARK_FSDD or clone $FSDD_URL)" >&2; continue; }
      fi
      tm data prepare "$bench" --source "$FSDD" "${data_args[@]}"
    else
      tm data prepare "$bench" "${data_args[@]}"
    fi
  fi
  rc=0; mini_start=$(date +%s)
  { tm run "$bench" --out "$OUT/submission" --submitter "$SUBMITTER" --device "$DEVICE" \
      --precision "$PRECISION" "${data_args[@]}" \
      "${run_args[@]}" ${RESUME:+--resume} 2>&1 1>&3 | suite_lines "$weight"; } 3>&1 || rc=$?
  mini_done "$bench" "$mini_start"
  if [ "$rc" = 130 ]; then
    echo "mini suite: interrupted; continue with: RESUME=1 INSTALL=0 BENCHMARKS=\"$BENCHES\" bash scripts/mini_suite.sh" >&2
    exit 130
  fi
  [ "$rc" = 0 ] || runs_failed="$runs_failed $bench"
done
tm report "$OUT/submission" -o "$OUT/report.html"           # curves, times, energy, findings
tm report "$OUT/submission" --format md -o "$OUT/report.md"
rc=0   # the table on screen, machine-readable copies beside it; its exit status is the job's
tm check "$OUT/submission" --json "$OUT/report.json" --csv "$OUT/report.csv" || rc=$?
echo "reports: $OUT/report.html, $OUT/report.md, $OUT/report.csv and $OUT/report.json" >&2
if [ -n "$runs_failed" ] && [ "$rc" = 0 ]; then
  echo "mini suite: trainmark run failed for$runs_failed (its messages above)" >&2
  rc=1
fi
exit $rc
