"""transformer-mini's evaluation: rules 1.1's greedy decoding against 1.2's, on the same weights (issue 40).

Rules 1.1 projected every position of the prefix onto the vocabulary at each decoding step and kept the last;
rules 1.2 projects the last position alone (``Seq2SeqTransformer.next_logits``). Both run the reference's own
``evaluate`` (all 385 validation pairs, sacreBLEU) in one process, alternating, so drift on the machine hits them
alike. The BLEU must be equal; the seconds are the saving.

    python benchmarks/greedy_decoding.py \
        submissions/closed/trainmark/results/2xcpu-epyc-zen4/transformer-mini/trial_1/model.safetensors

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
    last_only = Seq2SeqTransformer.next_logits

    def every_position(self, tgt_in, memory, src_pad):  # rules 1.1: the whole prefix projected, the last kept
        return self.decode(tgt_in, memory, src_pad)[:, -1]

    print(f"{cpu_model()}, torch {torch.__version__}, {args.threads} threads")
    seconds: dict[str, list[float]] = {"1.1": [], "1.2": []}
    for _ in range(args.rounds):
        for version, step in (("1.1", every_position), ("1.2", last_only)):
            Seq2SeqTransformer.next_logits = step
            start = time.perf_counter()
            stats = ref.evaluate(model, data, "cpu")
            seconds[version].append(time.perf_counter() - start)
            print(f"rules {version} decoding: BLEU {ref.finalize_metric(*stats):.4f}, {seconds[version][-1]:.2f} s")
    Seq2SeqTransformer.next_logits = last_only
    old, new = (statistics.median(seconds[v]) for v in ("1.1", "1.2"))
    print(f"median seconds per evaluation: 1.1 {old:.2f}, 1.2 {new:.2f}: 1.2 takes {new / old:.2f}x")


if __name__ == "__main__":
    main()
