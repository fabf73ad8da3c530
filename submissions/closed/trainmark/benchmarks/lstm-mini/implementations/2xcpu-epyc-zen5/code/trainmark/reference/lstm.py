"""lstm-mini (King James Bible) and lstm (WikiText-103): word-level LSTM language models.

Training reads fixed-length windows of the token stream (each window's LSTM state starts
at zero; a random offset per epoch moves the window boundaries), shuffled every epoch.
Validation perplexity is exp(total NLL / tokens) over the whole validation stream, cut into
``EVAL_STREAMS`` contiguous streams read in chunks with the LSTM state carried from chunk to
chunk, as in PyTorch's word_language_model example; the streams are shared out between
ranks, so the number does not depend on the number of processes.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainmark.errors import UserError
from trainmark.reference import kjv, recipe, text_corpus
from trainmark.reference.base import Reference
from trainmark.reference.lstm_model import LSTMLanguageModel

EVAL_STREAMS = 64  # enough parallel work for a CPU; divides evenly among 1, 2, 4, ... 64 ranks


class LSTMReference(Reference):
    """What both sizes share; a subclass fixes the data files and the model's size."""

    vocab_size: int
    hidden: int
    layers: int
    cutoffs: list[int]
    div_value = 4.0      # each cluster 4x narrower than the one before (fairseq's --adaptive-softmax-factor 4)
    dropout: float
    bptt: int            # tokens per training window
    eval_chunk: int      # tokens per evaluation step (the state is carried across chunks)
    files: list[tuple[str, str]]   # accepted (train, valid) file-name pairs in the data folder
    env_var: str
    default_dir: str
    how_to_get: str

    def build_model(self) -> nn.Module:
        return LSTMLanguageModel(self.vocab_size, self.hidden, self.layers, self.cutoffs, self.div_value, self.dropout)

    def data_folder(self, data_dir: Path | None) -> Path:
        return Path(data_dir or os.environ.get(self.env_var) or self.default_dir)

    def load_data(self, data_dir: Path | None) -> text_corpus.Corpus:
        folder = self.data_folder(data_dir)
        for train, valid in self.files:
            if (folder / train).is_file() and (folder / valid).is_file():
                return text_corpus.load(folder / train, folder / valid, self.vocab_size)
        names = " or ".join(f"{t} + {v}" for t, v in self.files)
        raise UserError(f"{self.name}: {names} not found in {folder}: {self.how_to_get}")

    def train_samples(self, data) -> int:
        return (len(data.train) - 1) // self.bptt - 1  # windows per epoch, whatever the offset

    def eval_samples(self, data) -> int:
        return (len(data.valid) - 1) // EVAL_STREAMS * EVAL_STREAMS  # scored tokens

    def train_batches(self, data, epoch, batch_size, generator, rank=0, world=1):
        n, span = self.train_samples(data), self.bptt
        offset = int(torch.randint(span, (1,), generator=generator))
        order = torch.randperm(n, generator=generator)[rank::world]
        window = torch.arange(span + 1)
        for i in range(len(order) // batch_size):
            starts = offset + order[i * batch_size:(i + 1) * batch_size] * span
            tokens = data.train[starts[:, None] + window]
            yield tokens[:, :-1], tokens[:, 1:]

    def split_batch(self, batch):
        inputs, targets = batch
        return (inputs, targets), targets  # the adaptive softmax needs the targets in forward

    def criterion(self, output, targets, hp):
        return output[0].mean()

    def make_optimizer(self, model, hp: dict[str, Any], steps_per_epoch: int):
        return recipe.clipped_adam(model, hp, steps_per_epoch)

    @torch.no_grad()
    def evaluate(self, model, data, device, rank=0, world=1):
        length = (len(data.valid) - 1) // EVAL_STREAMS
        inputs = data.valid[:EVAL_STREAMS * length].view(EVAL_STREAMS, length)[rank::world]
        targets = data.valid[1:EVAL_STREAMS * length + 1].view(EVAL_STREAMS, length)[rank::world]
        total, state = 0.0, None
        for start in range(0, length, self.eval_chunk):
            x = inputs[:, start:start + self.eval_chunk].to(device)
            y = targets[:, start:start + self.eval_chunk].to(device)
            nll, state = model(x, y, state)
            total += float(nll.float().sum())
        return total, float(inputs.numel())

    def finalize_metric(self, total: float, count: float) -> float:
        """Perplexity: exp of the mean NLL per token (inf once the mean overflows exp)."""
        if not count:
            return float("nan")
        mean = total / count
        return math.exp(mean) if mean < 700 else float("inf")

    def synthetic_batch(self, batch_size, device="cpu"):
        """Token windows drawn from a Zipf law (p ~ 1/rank), as word frequencies roughly are, so the
        adaptive softmax visits its clusters about as often as on text."""
        g = torch.Generator().manual_seed(0)
        p = 1.0 / torch.arange(1, self.vocab_size + 1, dtype=torch.float64)
        tokens = torch.multinomial(p, batch_size * (self.bptt + 1), replacement=True, generator=g)
        tokens = tokens.view(batch_size, self.bptt + 1).to(device)
        return tokens[:, :-1], tokens[:, 1:]


class LSTMMini(LSTMReference):
    name = "lstm-mini"
    vocab_size = 10_000
    hidden = 256
    layers = 1
    cutoffs = [500, 2_000]  # 500 words are 86 % of the training tokens, 2,000 are 95 %
    dropout = 0.1
    bptt = 64
    eval_chunk = 256
    files = [(kjv.TRAIN_FILE, kjv.VALID_FILE)]
    env_var = "TRAINMARK_LSTM_MINI"
    default_dir = "data/lstm-mini"
    how_to_get = f"run `trainmark data prepare lstm-mini` ({kjv.HOW_TO_GET})"

    def prepare_data(self, out_dir: Path, source: Path | None = None) -> list[Path]:
        return kjv.prepare(out_dir, source)


class LSTMFull(LSTMReference):
    name = "lstm"
    vocab_size = 267_736   # WikiText-103's 267,735 types (Merity et al. 2016, Table 1) + <eos>
    hidden = 1024
    layers = 2
    cutoffs = [20_000, 60_000]  # fairseq's WikiText-103 adaptive input/softmax (examples/language_model)
    dropout = 0.1
    bptt = 128
    eval_chunk = 512
    files = [("wiki.train.tokens", "wiki.valid.tokens"), ("ptb.train.txt", "ptb.valid.txt")]
    env_var = "TRAINMARK_WIKITEXT103"
    default_dir = "data/wikitext-103"
    how_to_get = ("unzip wikitext-103-v1.zip (Salesforce's WikiText-103, word level, CC BY-SA 3.0) and pass "
                  "--data-dir wikitext-103/ (or set $TRAINMARK_WIKITEXT103); PTB-format text "
                  "(ptb.train.txt + ptb.valid.txt) is read too, in the open division")
