"""CTC greedy decoding and word error counting for the speech references.

Greedy (best-path) decoding takes the most likely class of every output frame, merges
repeats and drops the blank (Graves et al. 2006). Word errors are the Levenshtein distance
between word sequences, computed by ``torchaudio.functional.edit_distance``; WER is their
sum over the evaluation set divided by the number of reference words.
"""
from __future__ import annotations

import torch
from torchaudio.functional import edit_distance

BLANK = 0


def greedy_decode(log_probs: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    """Class ids per utterance from ``log_probs`` [T, B, C] and valid frame counts [B]."""
    best = log_probs.argmax(-1).t().cpu()  # [B, T]
    out = []
    for seq, n in zip(best, lengths.cpu().tolist()):
        seq = torch.unique_consecutive(seq[:n])
        out.append([int(c) for c in seq if c != BLANK])
    return out


def word_errors(hypothesis: list[str], reference: list[str]) -> int:
    """Substitutions + deletions + insertions turning ``reference`` into ``hypothesis``."""
    return int(edit_distance(reference, hypothesis))


def corpus_wer(hypotheses: list[str], references: list[str]) -> tuple[int, int]:
    """(word errors, reference words) over paired transcripts, words split on whitespace."""
    errors = words = 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        errors += word_errors(hyp.split(), ref.split())
        words += len(ref.split())
    return errors, words
