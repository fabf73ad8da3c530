"""How much a re-evaluation of the same weights can move a Fashion-MNIST mini's top-1: the evidence for the rules'
``reevaluation.tolerance`` (REEVAL-001).

For each committed PyTorch example trial of resnet-mini, vgg-mini and inception-mini: the fp32 top-1 of its weights;
the images whose true class is one of two nearly tied highest logits (margin under 1e-5, 1e-4, 1e-3, 1e-2), the only
ones a device's other rounding can move the metric with (float32 rounding between CPUs is about 1e-5 of a logit, TF32
or bf16 about 1e-2); and the top-1 under bf16 autocast, a far larger perturbation than any fp32 device change.

    python -P benchmarks/reevaluation_noise.py [SYSTEM ...] [--trials 5]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors

from trainmark.harness.measure.system import cpu_model
from trainmark.harness.reevaluate import Reevaluation
from trainmark.rules import get_rules

RESULTS = Path(__file__).resolve().parent.parent / "submissions" / "closed" / "trainmark" / "results"
MARGINS = (1e-5, 1e-4, 1e-3, 1e-2)


def noise(trainer, weights: bytes) -> tuple[float, float, list[int]]:
    """(fp32 top-1, bf16-autocast top-1, true-label near-ties under each of MARGINS)."""
    model, data, ref = trainer.model, trainer.data, trainer.ref
    model.load_state_dict(load_safetensors(weights), strict=True)
    model.eval()
    margins, right32, right16 = [], 0, 0
    with torch.inference_mode():
        for s in range(0, len(data.eval_labels), 1000):
            x, y = ref.to_device((data.eval_images[s:s + 1000], data.eval_labels[s:s + 1000]), trainer.device,
                                 train=False)
            logits = model(x).float()
            top2 = logits.topk(2, dim=1)
            involved = (top2.indices == y[:, None]).any(1)
            margins.append((top2.values[:, 0] - top2.values[:, 1])[involved])
            right32 += int((logits.argmax(1) == y).sum())
            with torch.autocast("cpu", dtype=torch.bfloat16):
                right16 += int((model(x).argmax(1) == y).sum())
    found = torch.cat(margins)
    n = len(data.eval_labels)
    return right32 / n, right16 / n, [int((found < m).sum()) for m in MARGINS]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("systems", nargs="*", default=["2xcpu-epyc-zen5"])
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    print(f"{cpu_model()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    session = Reevaluation()
    for bench in ("resnet-mini", "vgg-mini", "inception-mini"):
        trainer = session.evaluator(get_rules(bench), "pytorch", "fp32").trainer
        for system in args.systems:
            for k in range(1, args.trials + 1):
                start = time.perf_counter()
                fp32, bf16, ties = noise(trainer, (RESULTS / system / bench / f"trial_{k}" / "model.safetensors")
                                         .read_bytes())
                print(f"{bench} {system} trial {k}: fp32 {fp32:.4f}, bf16 autocast {bf16:.4f} "
                      f"({round(abs(bf16 - fp32) * 10000)} images); true-label near-ties under "
                      f"{'/'.join(f'{m:g}' for m in MARGINS)}: {ties}; {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
