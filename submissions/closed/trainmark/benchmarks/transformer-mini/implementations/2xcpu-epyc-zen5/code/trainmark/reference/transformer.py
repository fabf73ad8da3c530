"""transformer-mini (KJV -> WEB Bible) and transformer (WMT14 English -> German): translation with BLEU.

Batches are sentence pairs bucketed by length (sorted within groups of batches, batch order
shuffled), so little of a batch is padding; every rank takes its slice of each global batch.
The loss is label-smoothed cross-entropy over the real target tokens. BLEU comes from
``sacrebleu`` on detokenised greedy output: every rank decodes its share of the validation set
and returns sacrebleu's sufficient statistics (n-gram matches and totals, lengths), which the
harness sums over ranks before ``finalize_metric`` turns them into one corpus BLEU, the same
number one process would get.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from trainmark.errors import UserError
from trainmark.reference import bible_parallel, parallel_text, recipe
from trainmark.reference.base import Reference
from trainmark.reference.batching import length_buckets
from trainmark.reference.transformer_model import PAD, Seq2SeqTransformer


class TransformerReference(Reference):
    """What both sizes share; a subclass fixes the data files, the vocabulary and the model's size."""

    vocab_size: int
    d_model: int
    heads: int
    encoder_layers: int
    decoder_layers: int
    ff_dim: int
    dropout: float
    norm_first: bool
    max_tokens: int             # training pairs longer than this (subwords, either side) are skipped
    group_batches: int
    eval_batch: int
    bleu_lowercase: bool
    synthetic_tokens: int       # sentence length of a synthetic batch
    train_files: tuple[str, str]
    valid_files: tuple[str, str]
    env_var: str
    default_dir: str
    how_to_get: str

    def build_model(self) -> nn.Module:
        return Seq2SeqTransformer(self.vocab_size, self.d_model, self.heads, self.encoder_layers,
                                  self.decoder_layers, self.ff_dim, self.dropout, self.norm_first)

    def data_folder(self, data_dir: Path | None) -> Path:
        return Path(data_dir or os.environ.get(self.env_var) or self.default_dir)

    def load_data(self, data_dir):
        corpus = parallel_text.load(self.data_folder(data_dir), self.train_files, self.valid_files,
                                    self.max_tokens, self.how_to_get)
        size = corpus.decoder().get_piece_size()
        if size != self.vocab_size:
            raise UserError(f"{self.name}: {parallel_text.SPM_FILE} has {size} subwords, the reference model "
                            f"expects {self.vocab_size}: {self.how_to_get}")
        return corpus

    def train_samples(self, data) -> int:
        return len(data.train_src)

    def eval_samples(self, data) -> int:
        return len(data.valid_src)

    def train_batches(self, data, epoch, batch_size, generator, rank=0, world=1):
        lengths = torch.tensor([max(len(s), len(t)) for s, t in zip(data.train_src, data.train_tgt)])
        for idx in length_buckets(lengths, batch_size, rank, world, generator, self.group_batches):
            yield parallel_text.pad_pairs([data.train_src[i] for i in idx], [data.train_tgt[i] for i in idx])

    def split_batch(self, batch):
        src, tgt_in, tgt_out = batch
        return (src, tgt_in), tgt_out

    def criterion(self, output, targets, hp):
        return F.cross_entropy(output.float().flatten(0, 1), targets.flatten(), ignore_index=PAD,
                               label_smoothing=hp["label_smoothing"])

    def make_optimizer(self, model, hp: dict[str, Any], steps_per_epoch: int):
        return recipe.clipped_adam(model, hp, steps_per_epoch)

    @torch.no_grad()
    def evaluate(self, model, data, device, rank=0, world=1):
        from sacrebleu.metrics.bleu import BLEU

        sp = data.decoder()
        order = sorted(range(len(data.valid_src)), key=lambda i: len(data.valid_src[i]))
        hyps, refs = [], []
        for b, start in enumerate(range(0, len(order), self.eval_batch)):
            if b % world != rank:
                continue
            idx = order[start:start + self.eval_batch]
            (src,) = parallel_text.pad_pairs([data.valid_src[i] for i in idx])
            out = model.greedy(src.to(device), max_len=int(src.shape[1] * 1.5) + 10)
            hyps += sp.decode(out)
            refs += [data.valid_refs[i] for i in idx]
        if not hyps:
            return [0.0] * 10
        score = BLEU(lowercase=self.bleu_lowercase).corpus_score(hyps, [refs])
        return [*map(float, score.counts), *map(float, score.totals), float(score.sys_len), float(score.ref_len)]

    def finalize_metric(self, *stats: float) -> float:
        """Corpus BLEU (0-100) from the summed statistics, as ``sacrebleu.corpus_bleu`` computes it."""
        from sacrebleu.metrics.bleu import BLEU

        counts, totals = [round(v) for v in stats[:4]], [round(v) for v in stats[4:8]]
        if not stats[9]:
            return float("nan")   # no reference words: nothing was evaluated
        if not totals[0]:
            return 0.0            # every hypothesis empty
        return float(BLEU.compute_bleu(counts, totals, round(stats[8]), round(stats[9]), smooth_method="exp").score)

    def synthetic_batch(self, batch_size, device="cpu"):
        """Random subwords, every sentence ``synthetic_tokens`` long on both sides, in ``train_batches``' form."""
        g = torch.Generator().manual_seed(0)
        rows = torch.randint(4, self.vocab_size, (2, batch_size, self.synthetic_tokens), generator=g).tolist()
        return tuple(t.to(device) for t in parallel_text.pad_pairs(rows[0], rows[1]))


