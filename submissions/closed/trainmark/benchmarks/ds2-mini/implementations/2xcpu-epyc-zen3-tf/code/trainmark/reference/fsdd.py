"""Free Spoken Digit Dataset (FSDD) as connected-digit utterances: the ds2-mini data.

FSDD (Jakobovski/free-spoken-digit-dataset, CC BY-SA 4.0): 3,000 WAV recordings, 8 kHz mono,
``{digit}_{speaker}_{index}.wav``, 6 speakers x 10 digits x 50 takes. Its own split holds takes
0-4 of every speaker and digit out for testing (300 recordings); takes 5-49 train (2,700).

``prepare`` packs the recordings into one PCM file plus an index, and fixes the evaluation
set: 300 utterances of 3-6 held-out recordings, joined by 50-150 ms of silence with a random
gain per recording (seed below). Training utterances are drawn the same way from the training
recordings, fresh every epoch. All of it is read with soundfile; nothing is resampled.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

from trainmark.errors import UserError

SAMPLE_RATE = 8000
HELD_OUT_TAKES = range(0, 5)           # FSDD README, Usage: "Recordings numbered 0-4 (inclusive) are in the test"
DIGITS_PER_UTTERANCE = (3, 6)          # inclusive range
GAP_MS = (50, 150)                     # silence before, between and after the digits
GAIN_DB = (-6.0, 6.0)                  # per-recording gain, uniform in dB
EVAL_UTTERANCES = 300
# fixes the evaluation utterances; another value changes fsdd.eval.tsv and its checksum
EVAL_SEED = 0
PCM_FILE, INDEX_FILE, EVAL_FILE = "fsdd.pcm", "fsdd.index.tsv", "fsdd.eval.tsv"
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
HOW_TO_GET = ("clone https://github.com/Jakobovski/free-spoken-digit-dataset (CC BY-SA 4.0) and run "
              "`trainmark data prepare ds2-mini --source free-spoken-digit-dataset`")

_NAME = re.compile(r"^(\d)_([A-Za-z]+)_(\d+)\.wav$")


@dataclass
class Recordings:
    audio: np.ndarray          # int16, every recording back to back
    offset: np.ndarray         # int64 [R] start of each recording in ``audio``
    length: np.ndarray         # int64 [R]
    digit: np.ndarray          # int64 [R]
    held_out: np.ndarray       # bool [R]
    names: list[str]

    def wave(self, i: int) -> np.ndarray:
        return self.audio[self.offset[i]:self.offset[i] + self.length[i]]


@dataclass
class Utterance:
    recordings: list[int]      # indices into Recordings
    gaps: list[int]            # samples of silence: before, between, after (len = recordings + 1)
    gains: list[float]         # linear gain per recording

    def samples(self, rec: Recordings) -> int:
        return int(sum(self.gaps) + sum(int(rec.length[i]) for i in self.recordings))

    def render(self, rec: Recordings) -> np.ndarray:
        parts = [np.zeros(self.gaps[0], np.float32)]
        for i, gain, gap in zip(self.recordings, self.gains, self.gaps[1:]):
            parts.append(rec.wave(i).astype(np.float32) * (gain / 32768.0))
            parts.append(np.zeros(gap, np.float32))
        return np.clip(np.concatenate(parts), -1.0, 1.0)

    def transcript(self, rec: Recordings) -> str:
        return " ".join(WORDS[int(rec.digit[i])] for i in self.recordings)


def find_recordings(source: Path) -> list[Path]:
    """The WAV files of an FSDD checkout (``recordings/`` below it, or the folder itself)."""
    folder = source / "recordings" if (source / "recordings").is_dir() else source
    files = [p for p in folder.glob("*.wav") if _NAME.match(p.name)]
    if not files:
        raise UserError(f"no FSDD recordings ({{digit}}_{{speaker}}_{{index}}.wav) in {folder}: {HOW_TO_GET}")
    return sorted(files, key=_sort_key)


def _sort_key(path: Path):
    digit, speaker, take = _NAME.match(path.name).groups()
    return int(digit), speaker, int(take)


def _below(rand, n: int) -> int:
    """A uniform integer in [0, n) from a uniform float (guarding against a rounded-up ``n``)."""
    return min(int(rand(0, n)), n - 1)


def draw_utterance(pool: np.ndarray, rand) -> Utterance:
    """One utterance from recording indices ``pool``; ``rand(lo, hi)`` returns a uniform float."""
    lo, hi = DIGITS_PER_UTTERANCE
    k = lo + _below(rand, hi - lo + 1)
    picks = [int(pool[_below(rand, len(pool))]) for _ in range(k)]
    gaps = [int(rand(*GAP_MS) * SAMPLE_RATE / 1000) for _ in range(k + 1)]
    gains = [float(10 ** (rand(*GAIN_DB) / 20)) for _ in range(k)]
    return Utterance(picks, gaps, gains)


def prepare(out_dir: Path, source: Path) -> list[Path]:
    """Pack an FSDD checkout into ``out_dir`` (PCM, index, evaluation utterances); return the files."""
    pcm, rows = [], []
    offset = 0
    for path in find_recordings(Path(source)):
        try:
            wave, rate = sf.read(path, dtype="int16", always_2d=True)
        except (sf.LibsndfileError, RuntimeError, OSError) as exc:
            raise UserError(f"{path}: cannot read ({exc})") from None
        if rate != SAMPLE_RATE or wave.shape[1] != 1:
            raise UserError(f"{path}: {rate} Hz x {wave.shape[1]} channels, FSDD is {SAMPLE_RATE} Hz mono")
        digit, speaker, take = _NAME.match(path.name).groups()
        split = "eval" if int(take) in HELD_OUT_TAKES else "train"
        rows.append(f"{path.name}\t{digit}\t{speaker}\t{take}\t{split}\t{offset}\t{len(wave)}\n")
        pcm.append(wave[:, 0].astype("<i2").tobytes())
        offset += len(wave)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PCM_FILE).write_bytes(b"".join(pcm))
    (out_dir / INDEX_FILE).write_text("name\tdigit\tspeaker\ttake\tsplit\toffset\tlength\n" + "".join(rows),
                                      encoding="utf-8")
    rec = read_index(out_dir)
    rng = np.random.default_rng(EVAL_SEED)
    pool = np.flatnonzero(rec.held_out)
    lines = []
    for _ in range(EVAL_UTTERANCES):
        u = draw_utterance(pool, lambda lo, hi: rng.uniform(lo, hi))
        lines.append("\t".join((",".join(rec.names[i] for i in u.recordings), ",".join(map(str, u.gaps)),
                                ",".join(f"{g:.4f}" for g in u.gains))) + "\n")
    (out_dir / EVAL_FILE).write_text("recordings\tgaps\tgains\n" + "".join(lines), encoding="utf-8")
    return [out_dir / PCM_FILE, out_dir / INDEX_FILE, out_dir / EVAL_FILE]


def read_index(folder: Path, audio: np.ndarray | None = None) -> Recordings:
    rows = [ln.split("\t") for ln in (folder / INDEX_FILE).read_text(encoding="utf-8").splitlines()[1:]]
    if audio is None:
        audio = np.zeros(0, np.int16)
    return Recordings(audio=audio, offset=np.array([int(r[5]) for r in rows], np.int64),
                      length=np.array([int(r[6]) for r in rows], np.int64),
                      digit=np.array([int(r[1]) for r in rows], np.int64),
                      held_out=np.array([r[4] == "eval" for r in rows]), names=[r[0] for r in rows])


@dataclass
class FSDDData:
    recordings: Recordings
    train_pool: np.ndarray          # indices of training recordings
    eval_utterances: list[Utterance]


def load(folder: Path) -> FSDDData:
    """Read a prepared folder (``trainmark data prepare ds2-mini``)."""
    for name in (PCM_FILE, INDEX_FILE, EVAL_FILE):
        if not (folder / name).is_file():
            raise UserError(f"ds2-mini: {folder / name} missing: {HOW_TO_GET}")
    audio = np.fromfile(folder / PCM_FILE, dtype="<i2")
    rec = read_index(folder, audio)
    if len(rec.offset) == 0 or rec.offset[-1] + rec.length[-1] != len(audio):
        raise UserError(f"ds2-mini: {folder / PCM_FILE} does not match {INDEX_FILE}: prepare the folder again")
    by_name = {n: i for i, n in enumerate(rec.names)}
    utterances = []
    for line in (folder / EVAL_FILE).read_text(encoding="utf-8").splitlines()[1:]:
        names, gaps, gains = line.split("\t")
        utterances.append(Utterance([by_name[n] for n in names.split(",")], [int(g) for g in gaps.split(",")],
                                    [float(g) for g in gains.split(",")]))
    return FSDDData(rec, np.flatnonzero(~rec.held_out), utterances)


def torch_rand(generator: torch.Generator):
    """``rand(lo, hi)`` drawing from a torch generator (the harness's per-trial one)."""
    return lambda lo, hi: lo + (hi - lo) * float(torch.rand((), generator=generator, dtype=torch.float64))
