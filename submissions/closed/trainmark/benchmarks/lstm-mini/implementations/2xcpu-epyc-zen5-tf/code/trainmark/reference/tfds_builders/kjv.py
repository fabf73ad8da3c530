"""lstm-mini's King James Bible as a tensorflow-datasets dataset, built from the local files the rules pin.

No tfds builder holds this corpus: it is prepared here (``trainmark data prepare lstm-mini``), one verse
per line in PTB format. This builder reads the prepared folder as tfds's manual-download folder,
checks both files against the rules' SHA-256 (``trainmark.reference.tfds_builders.pinned``) and writes
one example per line, the line's text as it is (a ``Text`` feature), in file order
(``disable_shuffling``), splits ``train`` and ``validation``.

The vocabulary and the token ids are not stored: ``load`` makes them from the lines read back with
``text_corpus``'s own ``build_vocab`` and ``encode``, so the corpus equals ``text_corpus.load``'s,
token for token (a test proves it). A line's tokens are its words and one ``<eos>``, as in
``text_corpus.lines``, which reads a file and so cannot take lines read back from tfds;
``text_corpus.py`` itself is left byte-identical because the released reference code (and the
example submissions' records) hash it.

Imports TensorFlow: only the TensorFlow backend imports this module.
"""
from __future__ import annotations

from pathlib import Path

import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402

from trainmark.errors import UserError  # noqa: E402
from trainmark.reference import kjv, text_corpus  # noqa: E402
from trainmark.reference.lstm import LSTMMini  # noqa: E402
from trainmark.reference.tfds_builders import pinned  # noqa: E402

SPLITS = {"train": kjv.TRAIN_FILE, "validation": kjv.VALID_FILE}


def config_for(files: dict[str, str | None]) -> pinned.PinnedFiles:
    return pinned.config_for(files, "lstm-mini's KJV", tuple(SPLITS.values()))


class TrainmarkKjv(tfds.core.GeneratorBasedBuilder):
    """The prepared KJV's two PTB-format files, read from a local folder, one example per line, in file order."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "kjv.train.txt and kjv.valid.txt, checked against the rules' SHA-256"}
    MANUAL_DOWNLOAD_INSTRUCTIONS = HOW_TO_GET = LSTMMini.how_to_get

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="The King James Bible (public domain), word level: lower-cased verses, one per line, "
                        "tokens split by single spaces; every 10th chapter in canonical order is the "
                        "validation split.",
            features=tfds.features.FeaturesDict({"text": tfds.features.Text()}),
            homepage="https://tracker.debian.org/pkg/bible-kjv",
            disable_shuffling=True,
        )

    def _split_generators(self, dl_manager):
        folder = pinned.checked_folder(self, dl_manager)
        return {split: self._generate_examples(folder / name) for split, name in SPLITS.items()}

    def _generate_examples(self, path: Path):
        # the lines as text_corpus.lines reads them (UTF-8, universal newlines), without the line break
        try:
            with open(path, encoding="utf-8") as f:
                lines = [line.removesuffix("\n") for line in f]
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: cannot read text corpus ({exc})") from None
        for index, line in enumerate(lines):
            yield index, {"text": line}


def load(folder: Path, files: dict[str, str | None], vocab_size: int | None,
         data_dir: Path | None = None) -> text_corpus.Corpus:
    """The rules' KJV through tfds: built once into ``data_dir`` (or $TRAINMARK_TFDS_DIR, or data/tfds),
    then read back whole, as ``text_corpus.load(folder / kjv.train.txt, folder / kjv.valid.txt,
    vocab_size)`` returns it."""
    builder = pinned.prepared(TrainmarkKjv, folder, config_for(files), data_dir)
    train, valid = ([line.split() + [text_corpus.EOS] for line in pinned.text(pinned.whole_split(builder, s)["text"])]
                    for s in SPLITS)
    vocab = text_corpus.build_vocab(train, vocab_size)
    return text_corpus.Corpus(vocab, text_corpus.encode(train, vocab), text_corpus.encode(valid, vocab))
