"""transformer-mini's KJV -> WEB verse pairs as a tensorflow-datasets dataset, built from the files the rules pin.

No tfds builder holds this corpus: it is prepared here (``trainmark data prepare transformer-mini``).
This builder reads the prepared folder as tfds's manual-download folder, checks all five files against
the rules' SHA-256 (``trainmark.reference.tfds_builders.pinned``) and writes one example per verse pair
with tfds's ``Translation`` feature (languages ``kjv`` and ``web``, as tfds's WMT builders do), in
line order (``disable_shuffling``), splits ``train`` and ``validation``.

The subword model (``spm.model``) is no example: it is the vocabulary, which tfds keeps with a
dataset (a ``Text`` encoder's vocabulary file, for instance), so it is stored in the built dataset's
metadata (``metadata.json``, base64), checked like the texts when the dataset is built. A built
dataset is then everything a trial reads, as for Fashion-MNIST: the folder is read only to build it.

``load`` encodes and filters the lines read back exactly as ``parallel_text.load`` does
(``translation.encoded_corpus``; a test proves the corpora equal, field by field).

Imports TensorFlow: only the TensorFlow backend imports this module.
"""
from __future__ import annotations

import base64
from pathlib import Path

import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402

from trainmark.errors import UserError  # noqa: E402
from trainmark.reference import bible_parallel, parallel_text  # noqa: E402
from trainmark.reference.tfds_builders import pinned  # noqa: E402
from trainmark.reference.tfds_builders.translation import encoded_corpus  # noqa: E402
from trainmark.reference.transformer import TransformerMini  # noqa: E402

LANGUAGES = ("kjv", "web")                      # source, target: the files' suffixes
SPLITS = {"train": bible_parallel.FILES["train"], "validation": bible_parallel.FILES["valid"]}
MODEL_KEY = "spm_model_base64"                  # the metadata entry holding spm.model


def config_for(files: dict[str, str | None]) -> pinned.PinnedFiles:
    needed = (*SPLITS["train"], *SPLITS["validation"], parallel_text.SPM_FILE)
    return pinned.config_for(files, "transformer-mini's KJV -> WEB pairs", needed)


class TrainmarkBibleParallel(tfds.core.GeneratorBasedBuilder):
    """KJV -> WEB verse pairs, read from a local folder, in line order; the subword model in the metadata."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "train/valid .kjv/.web and spm.model, checked against the rules' SHA-256"}
    MANUAL_DOWNLOAD_INSTRUCTIONS = HOW_TO_GET = TransformerMini.how_to_get

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="Verse pairs of the King James Bible (1611/1769) and the World English Bible (2015), "
                        "both public domain, of at most 16 words on each side; every 20th chapter in canonical "
                        "order is the validation split. The joint sentencepiece model is in the metadata.",
            features=tfds.features.Translation(languages=LANGUAGES),
            supervised_keys=LANGUAGES,
            homepage="https://crosswire.org/sword/",
            metadata=tfds.core.MetadataDict(),
            disable_shuffling=True,
        )

    def _split_generators(self, dl_manager):
        import sentencepiece as spm

        folder = pinned.checked_folder(self, dl_manager)
        model = (folder / parallel_text.SPM_FILE).read_bytes()
        try:
            spm.SentencePieceProcessor(model_proto=model)
        except RuntimeError as exc:
            raise UserError(f"{folder / parallel_text.SPM_FILE}: not a sentencepiece model ({exc})") from None
        self.info.metadata[MODEL_KEY] = base64.b64encode(model).decode("ascii")
        return {split: self._generate_examples(*parallel_text.read_pair(folder / src, folder / tgt))
                for split, (src, tgt) in SPLITS.items()}

    def _generate_examples(self, src: list[str], tgt: list[str]):
        for index, pair in enumerate(zip(src, tgt)):
            yield index, dict(zip(LANGUAGES, pair))


def load(folder: Path, files: dict[str, str | None], max_tokens: int, how_to_get: str,
         data_dir: Path | None = None) -> parallel_text.ParallelCorpus:
    """The rules' verse pairs through tfds: built once into ``data_dir`` (or $TRAINMARK_TFDS_DIR, or
    data/tfds), then read back whole, as ``parallel_text.load(folder, train_files, valid_files,
    max_tokens, how_to_get)`` returns them (training pairs longer than ``max_tokens`` subwords on a
    side, or empty, are skipped)."""
    builder = pinned.prepared(TrainmarkBibleParallel, folder, config_for(files), data_dir, how_to_get)
    split = {name: pinned.whole_split(builder, name) for name in SPLITS}
    src, tgt = (pinned.text(split["train"][lang]) for lang in LANGUAGES)
    vsrc, vtgt = (pinned.text(split["validation"][lang]) for lang in LANGUAGES)
    return encoded_corpus(base64.b64decode(builder.info.metadata[MODEL_KEY]), src, tgt, vsrc, vtgt, max_tokens)
