"""ds2-mini's Free Spoken Digit Dataset as a tensorflow-datasets dataset, built from the files the rules pin.

tfds's own ``spoken_digit`` builder downloads FSDD's archive of WAV files and has no evaluation
utterances; ds2-mini's data is FSDD packed by ``trainmark data prepare ds2-mini`` (``fsdd.pcm``,
``fsdd.index.tsv``, ``fsdd.eval.tsv``). This builder reads the prepared folder as tfds's
manual-download folder, checks the three files against the rules' SHA-256
(``trainmark.reference.tfds_builders.pinned``), reads them with ``fsdd.load`` and writes one example
per recording, in the index's order (``disable_shuffling``), into one split, ``recordings``: the
8 kHz int16 samples, the digit, the speaker, the file name and whether the take is held out for
evaluation (FSDD's own split, takes 0-4). The samples are an int16 ``Tensor`` stored as raw bytes:
tfds's ``Audio`` feature would store them as tf.Example's int64 list, 2.8 times the space (58 MB
against the 21 MB of fsdd.pcm).

The 300 evaluation utterances are no recordings: they are the fixed evaluation set, a part of the
data, so they are stored in the built dataset's metadata (``metadata.json``: each utterance's
recording names, silences and gains, as ``fsdd.load`` parsed them). A built dataset is then
everything a trial reads, as for Fashion-MNIST: the folder is read only to build it.

Imports TensorFlow: only the TensorFlow backend imports this module.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402

from trainmark.errors import UserError  # noqa: E402
from trainmark.reference import fsdd  # noqa: E402
from trainmark.reference.tfds_builders import pinned  # noqa: E402

SPLIT = "recordings"
EVAL_KEY = "eval_utterances"    # the metadata entry: [[recording names], [gaps], [gains]] per utterance


def config_for(files: dict[str, str | None]) -> pinned.PinnedFiles:
    return pinned.config_for(files, "ds2-mini's FSDD", (fsdd.PCM_FILE, fsdd.INDEX_FILE, fsdd.EVAL_FILE))


class TrainmarkFsdd(tfds.core.GeneratorBasedBuilder):
    """FSDD's recordings as ds2-mini packs them, in index order; the evaluation utterances in the metadata."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "fsdd.pcm, fsdd.index.tsv and fsdd.eval.tsv, checked against the rules' SHA-256"}
    MANUAL_DOWNLOAD_INSTRUCTIONS = HOW_TO_GET = fsdd.HOW_TO_GET

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="Free Spoken Digit Dataset (Jakobovski et al.): 8 kHz mono recordings of the digits "
                        "0-9, {digit}_{speaker}_{take}.wav; takes 0-4 are held out for evaluation. The "
                        "metadata holds ds2-mini's fixed evaluation utterances (3-6 held-out recordings each).",
            features=tfds.features.FeaturesDict({
                # int16 samples as raw bytes (Audio stores them as tf.Example's int64 list: 2.8 times the space)
                "audio": tfds.features.Tensor(shape=(None,), dtype=np.int16, encoding=tfds.features.Encoding.BYTES,
                                              doc=f"int16 samples at {fsdd.SAMPLE_RATE} Hz, mono"),
                "digit": tfds.features.ClassLabel(names=list(fsdd.WORDS)),
                "speaker": tfds.features.Text(),
                "name": tfds.features.Text(),
                "held_out": tfds.features.Scalar(dtype=np.bool_),
            }),
            supervised_keys=("audio", "digit"),
            homepage="https://github.com/Jakobovski/free-spoken-digit-dataset",
            license="CC BY-SA 4.0",
            metadata=tfds.core.MetadataDict(),
            disable_shuffling=True,
        )

    def _split_generators(self, dl_manager):
        folder = pinned.checked_folder(self, dl_manager)
        data = fsdd.load(folder)
        rec = data.recordings
        if not np.array_equal(rec.offset, np.cumsum(rec.length) - rec.length):
            # the recordings are stored one by one and read back end to end: they must be packed so
            raise UserError(f"ds2-mini: {folder / fsdd.PCM_FILE} is not packed as {fsdd.INDEX_FILE} says: "
                            "prepare the folder again")
        self.info.metadata[EVAL_KEY] = [[[rec.names[i] for i in u.recordings], u.gaps, u.gains]
                                        for u in data.eval_utterances]
        return {SPLIT: self._generate_examples(rec)}

    def _generate_examples(self, rec: fsdd.Recordings):
        for i, name in enumerate(rec.names):
            yield i, {"audio": rec.wave(i), "digit": int(rec.digit[i]), "speaker": name.split("_")[1],
                      "name": name, "held_out": bool(rec.held_out[i])}


def load(folder: Path, files: dict[str, str | None], data_dir: Path | None = None) -> fsdd.FSDDData:
    """The rules' FSDD through tfds: built once into ``data_dir`` (or $TRAINMARK_TFDS_DIR, or data/tfds),
    then read back whole, as ``fsdd.load(folder)`` returns it (the recordings back to back, in index order)."""
    builder = pinned.prepared(TrainmarkFsdd, folder, config_for(files), data_dir)
    waves, digits, held_out, names = [], [], [], []
    for example in pinned.examples(builder, SPLIT):
        waves.append(example["audio"])
        digits.append(example["digit"])
        held_out.append(example["held_out"])
        names.append(example["name"].decode("utf-8"))
    length = np.array([len(w) for w in waves], np.int64)
    rec = fsdd.Recordings(audio=np.concatenate([np.zeros(0, np.int16), *waves]).astype(np.int16),
                          offset=np.cumsum(length) - length, length=length, digit=np.array(digits, np.int64),
                          held_out=np.array(held_out, bool), names=names)
    by_name = {n: i for i, n in enumerate(names)}
    utterances = [fsdd.Utterance([by_name[n] for n in recs], [int(g) for g in gaps], [float(g) for g in gains])
                  for recs, gaps, gains in builder.info.metadata[EVAL_KEY]]
    return fsdd.FSDDData(rec, np.flatnonzero(~rec.held_out), utterances)
