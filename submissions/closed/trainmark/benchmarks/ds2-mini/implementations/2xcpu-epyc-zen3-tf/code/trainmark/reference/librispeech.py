"""LibriSpeech (OpenSLR 12, CC BY 4.0) as the full-size ds2 reads it.

Layout of an extracted subset: ``<root>/<subset>/<speaker>/<chapter>/<speaker>-<chapter>-<utt>.flac``
with one ``<speaker>-<chapter>.trans.txt`` per chapter, each line ``<utterance-id> <TRANSCRIPT>``
(upper case, apostrophes kept). The manifest keeps paths and durations (from the FLAC
headers, read with soundfile); audio is read batch by batch during training, as the
corpus (about 960 hours) does not fit in memory. A manifest may read its audio another way
(``read``: a TensorFlow run reads the FLAC bytes from tensorflow-datasets' records,
reference/tfds_builders/librispeech.py); ``audio(i)`` is the one way the reference reads it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np
import soundfile as sf

from trainmark.errors import UserError

SAMPLE_RATE = 16000
TRAIN_SUBSETS = ("train-clean-100", "train-clean-360", "train-other-500")   # the full 960 h
EVAL_SUBSET = "dev-clean"
ALPHABET = "_ 'abcdefghijklmnopqrstuvwxyz"   # index 0 is the CTC blank
HOW_TO_GET = ("download train-clean-100, train-clean-360, train-other-500 and dev-clean from "
              "https://www.openslr.org/12 (CC BY 4.0), extract them so that LibriSpeech/<subset>/ exists, "
              "and pass --data-dir LibriSpeech (or set $TRAINMARK_LIBRISPEECH)")


@dataclass
class Manifest:
    paths: list[Path]          # each utterance's FLAC file (empty when ``read`` reads the audio)
    transcripts: list[str]     # lower case
    samples: np.ndarray        # int64, audio length of each utterance
    read: Callable[[int], np.ndarray] | None = None   # utterance index -> float32 samples, instead of paths

    def __len__(self) -> int:
        return len(self.samples)

    def audio(self, i: int) -> np.ndarray:
        """float32 samples in [-1, 1] of utterance ``i``."""
        return self.read(i) if self.read else read_audio(self.paths[i])


def encode(text: str) -> list[int]:
    """Character ids (blank excluded) of a transcript; characters outside the alphabet are an error."""
    index = {c: i for i, c in enumerate(ALPHABET)}
    try:
        return [index[c] for c in text.lower()]
    except KeyError as exc:
        raise ValueError(f"character {exc.args[0]!r} is not in the LibriSpeech alphabet") from None


def decode(ids: list[int]) -> str:
    return "".join(ALPHABET[i] for i in ids if i > 0)


def read_subset(root: Path, subset: str) -> Manifest:
    """Every utterance of ``root/subset`` in sorted id order; a UserError says what is missing."""
    folder = root / subset
    if not folder.is_dir():
        raise UserError(f"LibriSpeech subset {folder} not found: {HOW_TO_GET}")
    paths, texts, samples = [], [], []
    for trans in sorted(folder.glob("*/*/*.trans.txt")):
        for line in trans.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            utt, _, text = line.partition(" ")
            audio = trans.parent / f"{utt}.flac"
            try:
                info = sf.info(str(audio))
            except (sf.LibsndfileError, RuntimeError, OSError) as exc:
                raise UserError(f"{audio}: cannot read ({exc})") from None
            if info.samplerate != SAMPLE_RATE:
                raise UserError(f"{audio}: {info.samplerate} Hz, LibriSpeech is {SAMPLE_RATE} Hz")
            paths.append(audio)
            texts.append(text.strip().lower())
            samples.append(info.frames)
    if not paths:
        raise UserError(f"no transcripts (*/*/*.trans.txt) under {folder}: {HOW_TO_GET}")
    return Manifest(paths, texts, np.asarray(samples, dtype=np.int64))


def read_audio(source: Path | BinaryIO) -> np.ndarray:
    """float32 samples in [-1, 1] of one mono FLAC file (a path, or the file's bytes as a binary stream)."""
    wave, _ = sf.read(source if hasattr(source, "read") else str(source), dtype="float32", always_2d=True)
    return wave[:, 0]


def concat(manifests: list[Manifest]) -> Manifest:
    """One manifest of several, in order; the audio of each utterance is read as its own manifest reads it."""
    if not any(m.read for m in manifests):
        return Manifest([p for m in manifests for p in m.paths], [t for m in manifests for t in m.transcripts],
                        np.concatenate([m.samples for m in manifests]))
    starts = np.cumsum([0, *(len(m) for m in manifests)])

    def read(i: int) -> np.ndarray:
        k = int(np.searchsorted(starts, i, side="right")) - 1
        return manifests[k].audio(i - int(starts[k]))
    return Manifest([], [t for m in manifests for t in m.transcripts], np.concatenate([m.samples for m in manifests]),
                    read)
