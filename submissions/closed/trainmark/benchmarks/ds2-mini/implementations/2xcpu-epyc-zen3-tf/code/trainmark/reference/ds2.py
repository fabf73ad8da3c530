"""ds2-mini (FSDD connected digits) and ds2 (LibriSpeech): Deep Speech 2 trained with CTC.

Batches carry raw waveforms; ``to_device`` computes the spectrogram features on the training
device, so the input pipeline is the same for real and synthetic data. Utterances are
bucketed by length (sorted within a group of batches, batch order shuffled) so little of a
batch is padding; every rank takes its slice of each global batch, so the ranks of one step
see utterances of about the same length. WER is greedy CTC decoding against the reference
transcripts: (word errors, reference words) per rank, their ratio over all ranks.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from trainmark.errors import UserError
from trainmark.reference import ctc, fsdd, librispeech, recipe
from trainmark.reference.base import Reference
from trainmark.reference.batching import length_buckets
from trainmark.reference.ds2_model import ConvSpec, DeepSpeech2
from trainmark.reference.speech_features import FeatureSpec, Frontend


def pad_batch(waves: list[np.ndarray], labels: list[list[int]]) -> tuple[torch.Tensor, ...]:
    """(waves [B, S] float32, samples [B], targets [B, L] int64 padded with 0, target lengths [B])."""
    samples = torch.tensor([len(w) for w in waves], dtype=torch.int64)
    out = torch.zeros(len(waves), int(samples.max()), dtype=torch.float32)
    for i, w in enumerate(waves):
        out[i, :len(w)] = torch.from_numpy(np.ascontiguousarray(w, dtype=np.float32))
    target_lens = torch.tensor([len(t) for t in labels], dtype=torch.int64)
    targets = torch.zeros(len(labels), max(int(target_lens.max()), 1), dtype=torch.int64)
    for i, t in enumerate(labels):
        targets[i, :len(t)] = torch.tensor(t, dtype=torch.int64)
    return out, samples, targets, target_lens


def hold_then_decay(step: int, warmup: int, hold: int, decay: int, final: float) -> float:
    """recipe.warmup_linear_decay with the peak held from ``warmup`` to ``hold`` steps: the decay
    runs from ``hold`` to ``decay``, where the factor reaches ``final`` and stays."""
    if step < hold:
        return recipe.warmup_linear_decay(step, warmup, hold + 1, 1.0)
    return recipe.warmup_linear_decay(step - hold + warmup, warmup, decay - hold + warmup, final)


class DS2Reference(Reference):
    """What both sizes share; a subclass fixes features, model size, data and batching."""

    features: FeatureSpec
    convs: list[ConvSpec]
    rnn_hidden: int
    rnn_layers: int
    num_classes: int
    group_batches: int          # batches sorted together by length
    eval_batch: int
    synthetic_seconds: float    # utterance length of a synthetic batch
    synthetic_labels: int       # labels per synthetic utterance
    prefetch_batches: int       # batches read ahead on threads (0: read in the training loop)
    env_var: str
    default_dir: str

    def __init__(self):
        self._frontends: dict[str, Frontend] = {}

    def build_model(self) -> nn.Module:
        return DeepSpeech2(self.features.n_features, self.num_classes, self.convs, self.rnn_hidden, self.rnn_layers)

    def data_folder(self, data_dir: Path | None) -> Path:
        return Path(data_dir or os.environ.get(self.env_var) or self.default_dir)

    # subclasses: item_samples(data) -> Tensor, train_items(data, epoch, generator) -> (lengths, getter),
    # eval_items(data) -> (lengths, getter); a getter maps an index to (waveform, label ids)

    def train_batches(self, data, epoch, batch_size, generator, rank=0, world=1):
        lengths, get = self.train_items(data, generator)
        batches = length_buckets(lengths, batch_size, rank, world, generator, self.group_batches)

        def build(idx: torch.Tensor):
            waves, labels = zip(*(get(int(i)) for i in idx))
            return pad_batch(list(waves), list(labels))

        if not self.prefetch_batches:
            yield from map(build, batches)
            return
        # Read ahead on threads: soundfile decodes with the GIL released; the order stays fixed.
        with ThreadPoolExecutor(self.prefetch_batches) as pool:
            pending = deque(pool.submit(build, b) for b in batches[:self.prefetch_batches])
            for nxt in batches[self.prefetch_batches:]:
                yield pending.popleft().result()
                pending.append(pool.submit(build, nxt))
            while pending:
                yield pending.popleft().result()

    def frontend(self, device: torch.device) -> Frontend:
        key = str(device)
        if key not in self._frontends:
            self._frontends[key] = Frontend(self.features).to(device)
        return self._frontends[key]

    def to_device(self, batch, device, train):
        waves, samples, targets, target_lens = (t.to(device, non_blocking=True) for t in batch)
        feats, frames = self.frontend(device)(waves, samples)
        return feats, frames, targets, target_lens

    def split_batch(self, batch):
        feats, frames, targets, target_lens = batch
        return (feats, frames), (targets, target_lens)

    def criterion(self, output, targets, hp):
        log_probs, lengths = output
        labels, label_lens = targets
        return F.ctc_loss(log_probs, labels, lengths, label_lens, blank=ctc.BLANK, reduction="mean",
                          zero_infinity=True)

    def make_optimizer(self, model, hp: dict[str, Any], steps_per_epoch: int):
        """recipe.clipped_adam, its rate held at the peak from the end of the warm-up to
        ``opt_learning_rate_decay_start_epochs`` (0: no hold) before the linear decay. The hold
        lives here, not in recipe.py, whose released code lstm-mini and transformer-mini share."""
        opt, sched = recipe.clipped_adam(model, hp, steps_per_epoch)
        hold = int(round(hp.get("opt_learning_rate_decay_start_epochs", 0) * steps_per_epoch))
        if hold > 0:
            warmup = int(hp["opt_learning_rate_warmup_steps"])
            hold = max(hold, warmup)
            decay = max(int(round(hp["opt_learning_rate_decay_epochs"] * steps_per_epoch)), hold + 1)
            final = float(hp["opt_learning_rate_final_factor"])
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: hold_then_decay(s, warmup, hold, decay, final))
        return opt, sched

    def words(self, ids: list[int]) -> str:
        raise NotImplementedError

    @torch.no_grad()
    def evaluate(self, model, data, device, rank=0, world=1):
        lengths, get = self.eval_items(data)
        order = torch.argsort(lengths, stable=True)
        errors = words = 0
        for b, start in enumerate(range(0, len(order), self.eval_batch)):
            if b % world != rank:
                continue
            items = [get(int(i)) for i in order[start:start + self.eval_batch]]
            batch = self.to_device(pad_batch([w for w, _ in items], [t for _, t in items]), device, False)
            inputs, _ = self.split_batch(batch)
            log_probs, out_lens = model(*inputs)
            hyps = [self.words(h) for h in ctc.greedy_decode(log_probs, out_lens)]
            e, n = ctc.corpus_wer(hyps, [self.words(t) for _, t in items])
            errors, words = errors + e, words + n
        return float(errors), float(words)

    def synthetic_batch(self, batch_size, device="cpu"):
        """Noise waveforms of a typical utterance length and random labels, in ``train_batches``' form."""
        g = torch.Generator().manual_seed(0)
        samples = int(self.synthetic_seconds * self.features.sample_rate)
        waves = 0.1 * torch.randn(batch_size, samples, generator=g)
        targets = torch.randint(1, self.num_classes, (batch_size, self.synthetic_labels), generator=g)
        full = lambda v: torch.full((batch_size,), v, dtype=torch.int64)  # noqa: E731
        return waves.to(device), full(samples).to(device), targets.to(device), full(self.synthetic_labels).to(device)


