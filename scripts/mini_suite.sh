#!/usr/bin/env bash
# The main job: install, run every mini benchmark (5 trials each, as the rules say),
# check the submission folder, and write the reports (report.html to open in a browser, report.md,
# and the checker's table on screen with CSV and JSON copies beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
OUT=${OUT:-runs/mini-suite}   # the submission goes to $OUT/submission, the reports beside it
SUBMITTER=${SUBMITTER:-$(hostname -s | tr -c 'A-Za-z0-9._\n-' '-')}
# The calibrated mini benchmarks: those whose rules carry reference convergence points
# (a provisional target is not yet a benchmark; `trainmark rules list` shows them all).
BENCHES=$(python3 -c "from trainmark.rules import load_ruleset; print(' '.join(n for n, r in load_ruleset().items() if r.data.get('size') == 'mini' and r.convergence['points']))")
echo "mini suite: $BENCHES"
# ds2-mini's recordings: $TRAINMARK_FSDD, else ../shared/datasets/fsdd, else a clone of FSDD's repository
FSDD=${TRAINMARK_FSDD:-../shared/datasets/fsdd}
FSDD_URL=https://github.com/Jakobovski/free-spoken-digit-dataset
for bench in $BENCHES; do
  # minis built from a source (KJV, FSDD, sword modules) are prepared once, untimed, and verified
  if ! python3 -m trainmark data verify "$bench" >/dev/null 2>&1; then
    if [ "$bench" = ds2-mini ]; then
      if [ ! -d "$FSDD" ]; then
        FSDD=data/fsdd-source
        [ -d "$FSDD" ] || git clone -q --depth 1 "$FSDD_URL" "$FSDD" \
          || { echo "mini suite: skipping ds2-mini: no FSDD (set TRAINMARK_FSDD or clone $FSDD_URL)" >&2; continue; }
      fi
      python3 -m trainmark data prepare "$bench" --source "$FSDD"
    else
      python3 -m trainmark data prepare "$bench"
    fi
  fi
  python3 -m trainmark run "$bench" --out "$OUT/submission" --submitter "$SUBMITTER" ${RESUME:+--resume}
done
python3 -m trainmark report "$OUT/submission" -o "$OUT/report.html"           # curves, times, energy, findings
python3 -m trainmark report "$OUT/submission" --format md -o "$OUT/report.md"
python3 -m trainmark check "$OUT/submission" --json > "$OUT/report.json" || true   # machine-readable copy
echo "reports: $OUT/report.html, $OUT/report.md, $OUT/report.csv and $OUT/report.json"
python3 -m trainmark check "$OUT/submission" --csv "$OUT/report.csv"   # the table; its exit status is the job's
