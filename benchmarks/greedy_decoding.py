"""transformer-mini's evaluation: greedy decoding through the whole prefix against the cached one (issue 40).

Rules 1.2 at first ran the decoder over the whole prefix at every decoding step and projected its last position
(``Seq2SeqTransformer.next_logits`` without ``seen``); it now computes the last position alone from what each
layer's self-attention read of the earlier positions (``next_logits`` with ``seen``, kept by ``greedy``). Both
run the reference's own ``evaluate`` (all 385 validation pairs, sacreBLEU) in one process, alternating, so drift
on the machine hits them alike. The BLEU must be equal; the seconds are the saving.

    python benchmarks/greedy_decoding.py \
        submissions/closed/trainmark/results/2xcpu-epyc-zen5/transformer-mini/trial_1/model.safetensors

Prints the CPU, each evaluation's BLEU and seconds, and the ratio of the medians.
"""
from __future__ import annotations

import argparse
import statistics
import time

from trainmark.harness.measure.system import cpu_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("weights", help="a transformer-mini trial's model.safetensors")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from safetensors.torch import load_file

    from trainmark.reference.transformer import TransformerMini
    from trainmark.reference.transformer_model import Seq2SeqTransformer

    torch.set_num_threads(args.threads)
    ref = TransformerMini()
    data = ref.load_data(None)
    model = ref.build_model()
    model.load_state_dict(load_file(args.weights))
    model.eval()
    cached = Seq2SeqTransformer.next_logits

    def whole_prefix(self, tgt_in, memory, src_pad, seen=None):  # the decoder over the whole prefix, every step
        return cached(self, tgt_in, memory, src_pad)

    print(f"{cpu_model()}, torch {torch.__version__}, {args.threads} threads")
    seconds: dict[str, list[float]] = {"whole prefix": [], "cached": []}
    for _ in range(args.rounds):
        for how, step in (("whole prefix", whole_prefix), ("cached", cached)):
            Seq2SeqTransformer.next_logits = step
            start = time.perf_counter()
            stats = ref.evaluate(model, data, "cpu")
            seconds[how].append(time.perf_counter() - start)
            print(f"{how} decoding: BLEU {ref.finalize_metric(*stats):.4f}, {seconds[how][-1]:.2f} s")
    Seq2SeqTransformer.next_logits = cached
    old, new = (statistics.median(seconds[v]) for v in ("whole prefix", "cached"))
    print(f"median seconds per evaluation: whole prefix {old:.2f}, cached {new:.2f}: cached takes {new / old:.2f}x")


if __name__ == "__main__":
    main()
