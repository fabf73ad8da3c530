"""Word-level LSTM language model: embedding, ``nn.LSTM``, ``nn.AdaptiveLogSoftmaxWithLoss``.

The input embedding is tied to the adaptive softmax's output weights (Baevski & Auli,
"Adaptive Input Representations", ICLR 2019, section 3: frequent words share the head's
rows, rarer words a cluster's narrow rows times that cluster's projection). Tying halves the
vocabulary-sized parameters, which dominate a small model (the trained weights of lstm-mini
stay a few MB) and a large-vocabulary one (WikiText-103's 267 k words).

``forward(tokens, targets, state)`` returns the negative log-likelihood of every target
token and the final LSTM state: the adaptive softmax needs the targets to skip clusters
no target falls in, and evaluation carries the state from one chunk to the next.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab_size: int, hidden: int, layers: int, cutoffs: list[int],
                 div_value: float = 4.0, dropout: float = 0.0):
        super().__init__()
        self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.drop = nn.Dropout(dropout)
        self.softmax = nn.AdaptiveLogSoftmaxWithLoss(hidden, vocab_size, cutoffs, div_value=div_value)

    def embedding_matrix(self) -> torch.Tensor:
        """[vocab, hidden]: the head's word rows, then each cluster's rows projected up to ``hidden``."""
        sm = self.softmax
        parts = [sm.head.weight[:sm.shortlist_size]]
        for cluster in sm.tail:  # Sequential(Linear(hidden, h_i), Linear(h_i, words_i))
            down, words = cluster[0], cluster[1]
            parts.append(words.weight @ down.weight)
        return torch.cat(parts)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor, state=None):
        x = self.drop(F.embedding(tokens, self.embedding_matrix()))
        h, state = self.lstm(x, state)
        h = self.drop(h).reshape(-1, h.size(-1))
        out = self.softmax(h, targets.reshape(-1))
        return -out.output, state