class DS2Mini(DS2Reference):
    """Connected digits from FSDD: 11 classes (blank + ten digit words), one label per spoken digit."""

    name = "ds2-mini"
    features = FeatureSpec("log-mel", fsdd.SAMPLE_RATE, n_fft=256, win_length=200, hop_length=80, n_mels=40)
    convs = [ConvSpec(32, (11, 11), (2, 2), (5, 5)), ConvSpec(32, (5, 5), (1, 2), (2, 2))]
    rnn_hidden = 128
    rnn_layers = 2
    num_classes = 11
    train_utterances = 2000     # fresh utterances per epoch
    group_batches = 1000        # the whole epoch is sorted by length
    eval_batch = 100
    synthetic_seconds = 2.4     # mean length of the evaluation utterances
    synthetic_labels = 4
    prefetch_batches = 0        # rendering from memory is fast; threads would only compete for 2 cores
    env_var = "TRAINMARK_DS2_MINI"
    default_dir = "data/ds2-mini"

    def load_data(self, data_dir):
        return fsdd.load(self.data_folder(data_dir))

    def prepare_data(self, out_dir: Path, source: Path | None = None) -> list[Path]:
        source = source or os.environ.get("TRAINMARK_FSDD")
        if source is None:
            raise UserError(f"ds2-mini: say where FSDD is with --source DIR (or $TRAINMARK_FSDD): {fsdd.HOW_TO_GET}")
        return fsdd.prepare(out_dir, Path(source))

    def train_samples(self, data) -> int:
        return self.train_utterances

    def eval_samples(self, data) -> int:
        return len(data.eval_utterances)

    def train_items(self, data, generator):
        rand = fsdd.torch_rand(generator)
        utts = [fsdd.draw_utterance(data.train_pool, rand) for _ in range(self.train_utterances)]
        return self._items(data, utts)

    def eval_items(self, data):
        return self._items(data, data.eval_utterances)

    @staticmethod
    def _items(data, utts):
        rec = data.recordings
        lengths = torch.tensor([u.samples(rec) for u in utts], dtype=torch.int64)
        return lengths, lambda i: (utts[i].render(rec), [int(rec.digit[j]) + 1 for j in utts[i].recordings])

    def words(self, ids):
        return " ".join(fsdd.WORDS[i - 1] for i in ids)


