#!/usr/bin/env bash
# What only a GPU can show, in one short run (about 8 minutes on one H200): run it on a lent GPU
# machine as `OUT=/some/folder bash scripts/gpu_check.sh`, then record the results in docs/gpu.md
# with the date and the device. Every step writes under $OUT and goes on after a failure.
#   1. `trainmark ops` on CUDA: matmul/conv/memory ceilings per dtype against the datasheet peak (issue 6)
#   2. a short `trainmark sweep` of resnet-mini: throughput, TFLOPS, J/sample, OOM search (issue 6)
#   3. benchmarks/reference_step.py with AMP and channels-last: our step beside a plain one (issue 5)
#   4. one resnet-mini trial on CUDA with AMP: NVML energy in a real run, and `trainmark check` on it
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
step timeout 150 python3 -m trainmark ops --device cuda --json "$OUT/ops.json"
step timeout 150 python3 -m trainmark sweep resnet-mini --device cuda --batch-sizes 256,1024,4096 \
  --oom-search --max-batch 65536 --ceilings "$OUT/ops.json" --out "$OUT/sweep"
step timeout 120 python3 benchmarks/reference_step.py --device cuda --amp --channels-last --batch 64 \
  --inception-batch 32 --steps 10 --repeats 4
step timeout 120 python3 -m trainmark run resnet-mini --device cuda --precision amp --trials 1 --seed 3000 \
  --ceilings "$OUT/ops.json" --out "$OUT/submission" --submitter trainmark --quiet
step timeout 60 python3 -m trainmark check "$OUT/submission" --json
