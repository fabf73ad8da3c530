#!/usr/bin/env bash
# What only a GPU can show, in one short run (about 9.5 minutes on one H200): run it on a lent GPU
# machine as `OUT=/some/folder bash scripts/gpu_check.sh`, then record the results in docs/gpu.md
# with the date and the device. Every step writes under $OUT and goes on after a failure.
#   1. `trainmark ops` on CUDA: matmul/conv/memory ceilings per dtype against the datasheet peak (issue 6)
#   2. a short `trainmark sweep` of resnet-mini: throughput, TFLOPS, J/sample, OOM search (issue 6)
#   3. benchmarks/reference_step.py with AMP and channels-last: our step beside a plain one (issue 5)
#   4. one resnet-mini trial on CUDA with AMP: NVML energy in a real run, and `trainmark check` on it
#   5. energy by domain and telemetry (issue 15): fakes, the real meters under load, sampler overhead
#   6. `trainmark profile` of resnet-mini on CUDA (issue 37): the kernels each operator launched, device
#      against host time, the roofline against step 1's ceilings (profile.json and profile.html)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT"
step() { echo "== $*" | tee -a "$OUT/steps.log"; "$@" >>"$OUT/steps.log" 2>&1; echo "rc=$?" | tee -a "$OUT/steps.log"; }

nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv > "$OUT/nvidia-smi.csv" 2>&1
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.version.cuda)" > "$OUT/versions.txt" 2>&1
# The GPU machine reaches no package index: install from a wheelhouse carried beside the tree
# (`pip download -d wheels mlperf-logging==4.1.68 nvidia-ml-py safetensors jsonschema rich sacrebleu
# sentencepiece soundfile` here, then carry `wheels/`), and trainmark itself without build isolation.
[ -d wheels ] && pip install -q --no-index --find-links wheels mlperf-logging nvidia-ml-py safetensors jsonschema \
  rich sacrebleu sentencepiece soundfile >>"$OUT/steps.log" 2>&1
pip install -q --no-deps --no-build-isolation -e . >>"$OUT/steps.log" 2>&1
step timeout 150 python3 -P -m trainmark ops --device cuda --json "$OUT/ops.json"
step timeout 150 python3 -P -m trainmark sweep resnet-mini --device cuda --batch-sizes 256,1024,4096 \
  --oom-search --max-batch 65536 --ceilings "$OUT/ops.json" --out "$OUT/sweep"
step timeout 120 python3 benchmarks/reference_step.py --device cuda --amp --channels-last --batch 64 \
  --inception-batch 32 --steps 10 --repeats 4
step timeout 120 python3 -P -m trainmark run resnet-mini --device cuda --precision amp --trials 1 --seed 3000 \
  --ceilings "$OUT/ops.json" --out "$OUT/submission" --submitter trainmark --quiet
step timeout 60 python3 -P -m trainmark check "$OUT/submission" --json
# Issue 37: the step's operators on CUDA with the kernel names the profiler reports (cuDNN, cutlass, ...)
step timeout 120 python3 -P -m trainmark profile resnet-mini --device cuda --steps 5 --ceilings "$OUT/ops.json" \
  --out "$OUT/profile"
# Issue 15, energy by domain and telemetry (about 1.5 minutes): the meters and the sampler on fakes, then on
# this machine's own GPUs/RAPL/BMC under a known load, the sampler's cost at 10 Hz, and the trial of step 4's
# energy_domains and telemetry (its `trainmark check` above already ran the ENERGY-/TELEMETRY- rules).
# Evidence: docs/gpu-energy.md (written by the probe; commit it with the date and the device).
step timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_energy.py tests/test_energy_domains.py tests/test_telemetry.py
step timeout 60 python3 scripts/energy_probe.py --seconds 10 --out "$OUT/energy" --md docs/gpu-energy.md
step timeout 120 python3 benchmarks/telemetry_overhead.py --device cuda --batch 256 --steps 60 --repeats 3 --hz 10
python3 - "$OUT/submission" >>docs/gpu-energy.md 2>>"$OUT/steps.log" <<'PY'
import json, pathlib, sys
for t in sorted(pathlib.Path(sys.argv[1]).glob("*/*/results/*/*/trial_*/trial.json")):
    r = json.loads(t.read_text())
    print(f"\n## {t.parent.parent.name} {t.parent.name}: energy_scope `{r.get('energy_scope')}`, train {r.get('train_energy_j')} J\n")
    print("```json\n" + json.dumps({"energy_domains": r.get("energy_domains"), "telemetry": r.get("telemetry"),
                                    "epoch_1_telemetry": (r.get("history") or [{}])[0].get("telemetry")}, indent=1) + "\n```")
PY
{ echo; echo "Sampler overhead (benchmarks/telemetry_overhead.py --device cuda, 10 Hz):"; echo;
  grep -E "^(resnet-mini on|sampler at|median steps|sampler CPU)" "$OUT/steps.log" | sed 's/^/    /'; } >>docs/gpu-energy.md
cp docs/gpu-energy.md "$OUT/" 2>/dev/null