class DS2Full(DS2Reference):
    """LibriSpeech 960 h -> dev-clean, characters; sizes after deepspeech.pytorch's DS2 defaults."""

    name = "ds2"
    features = FeatureSpec("linear", librispeech.SAMPLE_RATE, n_fft=320, win_length=320, hop_length=160)
    convs = [ConvSpec(32, (41, 11), (2, 2), (20, 5)), ConvSpec(32, (21, 11), (2, 1), (10, 5))]
    rnn_hidden = 800
    rnn_layers = 5
    num_classes = len(librispeech.ALPHABET)
    group_batches = 100
    eval_batch = 32
    synthetic_seconds = 12.0    # about the mean LibriSpeech training utterance
    synthetic_labels = 180
    prefetch_batches = 8        # so that FLAC decoding overlaps the device's training step
    env_var = "TRAINMARK_LIBRISPEECH"
    default_dir = "data/LibriSpeech"

    def load_data(self, data_dir):
        root = self.data_folder(data_dir)
        train = librispeech.concat([librispeech.read_subset(root, s) for s in self.train_subsets()])
        return {"train": train, "eval": librispeech.read_subset(root, librispeech.EVAL_SUBSET)}

    def train_subsets(self) -> tuple[str, ...]:
        return librispeech.TRAIN_SUBSETS

    def train_samples(self, data) -> int:
        return len(data["train"])

    def eval_samples(self, data) -> int:
        return len(data["eval"])

    def train_items(self, data, generator):
        return self._items(data["train"])

    def eval_items(self, data):
        return self._items(data["eval"])

    @staticmethod
    def _items(manifest):
        return (torch.from_numpy(manifest.samples),
                lambda i: (manifest.audio(i), librispeech.encode(manifest.transcripts[i])))

    def words(self, ids):
        return librispeech.decode(ids)
