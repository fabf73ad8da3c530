"""Spectrogram front ends for the speech references, computed on the training device.

``log-mel``: torchaudio's MelSpectrogram, log(power + 1e-6) (the FSDD mini). ``linear``:
the magnitude STFT, log(1 + |X|), as deepspeech.pytorch feeds Deep Speech 2 (LibriSpeech).
Frames are not centred (a frame never reaches past the samples it is given). Each utterance is
normalised per frequency bin over its own valid frames (mean 0, std 1) and frames past its end
are zero, so padding never changes an utterance's features.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torchaudio
from torch import nn


@dataclass(frozen=True)
class FeatureSpec:
    kind: str            # "log-mel" | "linear"
    sample_rate: int
    n_fft: int
    win_length: int
    hop_length: int
    n_mels: int = 0      # log-mel only

    @property
    def n_features(self) -> int:
        return self.n_mels if self.kind == "log-mel" else self.n_fft // 2 + 1

    def frames(self, samples: torch.Tensor) -> torch.Tensor:
        """STFT frames that hold only valid samples (no centring, so padding never leaks in)."""
        return ((samples - self.n_fft) // self.hop_length + 1).clamp(min=0)


class Frontend(nn.Module):
    """waveforms [B, S] float + lengths [B] -> features [B, F, T] + frame counts [B]."""

    def __init__(self, spec: FeatureSpec):
        super().__init__()
        self.spec = spec
        window = dict(n_fft=spec.n_fft, win_length=spec.win_length, hop_length=spec.hop_length, center=False)
        if spec.kind == "log-mel":
            self.transform = torchaudio.transforms.MelSpectrogram(spec.sample_rate, n_mels=spec.n_mels, **window)
        elif spec.kind == "linear":
            self.transform = torchaudio.transforms.Spectrogram(power=1.0, **window)
        else:
            raise ValueError(f"unknown feature kind {spec.kind!r}")

    @torch.no_grad()
    def forward(self, waves: torch.Tensor, lengths: torch.Tensor):
        spec = self.transform(waves.float())
        feats = torch.log(spec + 1e-6) if self.spec.kind == "log-mel" else torch.log1p(spec)
        frames = self.spec.frames(lengths).clamp(max=feats.size(-1))
        mask = (torch.arange(feats.size(-1), device=feats.device)[None, :] < frames[:, None]).unsqueeze(1)
        n = frames.clamp(min=1).view(-1, 1, 1).to(feats.dtype)
        mean = (feats * mask).sum(-1, keepdim=True) / n
        var = (((feats - mean) * mask) ** 2).sum(-1, keepdim=True) / n
        return ((feats - mean) / (var.sqrt() + 1e-5)) * mask, frames
