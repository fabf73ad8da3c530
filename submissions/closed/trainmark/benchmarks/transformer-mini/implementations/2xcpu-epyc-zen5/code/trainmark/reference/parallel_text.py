"""Parallel text: one sentence per line, line k of the source file translating line k of the target.

This is the format of WMT's plain-text releases (``train.en`` / ``train.de``, ``newstest2014.en``
/ ``.de`` after the usual SGML stripping) and of the prepared Bible pair (``train.kjv`` /
``train.web``). Subwords come from one joint ``sentencepiece`` model (``spm.model``) that
``trainmark data prepare`` trains on the training files, so that the vocabulary is part of the
pinned data, as the vocabulary file is in MLPerf's Transformer reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import torch

from trainmark.errors import UserError
from trainmark.reference.transformer_model import BOS, EOS, PAD

SPM_FILE = "spm.model"


@dataclass
class ParallelCorpus:
    train_src: list[list[int]]   # subword ids, no BOS/EOS
    train_tgt: list[list[int]]
    valid_src: list[list[int]]
    valid_refs: list[str]        # the untokenised target sentences, the BLEU references
    spm_model: bytes             # the serialized sentencepiece model, to decode hypotheses

    def decoder(self):
        import sentencepiece as spm

        return spm.SentencePieceProcessor(model_proto=self.spm_model)


def read_lines(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read parallel text ({exc})") from None


def read_pair(src_path: Path, tgt_path: Path) -> tuple[list[str], list[str]]:
    """Both sides of a parallel file pair; a UserError names the files when their lines differ in number."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise UserError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: "
                        "parallel files must align line by line")
    return src, tgt


def train_spm(lines: Iterable[str], vocab_size: int, out: Path) -> Path:
    """A joint BPE model over ``lines``, ids fixed (pad 0, unk 1, bos 2, eos 3), written to ``out``.

    Trained from an iterator, single-threaded, so that the file holds no input paths and the same
    lines give the same bytes (with the same sentencepiece version).
    """
    import io

    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(lines)), model_writer=buf, vocab_size=vocab_size, model_type="bpe",
        character_coverage=1.0, pad_id=PAD, unk_id=1, bos_id=BOS, eos_id=EOS, num_threads=1, minloglevel=2)
    out.write_bytes(buf.getvalue())
    return out


def load(folder: Path, train_files: tuple[str, str], valid_files: tuple[str, str], max_tokens: int,
         how_to_get: str) -> ParallelCorpus:
    """Read and encode the corpus; training pairs longer than ``max_tokens`` subwords on a side are skipped."""
    import sentencepiece as spm

    names = [*train_files, *valid_files, SPM_FILE]
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise UserError(f"{', '.join(missing)} not found in {folder}: {how_to_get}")
    model = (folder / SPM_FILE).read_bytes()
    try:
        sp = spm.SentencePieceProcessor(model_proto=model)
    except RuntimeError as exc:
        raise UserError(f"{folder / SPM_FILE}: not a sentencepiece model ({exc})") from None
    src, tgt = read_pair(folder / train_files[0], folder / train_files[1])
    s_ids, t_ids = sp.encode(src), sp.encode(tgt)
    keep = [i for i in range(len(src)) if 0 < len(s_ids[i]) <= max_tokens and 0 < len(t_ids[i]) <= max_tokens]
    vsrc, vtgt = read_pair(folder / valid_files[0], folder / valid_files[1])
    return ParallelCorpus([s_ids[i] for i in keep], [t_ids[i] for i in keep], sp.encode(vsrc), vtgt, model)


def pad_pairs(src: list[list[int]], tgt: list[list[int]] | None = None) -> tuple[torch.Tensor, ...]:
    """(src [B, S] + EOS, tgt_in [B, T] = BOS + tgt, tgt_out [B, T] = tgt + EOS), padded with PAD."""
    def matrix(rows: list[list[int]]) -> torch.Tensor:
        out = torch.full((len(rows), max(len(r) for r in rows)), PAD, dtype=torch.long)
        for i, r in enumerate(rows):
            out[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        return out

    s = matrix([r + [EOS] for r in src])
    if tgt is None:
        return (s,)
    return s, matrix([[BOS] + r for r in tgt]), matrix([r + [EOS] for r in tgt])
