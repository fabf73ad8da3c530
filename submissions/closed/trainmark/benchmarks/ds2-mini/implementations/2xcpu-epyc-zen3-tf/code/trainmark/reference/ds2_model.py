"""Deep Speech 2 (Amodei et al., 2016) from torch.nn: 2-D convolutions over the spectrogram,
bidirectional GRUs with sequence-wise batch norm, a linear layer to the output classes, CTC.

Layout follows the paper and deepspeech.pytorch (the code MLPerf's DS2 reference was adapted
from): Conv2d + BatchNorm2d + Hardtanh(0, 20) blocks over [batch, 1, freq, time], outputs past
each utterance's end zeroed after every block; then GRU layers whose two directions are
summed, each but the first preceded by BatchNorm1d; then BatchNorm1d + Linear. The GRUs read
packed sequences, so the backward direction starts at an utterance's own last frame.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


@dataclass(frozen=True)
class ConvSpec:
    channels: int
    kernel: tuple[int, int]    # (freq, time)
    stride: tuple[int, int]
    padding: tuple[int, int]

    def out_len(self, n: torch.Tensor | int, axis: int):
        return (n + 2 * self.padding[axis] - self.kernel[axis]) // self.stride[axis] + 1


def _frame_mask(lengths: torch.Tensor, frames: int) -> torch.Tensor:
    return torch.arange(frames, device=lengths.device)[None, :] < lengths[:, None]


class DeepSpeech2(nn.Module):
    def __init__(self, n_features: int, n_classes: int, convs: list[ConvSpec], rnn_hidden: int, rnn_layers: int):
        super().__init__()
        self.convs = list(convs)
        blocks, channels, freq = [], 1, n_features
        for c in self.convs:
            blocks.append(nn.Sequential(nn.Conv2d(channels, c.channels, c.kernel, c.stride, c.padding, bias=False),
                                        nn.BatchNorm2d(c.channels), nn.Hardtanh(0, 20, inplace=True)))
            channels, freq = c.channels, c.out_len(freq, 0)
        self.conv = nn.ModuleList(blocks)
        self.rnn_hidden = rnn_hidden
        sizes = [channels * freq] + [rnn_hidden] * (rnn_layers - 1)
        self.rnn_norms = nn.ModuleList([nn.Identity()] + [nn.BatchNorm1d(s) for s in sizes[1:]])
        self.rnns = nn.ModuleList([nn.GRU(s, rnn_hidden, batch_first=True, bidirectional=True) for s in sizes])
        self.out_norm = nn.BatchNorm1d(rnn_hidden)
        self.fc = nn.Linear(rnn_hidden, n_classes, bias=False)

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor):
        """feats [B, F, T], lengths [B] -> (log-probabilities [T', B, classes] float32, lengths [B])."""
        x = feats.unsqueeze(1)
        for spec, block in zip(self.convs, self.conv):
            x = block(x)
            lengths = spec.out_len(lengths, 1)
            x = x * _frame_mask(lengths, x.size(-1))[:, None, None, :].to(x.dtype)
        b, c, f, t = x.shape
        x = x.reshape(b, c * f, t).transpose(1, 2)  # [B, T, features]
        cpu_lengths = lengths.cpu()
        for norm, rnn in zip(self.rnn_norms, self.rnns):
            x = norm(x.transpose(1, 2)).transpose(1, 2)
            packed = pack_padded_sequence(x, cpu_lengths, batch_first=True, enforce_sorted=False)
            x, _ = pad_packed_sequence(rnn(packed)[0], batch_first=True, total_length=t)
            x = x[..., :self.rnn_hidden] + x[..., self.rnn_hidden:]
        x = self.fc(self.out_norm(x.transpose(1, 2)).transpose(1, 2))
        return x.float().log_softmax(-1).transpose(0, 1), lengths
