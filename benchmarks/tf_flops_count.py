"""The TensorFlow trainer's FLOP count of a recurrent twin: traced unrolled at full length against the
extrapolation from two short cuts, side by side (seconds and the counts, which must be equal).

    python benchmarks/tf_flops_count.py [--models ds2-mini ds2] [--seconds 1.0] [--batch 2|rules] [--skip-direct]

"direct" traces the unrolled twin's whole step on the reference's synthetic batch (what every TensorFlow
trial of ds2 and ds2-mini did before 2026-12-06: at ds2's 12 s utterances more than 10 minutes and 14 GB);
"extrapolated" is ``TensorFlowTrainer._traced_flops``: the step is affine in the utterance's length on the
twin's lattice, so it is traced on cuts of 2 and 4 units and extended exactly. ``--seconds`` sets the
synthetic length (default: the reference's own, 2.4 s for ds2-mini; give ds2 something shorter than its
12 s, or the direct side takes that long, or pass ``--skip-direct``). ``--batch rules`` counts at each benchmark's
rules-default global batch (what a trial counts). Each side runs once, in its own fresh trainer (its
construction not timed), in one process. Any twin can be named: one without recurrent layers is traced
whole either way.
"""
from __future__ import annotations

import argparse
import platform
import time

import torch

from trainmark.harness.frameworks import tensorflow_backend as tfb
from trainmark.reference import registry
from trainmark.rules import get_rules


def fresh_trainer(ref, hp: dict) -> tfb.TensorFlowTrainer:
    """A trainer with the twin built and nothing counted yet (its construction is not timed)."""
    return tfb.TensorFlowBackend(torch.device("cpu"), "fp32").trainer(ref, None, hp, None, 1, count_flops=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["ds2-mini"])
    ap.add_argument("--seconds", type=float, default=None, help="synthetic utterance length (default: the reference's)")
    ap.add_argument("--batch", default="2", help="global batch size, or 'rules' for each benchmark's default")
    ap.add_argument("--skip-direct", action="store_true", help="time only the trainer's own count")
    args = ap.parse_args()
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"tensorflow {tfb.tf.__version__}, {torch.get_num_threads()} threads")
    failed = False
    for name in args.models:
        rules = get_rules(name)
        ref = registry.for_rules(rules)
        if args.seconds is not None:
            ref.synthetic_seconds = args.seconds
        size = rules.defaults()["global_batch_size"] if args.batch == "rules" else int(args.batch)
        hp = {**rules.defaults(), "global_batch_size": size}
        batch = ref.synthetic_batch(size)
        seconds = getattr(ref, "synthetic_seconds", None)
        where = f"{name} at batch {size}" + (f", {seconds} s" if seconds else "")
        trainer = fresh_trainer(ref, hp)  # its own unrolled twin, built inside the timed count
        start = time.perf_counter()
        ours = trainer._traced_flops(batch)  # noqa: SLF001 - the count the trainer makes
        ours_s = time.perf_counter() - start
        if args.skip_direct:
            print(f"{where}: the trainer's count {ours:,} FLOPs in {ours_s:.1f} s")
            continue
        trainer = fresh_trainer(ref, hp)
        start = time.perf_counter()
        example = trainer.prepare(batch)
        twin = trainer.twin.unrolled(example) if hasattr(trainer.twin, "unrolled") else trainer.twin
        direct = tfb.step_flops(tfb.training_step(twin), example)
        direct_s = time.perf_counter() - start
        same = direct == ours
        failed |= not same
        print(f"{where}: traced whole {direct:,} FLOPs in {direct_s:.1f} s; the trainer's count {ours:,} in "
              f"{ours_s:.1f} s ({direct_s / ours_s:.1f}x faster), {'equal' if same else 'NOT EQUAL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
