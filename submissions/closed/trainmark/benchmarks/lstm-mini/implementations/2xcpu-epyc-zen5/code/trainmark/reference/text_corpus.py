"""Word-level corpora in PTB format: one sentence (or paragraph) per line, tokens split by spaces.

This is the format of Penn Treebank (``ptb.train.txt``), WikiText-103 (``wiki.train.tokens``)
and the prepared King James Bible (``kjv.train.txt``). As in PyTorch's word_language_model
example, every line, empty ones included, contributes its tokens and one ``<eos>``. The
vocabulary is built from the training file only: most frequent first, ties broken by the
token's spelling, so the same file always gives the same ids.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import torch

from trainmark.errors import UserError

EOS = "<eos>"
UNK = "<unk>"


@dataclass
class Corpus:
    vocab: list[str]       # id -> token; ``vocab[0]`` is <unk>, ``vocab[1]`` is <eos>
    train: torch.Tensor    # int64 [N] token ids of the training file, <eos> after every line
    valid: torch.Tensor    # int64 [M] token ids of the validation file

    @property
    def unk_rate(self) -> float:
        """Fraction of validation tokens outside the vocabulary (reported, not judged)."""
        return float((self.valid == 0).float().mean()) if len(self.valid) else 0.0


def lines(path: Path) -> Iterator[list[str]]:
    """Tokens of each line, with ``<eos>`` appended; a UserError names an unreadable file."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield line.split() + [EOS]
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read text corpus ({exc})") from None


def build_vocab(token_lines: Iterable[list[str]], size: int | None = None) -> list[str]:
    """``<unk>``, ``<eos>``, then the training tokens by falling count (ties: by spelling).

    ``size`` caps the vocabulary (the rest becomes <unk>) and, when the corpus has fewer
    types, pads it with never-seen placeholders, so the model's size is a constant of the
    reference rather than of the data.
    """
    counts: Counter[str] = Counter()
    for tokens in token_lines:
        counts.update(tokens)
    counts.pop(UNK, None)
    counts.pop(EOS, None)
    ranked = sorted(counts, key=lambda t: (-counts[t], t))
    vocab = [UNK, EOS] + ranked
    if size is not None:
        if size < 2:
            raise ValueError("a vocabulary needs at least <unk> and <eos>")
        vocab = vocab[:size] + [f"<unused{i}>" for i in range(size - len(vocab))]
    return vocab


def encode(token_lines: Iterable[list[str]], vocab: list[str]) -> torch.Tensor:
    """Token ids of all lines, one flat int64 tensor (out-of-vocabulary tokens become <unk> = 0)."""
    index = {t: i for i, t in enumerate(vocab)}
    chunks, buf = [], []
    for tokens in token_lines:
        buf.extend(index.get(t, 0) for t in tokens)
        if len(buf) >= 1 << 20:  # bounded Python lists: WikiText-103 has 103 M tokens
            chunks.append(np.asarray(buf, dtype=np.int32))
            buf = []
    chunks.append(np.asarray(buf, dtype=np.int32))
    return torch.from_numpy(np.concatenate(chunks)).long()


def load(train_path: Path, valid_path: Path, vocab_size: int | None) -> Corpus:
    for p in (train_path, valid_path):
        if not p.is_file():
            raise UserError(f"{p}: missing")
    vocab = build_vocab(lines(train_path), vocab_size)
    return Corpus(vocab, encode(lines(train_path), vocab), encode(lines(valid_path), vocab))
