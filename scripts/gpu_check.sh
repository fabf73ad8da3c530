#!/usr/bin/env bash
# What only a GPU can show, in one prepared run on a lent GPU machine:
#   OUT=/some/folder bash scripts/gpu_check.sh            (about 9.5 minutes on one H200)
#   QUICK=1 OUT=/some/folder bash scripts/gpu_check.sh    (about 2.5 minutes: steps marked [quick])
# then record the results in docs/gpu.md with the date and the device. Every step writes under $OUT and
# goes on after a failure.
#   1. `trainmark ops` on CUDA: matmul/conv/memory ceilings per dtype against the datasheet peak (issue 6)
#   2. a short `trainmark sweep` of resnet-mini: throughput, TFLOPS, J/sample, OOM search (issue 6)
#   3. benchmarks/reference_step.py with AMP and channels-last: our step beside a plain one (issue 5)
#   4. [quick] two resnet-mini trials with --device auto (issue 41: the accelerator found through
#      torch.accelerator, named in the banner) and AMP: NVML energy in a real run, `trainmark check` on it
#   5. energy by domain and telemetry (issue 15): fakes, the real meters under load, sampler overhead
#   6. [quick] `trainmark profile` of resnet-mini on CUDA (issue 37): the kernels each operator launched,
#      device against host time, the roofline (profile.json and profile.html)
#   7. [quick] the device seam's tests on a machine that has the accelerator (issue 41)
# Data: Fashion-MNIST from $DATA_DIR (default .gpudata/fashion-mnist, carried: the machine fetches nothing).
# Python packages the image lacks travel as wheels in .whl/ (docs/devices.md, the device library's notes).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to a folder for the results}
DATA_DIR=${DATA_DIR:-.gpudata/fashion-mnist}
QUICK=${QUICK:-0}
mkdir -p "$OUT"
step() { echo "== $*" | tee -a "$OUT/steps.log"; "$@" >>"$OUT/steps.log" 2>&1; echo "rc=$?" | tee -a "$OUT/steps.log"; }
full() { [ "$QUICK" = 1 ] || step "$@"; }

nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv > "$OUT/nvidia-smi.csv" 2>&1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl >>"$OUT/steps.log" 2>&1
  export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation -e . >>"$OUT/steps.log" 2>&1  # the image's setuptools
python3 -c "import torch, torchvision, trainmark; print(torch.__version__, torchvision.__version__, torch.version.cuda)" \
  > "$OUT/versions.txt" 2>&1

full timeout 150 python3 -P -m trainmark ops --device cuda --json "$OUT/ops.json"
full timeout 150 python3 -P -m trainmark sweep resnet-mini --device cuda --batch-sizes 256,1024,4096 \
  --oom-search --max-batch 65536 --ceilings "$OUT/ops.json" --out "$OUT/sweep"
full timeout 120 python3 -P benchmarks/reference_step.py --device cuda --amp --channels-last --batch 64 \
  --inception-batch 32 --steps 10 --repeats 4
step timeout 120 python3 -P -m trainmark run resnet-mini --device auto --precision amp --trials 2 --seed 3000 \
  --data-dir "$DATA_DIR" --out "$OUT/submission" --submitter trainmark
step timeout 60 python3 -P -m trainmark check "$OUT/submission" --json "$OUT/check.json"
step timeout 120 python3 -P -m trainmark profile resnet-mini --device auto --steps 5 --json "$OUT/profile.json"
step timeout 90 python3 -P -m pytest -q -p no:cacheprovider tests/test_devices.py
# Issue 15, energy by domain and telemetry (about 1.5 minutes): the meters and the sampler on fakes, then on
# this machine's own GPUs/RAPL/BMC under a known load, the sampler's cost at 10 Hz.
full timeout 120 python3 -P -m pytest -q -p no:cacheprovider tests/test_energy.py tests/test_energy_domains.py \
  tests/test_telemetry.py
full timeout 60 python3 -P scripts/energy_probe.py --seconds 10 --out "$OUT/energy" --md "$OUT/gpu-energy.md"
full timeout 120 python3 -P benchmarks/telemetry_overhead.py --device cuda --batch 256 --steps 60 --repeats 3 --hz 10
# What the trials measured: energy by domain and time, for docs/gpu.md
python3 - "$OUT/submission" > "$OUT/trials.txt" 2>>"$OUT/steps.log" <<'PY'
import json, pathlib, sys
for t in sorted(pathlib.Path(sys.argv[1]).glob("*/*/results/*/*/trial_*/trial.json")):
    r = json.loads(t.read_text())
    keep = ("status", "epochs", "train_time_s", "total_time_s", "train_energy_j", "total_energy_j", "energy_method",
            "energy_scope", "precision", "achieved_tflops", "utilization", "data_wait_share")
    print(t.parent.name, json.dumps({k: r.get(k) for k in keep}))
PY