class TransformerMini(TransformerReference):
    name = "transformer-mini"
    vocab_size = 2000
    d_model = 128
    heads = 4
    encoder_layers = 2
    decoder_layers = 2
    ff_dim = 512
    dropout = 0.1
    norm_first = True           # pre-norm: stable without the long warm-up of the post-norm original
    max_tokens = 64
    group_batches = 50
    eval_batch = 128
    bleu_lowercase = False
    synthetic_tokens = 26       # about the mean prepared verse, source and target, in subwords
    train_files = bible_parallel.FILES["train"]
    valid_files = bible_parallel.FILES["valid"]
    env_var = "TRAINMARK_TRANSFORMER_MINI"
    default_dir = "data/transformer-mini"
    how_to_get = f"run `trainmark data prepare transformer-mini` ({bible_parallel.HOW_TO_GET})"

    def prepare_data(self, out_dir: Path, source: Path | None = None) -> list[Path]:
        written = bible_parallel.prepare(out_dir, source)
        lines = parallel_text.read_lines(out_dir / self.train_files[0]) + parallel_text.read_lines(
            out_dir / self.train_files[1])
        return [*written, parallel_text.train_spm(lines, self.vocab_size, out_dir / parallel_text.SPM_FILE)]


class TransformerFull(TransformerReference):
    """Transformer base (Vaswani et al. 2017, Table 3) on WMT14 English -> German."""

    name = "transformer"
    vocab_size = 32768          # joint BPE; the paper's shared vocabulary has about 37,000 tokens
    d_model = 512
    heads = 8
    encoder_layers = 6
    decoder_layers = 6
    ff_dim = 2048
    dropout = 0.1
    norm_first = False          # post-norm, as the paper
    max_tokens = 256
    group_batches = 100
    eval_batch = 128
    bleu_lowercase = True       # MLPerf's 25.0 target is uncased BLEU
    synthetic_tokens = 32
    train_files = ("train.en", "train.de")
    valid_files = ("newstest2014.en", "newstest2014.de")
    env_var = "TRAINMARK_WMT14"
    default_dir = "data/wmt14-en-de"
    how_to_get = ("put WMT14 English-German as plain parallel text in the data folder: train.en + train.de "
                  "(Europarl v7, Common Crawl, News Commentary v9; 4.5 M pairs) and newstest2014.en + "
                  "newstest2014.de (3,003 pairs), then run `trainmark data prepare transformer --data-dir DIR` "
                  "to train the subword model")

    def prepare_data(self, out_dir: Path, source: Path | None = None) -> list[Path]:
        folder = Path(source or out_dir)
        src, tgt = parallel_text.read_pair(folder / self.train_files[0], folder / self.train_files[1])
        out_dir.mkdir(parents=True, exist_ok=True)
        return [parallel_text.train_spm(src + tgt, self.vocab_size, out_dir / parallel_text.SPM_FILE)]
